// Every kind of bad config.json gives one line that names the JSON path.
#include "spec/seccomp_names.hpp"
#include "spec_test_util.hpp"

namespace {

using spec_test::error_with;
using spec_test::minimal_config;
using spec_test::parse_error;

TEST(SpecErrors, MinimalConfigIsValid) { EXPECT_EQ(parse_error(minimal_config()), ""); }

TEST(SpecErrors, TopLevelMustBeAnObject) {
  EXPECT_EQ(parse_error(nlohmann::json::array()), "config.json: expected object, got array");
}

TEST(SpecErrors, RequiredFields) {
  EXPECT_EQ(error_with(R"({"ociVersion": null})"),
            "config.json: .ociVersion: required field missing");
  EXPECT_EQ(error_with(R"({"root": null})"), "config.json: .root: required field missing");
  EXPECT_EQ(error_with(R"({"root": {"path": null}})"),
            "config.json: .root.path: required field missing");
  EXPECT_EQ(error_with(R"({"process": null})"), "config.json: .process: required field missing");
  EXPECT_EQ(error_with(R"({"process": {"args": null}})"),
            "config.json: .process.args: required field missing");
  EXPECT_EQ(error_with(R"({"process": {"cwd": null}})"),
            "config.json: .process.cwd: required field missing");
  EXPECT_EQ(error_with(R"({"mounts": [{"type": "tmpfs"}]})"),
            "config.json: .mounts[0].destination: required field missing");
  EXPECT_EQ(error_with(R"({"hooks": {"poststop": [{"args": []}]}})"),
            "config.json: .hooks.poststop[0].path: required field missing");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"path": "/x"}]}})"),
            "config.json: .linux.namespaces[0].type: required field missing");
}

TEST(SpecErrors, WrongJsonTypes) {
  EXPECT_EQ(error_with(R"({"ociVersion": 1})"),
            "config.json: .ociVersion: expected string, got number");
  EXPECT_EQ(error_with(R"({"process": {"args": "sh"}})"),
            "config.json: .process.args: expected array, got string");
  EXPECT_EQ(error_with(R"({"process": {"args": ["sh", 3]}})"),
            "config.json: .process.args[1]: expected string, got number");
  EXPECT_EQ(error_with(R"({"process": {"terminal": "yes"}})"),
            "config.json: .process.terminal: expected boolean, got string");
  EXPECT_EQ(error_with(R"({"process": {"user": {"uid": "0"}}})"),
            "config.json: .process.user.uid: expected integer, got string");
  EXPECT_EQ(error_with(R"({"process": {"user": {"uid": 1.5}}})"),
            "config.json: .process.user.uid: expected integer, got number 1.5");
  EXPECT_EQ(error_with(R"({"process": {"user": {"uid": -1}}})"),
            "config.json: .process.user.uid: expected a non-negative integer, got -1");
  EXPECT_EQ(error_with(R"({"process": {"user": {"gid": 4294967296}}})"),
            "config.json: .process.user.gid: value 4294967296 out of range [0, 4294967295]");
  EXPECT_EQ(error_with(R"({"linux": []})"), "config.json: .linux: expected object, got array");
  EXPECT_EQ(error_with(R"({"annotations": {"a.b": 1}})"),
            "config.json: .annotations[\"a.b\"]: expected string, got number");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"memory": {"limit": "1G"}}}})"),
            "config.json: .linux.resources.memory.limit: expected integer, got string");
}

TEST(SpecErrors, VersionAndRoot) {
  EXPECT_EQ(error_with(R"({"ociVersion": "2.0.0"})"),
            "config.json: .ociVersion: unsupported ociVersion \"2.0.0\" (crx supports "
            "runtime-spec 1.x)");
  EXPECT_EQ(error_with(R"({"root": {"path": ""}})"),
            "config.json: .root.path: root path must not be empty");
}

