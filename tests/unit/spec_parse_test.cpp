// A config.json using every field crx reads parses into the expected values.
#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>

#include "spec_test_util.hpp"

namespace {

using crx::spec::parse_spec;

const char* kFullConfig = R"({
  "ociVersion": "1.1.0",
  "process": {
    "terminal": true,
    "consoleSize": {"height": 25, "width": 80},
    "user": {"uid": 1000, "gid": 100, "umask": 18, "additionalGids": [5, 6]},
    "args": ["/bin/sh", "-c", "true"],
    "env": ["PATH=/bin", "EMPTY="],
    "cwd": "/work",
    "capabilities": {
      "bounding": ["CAP_SYS_ADMIN", "CAP_KILL"],
      "effective": ["CAP_KILL"],
      "inheritable": [],
      "permitted": ["CAP_KILL", "CAP_NET_RAW"],
      "ambient": ["CAP_CHECKPOINT_RESTORE"]
    },
    "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 1024, "hard": 4096},
                {"type": "RLIMIT_CORE", "soft": 0, "hard": 18446744073709551615}],
    "noNewPrivileges": true,
    "apparmorProfile": "crx-default",
    "oomScoreAdj": -500,
    "selinuxLabel": "system_u:system_r:container_t:s0"
  },
  "root": {"path": "rootfs", "readonly": true},
  "hostname": "box",
  "domainname": "example.org",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "data", "type": "bind", "source": "/srv/data", "options": ["rbind", "ro"]}
  ],
  "hooks": {
    "prestart": [{"path": "/bin/pre"}],
    "createRuntime": [{"path": "/bin/cr", "args": ["cr", "x"], "env": ["A=1"], "timeout": 5}],
    "createContainer": [{"path": "/bin/cc"}],
    "startContainer": [{"path": "/bin/sc"}],
    "poststart": [{"path": "/bin/ps1"}, {"path": "/bin/ps2"}],
    "poststop": [{"path": "/bin/stop"}]
  },
  "annotations": {"org.example.key": "value"},
  "linux": {
    "namespaces": [
      {"type": "pid"}, {"type": "network", "path": "/var/run/netns/x"}, {"type": "mount"},
      {"type": "ipc"}, {"type": "uts"}, {"type": "user"}, {"type": "cgroup"}, {"type": "time"}
    ],
    "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
    "gidMappings": [{"containerID": 0, "hostID": 200000, "size": 65536}],
    "devices": [
      {"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229, "fileMode": 438, "uid": 0, "gid": 0},
      {"path": "/dev/fifo", "type": "p"}
    ],
    "cgroupsPath": "/crx/box",
    "resources": {
      "devices": [{"allow": false, "access": "rwm"},
                  {"allow": true, "type": "c", "major": 10, "minor": 229, "access": "rw"}],
      "memory": {"limit": 536870912, "reservation": 268435456, "swap": -1, "swappiness": 10,
                 "disableOOMKiller": true},
      "cpu": {"shares": 512, "quota": 50000, "period": 100000, "cpus": "0-1", "mems": "0", "idle": 0},
      "pids": {"limit": 64},
      "blockIO": {"weight": 500, "weightDevice": [{"major": 8, "minor": 0, "weight": 300}],
                  "throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 1048576}],
                  "throttleWriteIOPSDevice": [{"major": 8, "minor": 16, "rate": 100}]},
      "hugepageLimits": [{"pageSize": "2MB", "limit": 4194304}],
      "unified": {"memory.high": "400000000"}
    },
    "rootfsPropagation": "rslave",
    "maskedPaths": ["/proc/kcore"],
    "readonlyPaths": ["/proc/sys"],
    "mountLabel": "system_u:object_r:container_file_t:s0",
    "sysctl": {"net.ipv4.ip_forward": "1", "kernel.shmmax": "1000000", "fs.mqueue.msg_max": "20"},
    "seccomp": {
      "defaultAction": "SCMP_ACT_ERRNO",
      "defaultErrnoRet": 1,
      "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_AARCH64"],
      "flags": ["SECCOMP_FILTER_FLAG_LOG"],
      "listenerPath": "/run/seccomp.sock",
      "listenerMetadata": "meta",
      "syscalls": [
        {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
         "args": [{"index": 0, "value": 8, "op": "SCMP_CMP_EQ"},
                  {"index": 1, "value": 255, "valueTwo": 4, "op": "SCMP_CMP_MASKED_EQ"}]},
        {"names": ["mkdir"], "action": "SCMP_ACT_NOTIFY"},
        {"names": ["chmod"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}
      ]
    },
    "intelRdt": {"closID": "guaranteed"},
    "timeOffsets": {"monotonic": {"secs": 3600, "nanosecs": 5}, "boottime": {"secs": -10}}
  },
  "unknownFutureField": {"is": "ignored"}
})";

