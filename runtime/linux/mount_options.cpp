#include "linux/mount_options.hpp"

#include <sys/mount.h>

#include <map>

#include "common/error.hpp"

namespace crx::mounts {

namespace {

struct FlagOption {
  bool clear;  // true: the option turns the flag off
  unsigned long flag;
};

const std::map<std::string, FlagOption>& flag_options() {
  static const std::map<std::string, FlagOption> table = {
      {"ro", {false, MS_RDONLY}},          {"rw", {true, MS_RDONLY}},
      {"nosuid", {false, MS_NOSUID}},      {"suid", {true, MS_NOSUID}},
      {"nodev", {false, MS_NODEV}},        {"dev", {true, MS_NODEV}},
      {"noexec", {false, MS_NOEXEC}},      {"exec", {true, MS_NOEXEC}},
      {"sync", {false, MS_SYNCHRONOUS}},   {"async", {true, MS_SYNCHRONOUS}},
      {"dirsync", {false, MS_DIRSYNC}},    {"remount", {false, MS_REMOUNT}},
      {"mand", {false, MS_MANDLOCK}},      {"nomand", {true, MS_MANDLOCK}},
      {"noatime", {false, MS_NOATIME}},    {"atime", {true, MS_NOATIME}},
      {"nodiratime", {false, MS_NODIRATIME}}, {"diratime", {true, MS_NODIRATIME}},
      {"relatime", {false, MS_RELATIME}},  {"norelatime", {true, MS_RELATIME}},
      {"strictatime", {false, MS_STRICTATIME}}, {"nostrictatime", {true, MS_STRICTATIME}},
  };
  return table;
}

const std::map<std::string, unsigned long>& propagation_options() {
  static const std::map<std::string, unsigned long> table = {
      {"private", MS_PRIVATE},    {"rprivate", MS_PRIVATE | MS_REC},
      {"shared", MS_SHARED},      {"rshared", MS_SHARED | MS_REC},
      {"slave", MS_SLAVE},        {"rslave", MS_SLAVE | MS_REC},
      {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
  };
  return table;
}

}  // namespace

MountOptions parse_mount_options(const std::vector<std::string>& options) {
  MountOptions out;
  for (const auto& opt : options) {
    if (opt == "bind" || opt == "rbind") {
      out.bind = true;
      out.recursive = out.recursive || opt == "rbind";
      continue;
    }
    if (auto it = flag_options().find(opt); it != flag_options().end()) {
      if (it->second.clear) {
        out.flags &= ~it->second.flag;
        out.clear_flags |= it->second.flag;
      } else {
        out.flags |= it->second.flag;
        out.clear_flags &= ~it->second.flag;
      }
      continue;
    }
    if (auto it = propagation_options().find(opt); it != propagation_options().end()) {
      out.propagation.push_back(it->second);
      continue;
    }
    if (opt == "tmpcopyup" || opt == "rro" || opt == "rrw") continue;  // accepted, no effect here
    if (!out.data.empty()) out.data += ",";
    out.data += opt;
  }
  return out;
}

unsigned long propagation_flags(const std::string& value) {
  if (value.empty()) return MS_SLAVE | MS_REC;
  auto it = propagation_options().find(value);
  if (it == propagation_options().end())
    throw Error("unknown rootfsPropagation \"" + value + "\"");
  return it->second;
}

}  // namespace crx::mounts