TEST(SpecErrors, Process) {
  EXPECT_EQ(error_with(R"({"process": {"args": []}})"),
            "config.json: .process.args: args must not be empty");
  EXPECT_EQ(error_with(R"({"process": {"cwd": "work"}})"),
            "config.json: .process.cwd: cwd \"work\" must be an absolute path");
  EXPECT_EQ(error_with(R"({"process": {"env": ["A=1", "NOVALUE"]}})"),
            "config.json: .process.env[1]: invalid environment variable \"NOVALUE\": missing '='");
  EXPECT_EQ(error_with(R"({"process": {"env": ["=1"]}})"),
            "config.json: .process.env[0]: invalid environment variable \"=1\": empty name");
  EXPECT_EQ(error_with(R"({"process": {"oomScoreAdj": 1001}})"),
            "config.json: .process.oomScoreAdj: oomScoreAdj 1001 out of range [-1000, 1000]");
  EXPECT_EQ(error_with(R"({"process": {"user": {"umask": 4096}}})"),
            "config.json: .process.user.umask: umask 4096 is above 0777");
  EXPECT_EQ(error_with(R"({"process": {"consoleSize": {"height": 10}}})"),
            "config.json: .process.consoleSize.width: required field missing");
}

TEST(SpecErrors, UnknownCapability) {
  EXPECT_EQ(error_with(R"({"process": {"capabilities": {"bounding":
              ["CAP_KILL", "CAP_CHOWN", "CAP_SETUID", "CAP_FOO"]}}})"),
            "config.json: .process.capabilities.bounding[3]: unknown capability \"CAP_FOO\"");
  // libcap would take these; runc does not.
  EXPECT_EQ(error_with(R"({"process": {"capabilities": {"ambient": ["cap_kill"]}}})"),
            "config.json: .process.capabilities.ambient[0]: unknown capability \"cap_kill\"");
  EXPECT_EQ(error_with(R"({"process": {"capabilities": {"effective": ["12"]}}})"),
            "config.json: .process.capabilities.effective[0]: unknown capability \"12\"");
}

TEST(SpecErrors, Rlimits) {
  EXPECT_EQ(error_with(R"({"process": {"rlimits": [{"type": "RLIMIT_FOO", "soft": 1, "hard": 1}]}})"),
            "config.json: .process.rlimits[0].type: unknown rlimit type \"RLIMIT_FOO\"");
  EXPECT_EQ(error_with(R"({"process": {"rlimits": [{"type": "RLIMIT_NOFILE", "soft": 1}]}})"),
            "config.json: .process.rlimits[0].hard: required field missing");
  EXPECT_EQ(error_with(R"({"process": {"rlimits": [{"type": "RLIMIT_NOFILE", "soft": 9, "hard": 8}]}})"),
            "config.json: .process.rlimits[0].soft: soft limit 9 is above the hard limit 8");
  EXPECT_EQ(error_with(R"({"process": {"rlimits": [
              {"type": "RLIMIT_NOFILE", "soft": 1, "hard": 1},
              {"type": "RLIMIT_NOFILE", "soft": 2, "hard": 2}]}})"),
            "config.json: .process.rlimits[1]: duplicate rlimit type \"RLIMIT_NOFILE\"");
}

TEST(SpecErrors, Namespaces) {
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "foo"}]}})"),
            "config.json: .linux.namespaces[1].type: unknown namespace type \"foo\"");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "pid"}, {"type": "pid"}]}})"),
            "config.json: .linux.namespaces[1]: duplicate namespace type \"pid\"");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "net", "path": "x"}]}})"),
            "config.json: .linux.namespaces[0].type: unknown namespace type \"net\"");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "network", "path": "run/x"}]}})"),
            "config.json: .linux.namespaces[0].path: namespace path \"run/x\" must be absolute");
}

TEST(SpecErrors, UserNamespaceAndMappings) {
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "user"}]}})"),
            "config.json: .linux.uidMappings: required field missing: a new user namespace "
            "needs uid mappings");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "user"}],
              "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}]}})"),
            "config.json: .linux.gidMappings: required field missing: a new user namespace "
            "needs gid mappings");
  EXPECT_EQ(error_with(R"({"linux": {"gidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}]}})"),
            "config.json: .linux.gidMappings: id mappings are set but .linux.namespaces has no "
            "user namespace");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "user"}],
              "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 0}]}})"),
            "config.json: .linux.uidMappings[0].size: mapping size must be above 0");
}