class FullConfig : public ::testing::Test {
 protected:
  nlohmann::json doc = nlohmann::json::parse(kFullConfig);
  crx::spec::Spec spec = parse_spec(doc);
};

TEST_F(FullConfig, TopLevel) {
  EXPECT_EQ(spec.oci_version, "1.1.0");
  EXPECT_EQ(spec.root.path, "rootfs");
  EXPECT_TRUE(spec.root.readonly);
  EXPECT_EQ(spec.hostname, "box");
  EXPECT_EQ(spec.domainname, "example.org");
  EXPECT_EQ(spec.annotations.at("org.example.key"), "value");
  EXPECT_EQ(spec.raw, doc);
}

TEST_F(FullConfig, Process) {
  const auto& p = spec.process;
  EXPECT_TRUE(p.terminal);
  ASSERT_TRUE(p.console_size);
  EXPECT_EQ(p.console_size->height, 25u);
  EXPECT_EQ(p.console_size->width, 80u);
  EXPECT_EQ(p.user.uid, 1000u);
  EXPECT_EQ(p.user.gid, 100u);
  EXPECT_EQ(p.user.umask, 18u);
  EXPECT_EQ(p.user.additional_gids, (std::vector<uint32_t>{5, 6}));
  EXPECT_EQ(p.args, (std::vector<std::string>{"/bin/sh", "-c", "true"}));
  EXPECT_EQ(p.env, (std::vector<std::string>{"PATH=/bin", "EMPTY="}));
  EXPECT_EQ(p.cwd, "/work");
  EXPECT_TRUE(p.no_new_privileges);
  EXPECT_EQ(p.apparmor_profile, "crx-default");
  EXPECT_EQ(p.oom_score_adj, -500);
  EXPECT_EQ(p.selinux_label, "system_u:system_r:container_t:s0");
}

TEST_F(FullConfig, CapabilitiesResolveToNumbers) {
  ASSERT_TRUE(spec.process.capabilities);
  const auto& c = *spec.process.capabilities;
  EXPECT_EQ(c.bounding, (std::vector<int>{CAP_SYS_ADMIN, CAP_KILL}));
  EXPECT_EQ(c.effective, (std::vector<int>{CAP_KILL}));
  EXPECT_TRUE(c.inheritable.empty());
  EXPECT_EQ(c.permitted, (std::vector<int>{CAP_KILL, CAP_NET_RAW}));
  EXPECT_EQ(c.ambient, (std::vector<int>{40}));  // CAP_CHECKPOINT_RESTORE
}

TEST_F(FullConfig, RlimitsResolveToNumbers) {
  ASSERT_EQ(spec.process.rlimits.size(), 2u);
  EXPECT_EQ(spec.process.rlimits[0].resource, RLIMIT_NOFILE);
  EXPECT_EQ(spec.process.rlimits[0].type, "RLIMIT_NOFILE");
  EXPECT_EQ(spec.process.rlimits[0].soft, 1024u);
  EXPECT_EQ(spec.process.rlimits[0].hard, 4096u);
  EXPECT_EQ(spec.process.rlimits[1].resource, RLIMIT_CORE);
  EXPECT_EQ(spec.process.rlimits[1].hard, UINT64_MAX);
}

