// crx features: the runtime-spec "features" document, true to what crx does.
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"
#include "linux/capabilities.hpp"

namespace crx::cmd {

namespace {

nlohmann::json features() {
  nlohmann::json caps = nlohmann::json::array();
  for (int c = 0; c <= linux_::last_capability(); ++c) caps.push_back(linux_::capability_name(c));
  return {
      {"ociVersionMin", "1.0.0"},
      {"ociVersionMax", "1.1.0"},
      {"hooks", {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}},
      {"mountOptions",
       {"async", "atime", "bind", "dev", "diratime", "dirsync", "exec", "mand", "noatime", "nodev",
        "nodiratime", "noexec", "nomand", "norelatime", "nostrictatime", "nosuid", "private", "rbind",
        "relatime", "remount", "ro", "rprivate", "rshared", "rslave", "runbindable", "rw", "shared",
        "slave", "strictatime", "suid", "sync", "unbindable"}},
      {"linux",
       {{"namespaces", {"cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts"}},
        {"capabilities", caps},
        {"cgroup", {{"v1", true}, {"v2", true}, {"systemd", false}, {"systemdUser", false}, {"rdma", false}}},
        {"seccomp",
         {{"enabled", true},
          {"actions",
           {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
            "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_NOTIFY", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP"}},
          {"operators",
           {"SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ",
            "SCMP_CMP_NE"}},
          {"archs",
           {"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM", "SCMP_ARCH_X32", "SCMP_ARCH_X86", "SCMP_ARCH_X86_64"}},
          {"knownFlags", {"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW"}},
          {"supportedFlags", {"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW"}}}},
        {"apparmor", {{"enabled", false}}},
        {"selinux", {{"enabled", false}}},
        {"intelRdt", {{"enabled", false}}},
        {"mountExtensions", {{"idmap", {{"enabled", false}}}}}}},
      {"annotations", {{"org.crx.checkpoint.enabled", "true"}, {"org.crx.migrate.enabled", "true"}}},
  };
}

}  // namespace

void register_features(Cli& cli) {
  auto* sub = add_command(cli, "features");
  sub->callback([&cli] {
    cli.action = [] {
      std::printf("%s\n", features().dump(4).c_str());
      return 0;
    };
  });
}

}  // namespace crx::cmd