TEST(SpecErrors, HostnameAndSysctlNeedTheirNamespaces) {
  EXPECT_EQ(error_with(R"({"hostname": "box"})"),
            "config.json: .hostname: setting the hostname needs a uts namespace");
  EXPECT_EQ(error_with(R"({"domainname": "example.org"})"),
            "config.json: .domainname: setting the domainname needs a uts namespace");
  EXPECT_EQ(error_with(R"({"linux": {"sysctl": {"net.ipv4.ip_forward": "1"}}})"),
            "config.json: .linux.sysctl[\"net.ipv4.ip_forward\"]: sysctl needs a network namespace");
  EXPECT_EQ(error_with(R"({"linux": {"sysctl": {"kernel.shmmax": "1"}}})"),
            "config.json: .linux.sysctl[\"kernel.shmmax\"]: sysctl needs an ipc namespace");
  EXPECT_EQ(error_with(R"({"linux": {"sysctl": {"vm.swappiness": "1"}}})"),
            "config.json: .linux.sysctl[\"vm.swappiness\"]: sysctl is not in a separate kernel "
            "namespace");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "uts"}],
              "sysctl": {"kernel.hostname": "x"}}})"),
            "config.json: .linux.sysctl[\"kernel.hostname\"]: sysctl conflicts with .hostname; "
            "set that instead");
  EXPECT_EQ(error_with(R"({"linux": {"sysctl": {"net.core.somaxconn": 1}}})"),
            "config.json: .linux.sysctl[\"net.core.somaxconn\"]: expected string, got number");
}

TEST(SpecErrors, TimeOffsets) {
  EXPECT_EQ(error_with(R"({"linux": {"timeOffsets": {"monotonic": {"secs": 1}}}})"),
            "config.json: .linux.timeOffsets: time offsets need a time namespace in "
            ".linux.namespaces");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "time", "path": "/proc/1/ns/time"}],
              "timeOffsets": {"boottime": {"secs": 1}}}})"),
            "config.json: .linux.timeOffsets: time offsets cannot be set when joining an "
            "existing time namespace");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "time"}],
              "timeOffsets": {"realtime": {"secs": 1}}}})"),
            "config.json: .linux.timeOffsets.realtime: unknown clock \"realtime\" (expected "
            "monotonic or boottime)");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "time"}],
              "timeOffsets": {"monotonic": {"nanosecs": 1000000000}}}})"),
            "config.json: .linux.timeOffsets.monotonic.nanosecs: nanosecs must be below "
            "1000000000");
}

TEST(SpecErrors, MountsHooksPaths) {
  EXPECT_EQ(error_with(R"({"mounts": [{"destination": ""}]})"),
            "config.json: .mounts[0].destination: mount destination must not be empty");
  EXPECT_EQ(error_with(R"({"mounts": [{"destination": "/x", "options": ["ro", 1]}]})"),
            "config.json: .mounts[0].options[1]: expected string, got number");
  EXPECT_EQ(error_with(R"({"mounts": [{"destination": "/x", "uidMappings": []}]})"),
            "config.json: .mounts[0].uidMappings: idmapped mounts are not supported");
  EXPECT_EQ(error_with(R"({"hooks": {"prestart": [{"path": "hook"}]}})"),
            "config.json: .hooks.prestart[0].path: hook path \"hook\" must be absolute");
  EXPECT_EQ(error_with(R"({"hooks": {"createRuntime": [{"path": "/h", "timeout": 0}]}})"),
            "config.json: .hooks.createRuntime[0].timeout: hook timeout must be above 0 seconds");
  EXPECT_EQ(error_with(R"({"linux": {"maskedPaths": ["/proc/kcore", ""]}})"),
            "config.json: .linux.maskedPaths[1]: path must not be empty");
  EXPECT_EQ(error_with(R"({"linux": {"rootfsPropagation": "rshard"}})"),
            "config.json: .linux.rootfsPropagation: unknown rootfsPropagation \"rshard\"");
}