TEST_F(FullConfig, MountsWithRelativeDestinationMadeAbsolute) {
  ASSERT_EQ(spec.mounts.size(), 2u);
  EXPECT_EQ(spec.mounts[0].destination, "/proc");
  EXPECT_EQ(spec.mounts[0].type, "proc");
  EXPECT_TRUE(spec.mounts[0].options.empty());
  EXPECT_EQ(spec.mounts[1].destination, "/data");
  EXPECT_EQ(spec.mounts[1].source, "/srv/data");
  EXPECT_EQ(spec.mounts[1].options, (std::vector<std::string>{"rbind", "ro"}));
}

TEST_F(FullConfig, AllSixHookKinds) {
  const auto& h = spec.hooks;
  EXPECT_FALSE(h.empty());
  ASSERT_EQ(h.prestart.size(), 1u);
  EXPECT_EQ(h.prestart[0].path, "/bin/pre");
  EXPECT_FALSE(h.prestart[0].timeout);
  ASSERT_EQ(h.create_runtime.size(), 1u);
  EXPECT_EQ(h.create_runtime[0].args, (std::vector<std::string>{"cr", "x"}));
  EXPECT_EQ(h.create_runtime[0].env, (std::vector<std::string>{"A=1"}));
  EXPECT_EQ(h.create_runtime[0].timeout, 5);
  EXPECT_EQ(h.create_container.at(0).path, "/bin/cc");
  EXPECT_EQ(h.start_container.at(0).path, "/bin/sc");
  ASSERT_EQ(h.poststart.size(), 2u);
  EXPECT_EQ(h.poststart[1].path, "/bin/ps2");
  EXPECT_EQ(h.poststop.at(0).path, "/bin/stop");
}

TEST_F(FullConfig, NamespacesCarryCloneFlags) {
  const auto& l = spec.linux;
  ASSERT_EQ(l.namespaces.size(), 8u);
  EXPECT_EQ(l.find_namespace("pid")->clone_flag, CLONE_NEWPID);
  EXPECT_EQ(l.find_namespace("network")->clone_flag, CLONE_NEWNET);
  EXPECT_EQ(l.find_namespace("network")->path, "/var/run/netns/x");
  EXPECT_EQ(l.find_namespace("mount")->clone_flag, CLONE_NEWNS);
  EXPECT_EQ(l.find_namespace("ipc")->clone_flag, CLONE_NEWIPC);
  EXPECT_EQ(l.find_namespace("uts")->clone_flag, CLONE_NEWUTS);
  EXPECT_EQ(l.find_namespace("user")->clone_flag, CLONE_NEWUSER);
  EXPECT_EQ(l.find_namespace("cgroup")->clone_flag, CLONE_NEWCGROUP);
  EXPECT_EQ(l.find_namespace("time")->clone_flag, 0x80);  // CLONE_NEWTIME
  EXPECT_TRUE(l.find_namespace("pid")->path.empty());
}

TEST_F(FullConfig, IdMappingsAndDevices) {
  const auto& l = spec.linux;
  ASSERT_EQ(l.uid_mappings.size(), 1u);
  EXPECT_EQ(l.uid_mappings[0].container_id, 0u);
  EXPECT_EQ(l.uid_mappings[0].host_id, 100000u);
  EXPECT_EQ(l.uid_mappings[0].size, 65536u);
  EXPECT_EQ(l.gid_mappings.at(0).host_id, 200000u);
  ASSERT_EQ(l.devices.size(), 2u);
  EXPECT_EQ(l.devices[0].path, "/dev/fuse");
  EXPECT_EQ(l.devices[0].type, 'c');
  EXPECT_EQ(l.devices[0].major, 10);
  EXPECT_EQ(l.devices[0].minor, 229);
  EXPECT_EQ(l.devices[0].file_mode, 0666u);
  EXPECT_EQ(l.devices[0].uid, 0u);
  EXPECT_EQ(l.devices[1].type, 'p');
  EXPECT_FALSE(l.devices[1].file_mode);
}

