// Configs that real callers produce parse: containerd 1.6's default spec
// (`ctr oci spec`, plus the args a container always has) and runc 1.1's
// `runc spec`, both captured from the Debian packages on this machine.
#include "spec_test_util.hpp"

namespace {

const char* kContainerdDefault =
    R"J({"ociVersion": "1.0.2-dev", "process": {"user": {"uid": 0, "gid": 0}, "cwd": "/", )J"
    R"J("capabilities": {"bounding": ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", )J"
    R"J("CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", )J"
    R"J("CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", )J"
    R"J("CAP_AUDIT_WRITE"], "effective": ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", )J"
    R"J("CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", )J"
    R"J("CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", )J"
    R"J("CAP_AUDIT_WRITE"], "permitted": ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", )J"
    R"J("CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", )J"
    R"J("CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", )J"
    R"J("CAP_AUDIT_WRITE"]}, "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, )J"
    R"J("soft": 1024}], "noNewPrivileges": true, "args": ["sh"]}, "root": {"path": "rootfs"}, )J"
    R"J("mounts": [{"destination": "/proc", "type": "proc", "source": "proc", )J"
    R"J("options": ["nosuid", "noexec", "nodev"]}, {"destination": "/dev", "type": "tmpfs", )J"
    R"J("source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}, )J"
    R"J({"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", )J"
    R"J("noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]}, )J"
    R"J({"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", )J"
    R"J("noexec", "nodev", "mode=1777", "size=65536k"]}, {"destination": "/dev/mqueue", )J"
    R"J("type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]}, )J"
    R"J({"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", )J"
    R"J("noexec", "nodev", "ro"]}, {"destination": "/run", "type": "tmpfs", "source": "tmpfs", )J"
    R"J("options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}], )J"
    R"J("linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]}, )J"
    R"J("cgroupsPath": "/default", "namespaces": [{"type": "pid"}, {"type": "ipc"}, )J"
    R"J({"type": "uts"}, {"type": "mount"}, {"type": "network"}], "maskedPaths": ["/proc/acpi", )J"
    R"J("/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", )J"
    R"J("/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"], )J"
    R"J("readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", )J"
    R"J("/proc/sysrq-trigger"]}})J";

const char* kRuncSpec =
    R"J({"ociVersion": "1.0.2-dev", "process": {"terminal": true, "user": {"uid": 0, "gid": 0}, )J"
    R"J("args": ["sh"], )J"
    R"J("env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", )J"
    R"J("TERM=xterm"], "cwd": "/", "capabilities": {"bounding": ["CAP_AUDIT_WRITE", "CAP_KILL", )J"
    R"J("CAP_NET_BIND_SERVICE"], "effective": ["CAP_AUDIT_WRITE", "CAP_KILL", )J"
    R"J("CAP_NET_BIND_SERVICE"], "permitted": ["CAP_AUDIT_WRITE", "CAP_KILL", )J"
    R"J("CAP_NET_BIND_SERVICE"], "ambient": ["CAP_AUDIT_WRITE", "CAP_KILL", )J"
    R"J("CAP_NET_BIND_SERVICE"]}, "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, )J"
    R"J("soft": 1024}], "noNewPrivileges": true}, "root": {"path": "rootfs", "readonly": true}, )J"
    R"J("hostname": "runc", "mounts": [{"destination": "/proc", "type": "proc", )J"
    R"J("source": "proc"}, {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", )J"
    R"J("options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}, )J"
    R"J({"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", )J"
    R"J("noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]}, )J"
    R"J({"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", )J"
    R"J("noexec", "nodev", "mode=1777", "size=65536k"]}, {"destination": "/dev/mqueue", )J"
    R"J("type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]}, )J"
    R"J({"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", )J"
    R"J("noexec", "nodev", "ro"]}, {"destination": "/sys/fs/cgroup", "type": "cgroup", )J"
    R"J("source": "cgroup", "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]}], )J"
    R"J("linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]}, )J"
    R"J("namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, )J"
    R"J({"type": "mount"}], "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", )J"
    R"J("/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", )J"
    R"J("/proc/sched_debug", "/sys/firmware", "/proc/scsi"], "readonlyPaths": ["/proc/bus", )J"
    R"J("/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]}})J";

TEST(SpecCompat, ContainerdDefaultSpec) {
  auto spec = crx::spec::parse_spec(nlohmann::json::parse(kContainerdDefault));
  EXPECT_EQ(spec.oci_version, "1.0.2-dev");
  EXPECT_EQ(spec.linux.cgroups_path, "/default");
  EXPECT_EQ(spec.linux.namespaces.size(), 5u);
  ASSERT_TRUE(spec.process.capabilities);
  EXPECT_EQ(spec.process.capabilities->bounding.size(), 14u);
  EXPECT_TRUE(spec.process.capabilities->ambient.empty());
  EXPECT_EQ(spec.mounts.size(), 7u);
}

TEST(SpecCompat, RuncSpecOutput) {
  auto spec = crx::spec::parse_spec(nlohmann::json::parse(kRuncSpec));
  EXPECT_EQ(spec.hostname, "runc");
  EXPECT_EQ(spec.process.args, (std::vector<std::string>{"sh"}));
  EXPECT_EQ(spec.linux.masked_paths.size(), 10u);
}

TEST(SpecCompat, CrxSpecMatchesRuncSpecApartFromNamedDifferences) {
  // crx spec = runc spec with crx's version and hostname and the cgroup
  // namespace newer runc adds.
  auto runc = nlohmann::json::parse(kRuncSpec);
  auto crx = crx::spec::default_spec(false);
  runc["ociVersion"] = crx["ociVersion"];
  runc["hostname"] = "crx";
  runc["linux"]["namespaces"].push_back({{"type", "cgroup"}});
  EXPECT_EQ(crx, runc) << nlohmann::json::diff(runc, crx).dump();
}

}  // namespace