TEST(SpecErrors, Devices) {
  EXPECT_EQ(error_with(R"({"linux": {"devices": [{"path": "/dev/x", "type": "q", "major": 1, "minor": 1}]}})"),
            "config.json: .linux.devices[0].type: unknown device type \"q\" (expected c, b, u or p)");
  EXPECT_EQ(error_with(R"({"linux": {"devices": [{"path": "/dev/x", "type": "c", "major": 1}]}})"),
            "config.json: .linux.devices[0].minor: required field missing");
  EXPECT_EQ(error_with(R"({"linux": {"devices": [{"path": "dev/x", "type": "c", "major": 1, "minor": 1}]}})"),
            "config.json: .linux.devices[0].path: device path \"dev/x\" must be absolute");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"devices": [{"allow": true, "type": "x"}]}}})"),
            "config.json: .linux.resources.devices[0].type: unknown device type \"x\" (expected "
            "a, c or b)");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"devices": [{"access": "rwm"}]}}})"),
            "config.json: .linux.resources.devices[0].allow: required field missing");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"devices": [{"allow": true, "access": "rwx"}]}}})"),
            "config.json: .linux.resources.devices[0].access: invalid device access \"rwx\" "
            "(expected letters of rwm)");
}

TEST(SpecErrors, Resources) {
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"pids": {}}}})"),
            "config.json: .linux.resources.pids.limit: required field missing");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"memory": {"swappiness": 101}}}})"),
            "config.json: .linux.resources.memory.swappiness: swappiness 101 out of range [0, 100]");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"hugepageLimits": [{"pageSize": "2M", "limit": 1}]}}})"),
            "config.json: .linux.resources.hugepageLimits[0].pageSize: invalid hugepage size "
            "\"2M\" (expected e.g. \"2MB\")");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"blockIO": {"weight": 5}}}})"),
            "config.json: .linux.resources.blockIO.weight: weight 5 out of range [10, 1000]");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"blockIO": {"throttleReadBpsDevice": [{"major": 8, "minor": 0}]}}}})"),
            "config.json: .linux.resources.blockIO.throttleReadBpsDevice[0].rate: required field "
            "missing");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"unified": {"../memory.max": "1"}}}})"),
            "config.json: .linux.resources.unified[\"../memory.max\"]: unified key must be a "
            "cgroup file name");
}

TEST(SpecErrors, ResourceValueRules) {
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"memory": {"limit": 200, "swap": 100}}}})"),
            "config.json: .linux.resources.memory.swap: memory+swap limit 100 is below the "
            "memory limit 200");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"memory": {"limit": 200, "swap": -1}}}})"), "");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"cpu": {"cpus": "0-"}}}})"),
            "config.json: .linux.resources.cpu.cpus: invalid cpu list \"0-\" (expected e.g. "
            "\"0-3,8\")");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"cpu": {"mems": "0,,1"}}}})"),
            "config.json: .linux.resources.cpu.mems: invalid memory node list \"0,,1\" "
            "(expected e.g. \"0-3,8\")");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"cpu": {"cpus": "1,"}}}})"),
            "config.json: .linux.resources.cpu.cpus: invalid cpu list \"1,\" (expected e.g. "
            "\"0-3,8\")");
  EXPECT_EQ(error_with(R"({"linux": {"resources": {"cpu": {"cpus": "0-3,8,10-11", "mems": ""}}}})"),
            "");
}

TEST(SpecErrors, IdRangesAndDeviceNumbers) {
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "user"}],
              "uidMappings": [{"containerID": 0, "hostID": 4294967295, "size": 2}],
              "gidMappings": [{"containerID": 0, "hostID": 0, "size": 1}]}})"),
            "config.json: .linux.uidMappings[0].size: mapping range goes past id 4294967295");
  EXPECT_EQ(error_with(R"({"linux": {"devices": [{"path": "/dev/x", "type": "c", "major": -1, "minor": 1}]}})"),
            "config.json: .linux.devices[0].major: device major number must not be negative");
}