TEST_F(FullConfig, Resources) {
  ASSERT_TRUE(spec.linux.resources);
  const auto& r = *spec.linux.resources;
  EXPECT_EQ(spec.linux.cgroups_path, "/crx/box");
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_FALSE(r.devices[0].allow);
  EXPECT_EQ(r.devices[0].type, "a");
  EXPECT_FALSE(r.devices[0].major);
  EXPECT_TRUE(r.devices[1].allow);
  EXPECT_EQ(r.devices[1].type, "c");
  EXPECT_EQ(r.devices[1].major, 10);
  EXPECT_EQ(r.devices[1].access, "rw");
  ASSERT_TRUE(r.memory);
  EXPECT_EQ(r.memory->limit, 536870912);
  EXPECT_EQ(r.memory->reservation, 268435456);
  EXPECT_EQ(r.memory->swap, -1);
  EXPECT_EQ(r.memory->swappiness, 10u);
  EXPECT_EQ(r.memory->disable_oom_killer, true);
  EXPECT_FALSE(r.memory->kernel);
  ASSERT_TRUE(r.cpu);
  EXPECT_EQ(r.cpu->shares, 512u);
  EXPECT_EQ(r.cpu->quota, 50000);
  EXPECT_EQ(r.cpu->period, 100000u);
  EXPECT_EQ(r.cpu->cpus, "0-1");
  EXPECT_EQ(r.cpu->mems, "0");
  EXPECT_EQ(r.cpu->idle, 0);
  EXPECT_FALSE(r.cpu->burst);
  EXPECT_EQ(r.pids_limit, 64);
  ASSERT_TRUE(r.block_io);
  EXPECT_EQ(r.block_io->weight, 500);
  ASSERT_EQ(r.block_io->weight_device.size(), 1u);
  EXPECT_EQ(r.block_io->weight_device[0].weight, 300);
  ASSERT_EQ(r.block_io->throttle_read_bps_device.size(), 1u);
  EXPECT_EQ(r.block_io->throttle_read_bps_device[0].rate, 1048576u);
  EXPECT_EQ(r.block_io->throttle_write_iops_device.at(0).minor, 16);
  EXPECT_TRUE(r.block_io->throttle_write_bps_device.empty());
  ASSERT_EQ(r.hugepage_limits.size(), 1u);
  EXPECT_EQ(r.hugepage_limits[0].page_size, "2MB");
  EXPECT_EQ(r.hugepage_limits[0].limit, 4194304u);
  EXPECT_EQ(r.unified.at("memory.high"), "400000000");
}

TEST_F(FullConfig, LinuxMisc) {
  const auto& l = spec.linux;
  EXPECT_EQ(l.rootfs_propagation, "rslave");
  EXPECT_EQ(l.masked_paths, (std::vector<std::string>{"/proc/kcore"}));
  EXPECT_EQ(l.readonly_paths, (std::vector<std::string>{"/proc/sys"}));
  EXPECT_EQ(l.mount_label, "system_u:object_r:container_file_t:s0");
  EXPECT_EQ(l.sysctl.size(), 3u);
  EXPECT_EQ(l.sysctl.at("net.ipv4.ip_forward"), "1");
  EXPECT_EQ(l.intel_rdt_clos, "guaranteed");
  EXPECT_EQ(l.time_offsets.at("monotonic"), (std::pair<int64_t, uint32_t>{3600, 5}));
  EXPECT_EQ(l.time_offsets.at("boottime"), (std::pair<int64_t, uint32_t>{-10, 0}));
}