TEST(SpecErrors, Seccomp) {
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {}}})"),
            "config.json: .linux.seccomp.defaultAction: required field missing");
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_DENY"}}})"),
            "config.json: .linux.seccomp.defaultAction: unknown seccomp action \"SCMP_ACT_DENY\"");
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW",
              "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_Z80"]}}})"),
            "config.json: .linux.seccomp.architectures[1]: unknown seccomp architecture "
            "\"SCMP_ARCH_Z80\"");
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW",
              "flags": ["SECCOMP_FILTER_FLAG_FAST"]}}})"),
            "config.json: .linux.seccomp.flags[0]: unknown seccomp flag \"SECCOMP_FILTER_FLAG_FAST\"");
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW",
              "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"},
                           {"names": ["write", "frobnicate"], "action": "SCMP_ACT_ERRNO"}]}}})"),
            "config.json: .linux.seccomp.syscalls[1].names[1]: unknown syscall \"frobnicate\"");
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW",
              "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ERRNO",
                            "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_IS"}]}]}}})"),
            "config.json: .linux.seccomp.syscalls[0].args[0].op: unknown seccomp operator "
            "\"SCMP_CMP_IS\"");
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW",
              "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ERRNO",
                            "args": [{"index": 6, "value": 1, "op": "SCMP_CMP_EQ"}]}]}}})"),
            "config.json: .linux.seccomp.syscalls[0].args[0].index: argument index 6 out of "
            "range [0, 5]");
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW",
              "syscalls": [{"names": [], "action": "SCMP_ACT_ALLOW"}]}}})"),
            "config.json: .linux.seccomp.syscalls[0].names: names must not be empty");
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW",
              "syscalls": [{"names": ["read"], "action": "SCMP_ACT_KILL", "errnoRet": 1}]}}})"),
            "config.json: .linux.seccomp.syscalls[0].errnoRet: errnoRet is only valid with "
            "SCMP_ACT_ERRNO or SCMP_ACT_TRACE, not SCMP_ACT_KILL");
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_NOTIFY"}}})"),
            "config.json: .linux.seccomp.defaultAction: SCMP_ACT_NOTIFY cannot be the default "
            "action");
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW",
              "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_NOTIFY"}]}}})"),
            "config.json: .linux.seccomp: SCMP_ACT_NOTIFY is used but listenerPath is not set");
}

TEST(SpecErrors, SeccompAcceptsOtherArchSyscallsAndNewerOnes) {
  // Docker's default profile lists syscalls of other architectures and
  // syscalls newer than libseccomp; only unknown names are errors.
  EXPECT_EQ(error_with(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ERRNO",
              "syscalls": [{"names": ["arm_fadvise64_64", "socketcall", "mseal", "clone3"],
                            "action": "SCMP_ACT_ALLOW"}]}}})"),
            "");
}

TEST(SpecErrors, SyscallsOnlyNewerKernelsKnowAreMarkedForTheFilterBuilder) {
  EXPECT_TRUE(crx::spec::syscall_unknown_to_libseccomp("mseal"));
  EXPECT_FALSE(crx::spec::syscall_unknown_to_libseccomp("read"));
  EXPECT_FALSE(crx::spec::syscall_unknown_to_libseccomp("frobnicate"));
}

TEST(SpecErrors, SysctlSlashFormFollowsTheSameRules) {
  EXPECT_EQ(error_with(R"({"linux": {"sysctl": {"net/ipv4/conf/eth0.100/forwarding": "1"}}})"),
            "config.json: .linux.sysctl[\"net/ipv4/conf/eth0.100/forwarding\"]: sysctl needs a "
            "network namespace");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "network"}],
              "sysctl": {"net/ipv4/conf/eth0.100/forwarding": "1"}}})"),
            "");
  EXPECT_EQ(error_with(R"({"linux": {"namespaces": [{"type": "ipc"}],
              "sysctl": {"kernel/shmmax": "1"}}})"),
            "");
}

TEST(SpecErrors, IntegersBuiltInCodeAreSigned) {
  // nlohmann stores integers assigned in code as signed; both forms work.
  auto doc = minimal_config();
  doc["process"]["user"] = {{"uid", 5}, {"gid", 0}};
  EXPECT_EQ(parse_error(doc), "");
  doc["process"]["user"]["uid"] = -5;
  EXPECT_EQ(parse_error(doc),
            "config.json: .process.user.uid: expected a non-negative integer, got -5");
}

TEST(SpecErrors, ErrorsAreOneLine) {
  auto msg = error_with(R"({"annotations": {"a\nb": 1}})");
  EXPECT_FALSE(msg.empty());
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(SpecErrors, ParseProcessAndResourcesNameTheirSource) {
  try {
    crx::spec::parse_process(nlohmann::json::parse(R"({"args": ["x"], "cwd": "rel"})"));
    FAIL() << "no error";
  } catch (const crx::Error& e) {
    EXPECT_STREQ(e.what(), "process.json: .cwd: cwd \"rel\" must be an absolute path");
  }
  try {
    crx::spec::parse_resources(nlohmann::json::parse(R"({"cpu": {"shares": -2}})"), "stdin");
    FAIL() << "no error";
  } catch (const crx::Error& e) {
    EXPECT_STREQ(e.what(), "stdin: .cpu.shares: expected a non-negative integer, got -2");
  }
}

// runc parity (issue 15): what runc refuses without a mount namespace, and
// its intelRdt checks; a relative masked path is read from "/", as runc.
TEST(SpecErrors, WithoutAMountNamespace) {
  auto no_mount = [](const char* patch) {
    auto doc = spec_test::minimal_config();
    doc["linux"]["namespaces"] = nlohmann::json::array();
    doc.merge_patch(nlohmann::json::parse(patch));
    return parse_error(doc);
  };
  EXPECT_EQ(no_mount("{}"), "");
  EXPECT_EQ(no_mount(R"({"root": {"readonly": true}})"), "");
  EXPECT_EQ(no_mount(R"({"linux": {"maskedPaths": ["/proc/kcore"]}})"),
            "config.json: .linux.maskedPaths: needs a mount namespace in .linux.namespaces "
            "(runc: unable to restrict sys entries without a private MNT namespace)");
  EXPECT_EQ(no_mount(R"({"linux": {"readonlyPaths": ["/proc/sys"]}})"),
            "config.json: .linux.readonlyPaths: needs a mount namespace in .linux.namespaces "
            "(runc: unable to restrict sys entries without a private MNT namespace)");
  EXPECT_EQ(no_mount(R"({"linux": {"rootfsPropagation": "rshared"}})"),
            "config.json: .linux.rootfsPropagation: needs a mount namespace in "
            ".linux.namespaces: it would change the propagation of the caller's \"/\"");
}

TEST(SpecErrors, IntelRdtClosId) {
  EXPECT_EQ(error_with(R"({"linux": {"intelRdt": {"closID": "a/b"}}})"),
            "config.json: .linux.intelRdt.closID: invalid intelRdt.ClosID \"a/b\"");
  EXPECT_EQ(error_with(R"({"linux": {"intelRdt": {"closID": ".."}}})"),
            "config.json: .linux.intelRdt.closID: invalid intelRdt.ClosID \"..\"");
  EXPECT_EQ(error_with(R"({"linux": {"intelRdt": {"closID": "guaranteed"}}})"), "");
}

TEST(SpecErrors, RelativeMaskedPathIsFromTheRoot) {
  auto doc = spec_test::minimal_config();
  doc["linux"]["maskedPaths"] = {"proc/keys"};
  doc["linux"]["readonlyPaths"] = {"proc/sys"};
  auto s = crx::spec::parse_spec(doc);
  EXPECT_EQ(s.linux.masked_paths, std::vector<std::string>{"/proc/keys"});
  EXPECT_EQ(s.linux.readonly_paths, std::vector<std::string>{"/proc/sys"});
}

}  // namespace