TEST_F(FullConfig, Seccomp) {
  ASSERT_TRUE(spec.linux.seccomp);
  const auto& s = *spec.linux.seccomp;
  EXPECT_EQ(s.default_action, "SCMP_ACT_ERRNO");
  EXPECT_EQ(s.default_errno_ret, 1u);
  EXPECT_EQ(s.architectures,
            (std::vector<std::string>{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_AARCH64"}));
  EXPECT_EQ(s.flags, (std::vector<std::string>{"SECCOMP_FILTER_FLAG_LOG"}));
  EXPECT_EQ(s.listener_path, "/run/seccomp.sock");
  EXPECT_EQ(s.listener_metadata, "meta");
  ASSERT_EQ(s.syscalls.size(), 4u);
  EXPECT_EQ(s.syscalls[0].names, (std::vector<std::string>{"read", "write"}));
  EXPECT_EQ(s.syscalls[0].action, "SCMP_ACT_ALLOW");
  EXPECT_FALSE(s.syscalls[0].errno_ret);
  ASSERT_EQ(s.syscalls[1].args.size(), 2u);
  EXPECT_EQ(s.syscalls[1].args[0].index, 0u);
  EXPECT_EQ(s.syscalls[1].args[0].value, 8u);
  EXPECT_EQ(s.syscalls[1].args[0].op, "SCMP_CMP_EQ");
  EXPECT_EQ(s.syscalls[1].args[1].value_two, 4u);
  EXPECT_EQ(s.syscalls[1].args[1].op, "SCMP_CMP_MASKED_EQ");
  EXPECT_EQ(s.syscalls[3].errno_ret, 13u);
}

TEST(SpecParse, MinimalConfigHasDefaults) {
  auto spec = parse_spec(spec_test::minimal_config());
  EXPECT_FALSE(spec.process.terminal);
  EXPECT_EQ(spec.process.user.uid, 0u);
  EXPECT_FALSE(spec.process.user.umask);
  EXPECT_FALSE(spec.process.capabilities);
  EXPECT_FALSE(spec.root.readonly);
  EXPECT_TRUE(spec.hooks.empty());
  EXPECT_FALSE(spec.linux.resources);
  EXPECT_FALSE(spec.linux.seccomp);
  EXPECT_EQ(spec.linux.find_namespace("pid"), nullptr);
}

TEST(SpecParse, NullMembersCountAsAbsent) {
  // Go marshals nil slices as null; runc and containerd read that as absent.
  auto doc = spec_test::minimal_config();
  doc["process"]["env"] = nullptr;
  doc["mounts"] = nullptr;
  doc["linux"]["resources"] = nullptr;
  auto spec = parse_spec(doc);
  EXPECT_TRUE(spec.process.env.empty());
  EXPECT_TRUE(spec.mounts.empty());
  EXPECT_FALSE(spec.linux.resources);
}

TEST(SpecParse, UserNamespaceJoinedByPathNeedsNoMappings) {
  auto doc = spec_test::minimal_config();
  doc["linux"]["namespaces"].push_back({{"type", "user"}, {"path", "/proc/1/ns/user"}});
  EXPECT_NO_THROW(parse_spec(doc));
}

TEST(SpecParse, ParseProcessAlone) {
  auto p = crx::spec::parse_process(nlohmann::json::parse(
      R"({"args": ["ls"], "cwd": "/tmp", "env": ["A=b"], "user": {"uid": 7, "gid": 8}})"));
  EXPECT_EQ(p.args, (std::vector<std::string>{"ls"}));
  EXPECT_EQ(p.cwd, "/tmp");
  EXPECT_EQ(p.user.uid, 7u);
  EXPECT_EQ(p.user.gid, 8u);
}

TEST(SpecParse, ParseResourcesAlone) {
  auto r = crx::spec::parse_resources(
      nlohmann::json::parse(R"({"memory": {"limit": 1048576}, "pids": {"limit": -1}})"));
  ASSERT_TRUE(r.memory);
  EXPECT_EQ(r.memory->limit, 1048576);
  EXPECT_EQ(r.pids_limit, -1);
  EXPECT_FALSE(r.cpu);
}

}  // namespace
