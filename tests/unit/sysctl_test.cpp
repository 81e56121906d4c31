#include "linux/sysctl.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <fstream>

#include "capability.hpp"
#include "child_process.hpp"
#include "common/error.hpp"

namespace {

crx::spec::Linux with(std::initializer_list<const char*> namespaces,
                      std::map<std::string, std::string> sysctl) {
  crx::spec::Linux l;
  for (const char* type : namespaces) {
    crx::spec::Namespace ns;
    ns.type = type;
    l.namespaces.push_back(ns);
  }
  l.sysctl = std::move(sysctl);
  return l;
}

std::string error_of(const crx::spec::Linux& l) {
  try {
    crx::linux_::validate_sysctls(l);
  } catch (const crx::Error& e) {
    return e.what();
  }
  return "ok";
}

TEST(Sysctl, PathsForBothKeyStyles) {
  EXPECT_EQ(crx::linux_::sysctl_path("net.ipv4.ip_forward"), "/proc/sys/net/ipv4/ip_forward");
  EXPECT_EQ(crx::linux_::sysctl_path("net/ipv4/conf/eth0.100/forwarding"),
            "/proc/sys/net/ipv4/conf/eth0.100/forwarding");
  EXPECT_EQ(crx::linux_::sysctl_dotted("net/ipv4/conf/eth0.100/forwarding"),
            "net.ipv4.conf.eth0/100.forwarding");
  EXPECT_EQ(crx::linux_::sysctl_dotted("kernel.shmmax"), "kernel.shmmax");
}

TEST(Sysctl, NamespacedKeysNeedTheirNamespace) {
  EXPECT_EQ(error_of(with({"ipc"}, {{"kernel.shmmax", "1"}, {"fs.mqueue.msg_max", "10"}})), "ok");
  EXPECT_EQ(error_of(with({}, {{"kernel.shmmax", "1"}})),
            "sysctl \"kernel.shmmax\" is not allowed in the host's ipc namespace");
  EXPECT_EQ(error_of(with({"network"}, {{"net.ipv4.ip_forward", "1"}})), "ok");
  EXPECT_EQ(error_of(with({"network"}, {{"net/ipv4/conf/eth0.100/forwarding", "1"}})), "ok");
  EXPECT_EQ(error_of(with({"ipc"}, {{"net.ipv4.ip_forward", "1"}})),
            "sysctl \"net.ipv4.ip_forward\" is not allowed in the host's network namespace");
  EXPECT_EQ(error_of(with({"uts"}, {{"kernel.domainname", "example.org"}})), "ok");
  EXPECT_EQ(error_of(with({"uts"}, {{"kernel.hostname", "h"}})),
            "sysctl \"kernel.hostname\" is not allowed: it conflicts with the OCI \"hostname\" "
            "field");
  EXPECT_EQ(error_of(with({"ipc", "network", "uts"}, {{"vm.swappiness", "1"}})),
            "sysctl \"vm.swappiness\" is not in a separate kernel namespace");
  EXPECT_EQ(error_of(with({"network"}, {{"net/../../etc", "1"}})),
            "sysctl \"net/../../etc\" is not a valid key");
}

TEST(Sysctl, JoiningCrxsOwnNetworkNamespaceCountsAsTheHosts) {
  auto l = with({"network"}, {{"net.ipv4.ip_forward", "1"}});
  l.namespaces[0].path = "/proc/self/ns/net";
  EXPECT_EQ(error_of(l),
            "sysctl \"net.ipv4.ip_forward\" is not allowed in the host's network namespace");
}

// Puts this (child) process in an ipc namespace of its own whose sysctls
// it may write. Unsharing one takes CAP_SYS_ADMIN; writing its sysctls
// takes being the uid that owns them (the kernel checks the uid, not a
// capability): 0, or the root of the user namespace that owns the ipc
// namespace. Without CAP_SYS_ADMIN as uid 0, this uid becomes root of a
// user namespace of its own.
bool own_ipc_namespace() {
  if (::geteuid() == 0 && crx::test::has_capability(CAP_SYS_ADMIN))
    return ::unshare(CLONE_NEWIPC) == 0;
  const std::string map = "0 " + std::to_string(::geteuid()) + " 1";
  if (::unshare(CLONE_NEWUSER) != 0) return false;
  std::ofstream("/proc/self/uid_map") << map;
  return ::unshare(CLONE_NEWIPC) == 0;
}

TEST(Sysctl, AppliesValuesInTheChildsIpcNamespace) {
  const std::string out = crx::test::in_child([] {
    if (!own_ipc_namespace()) return std::string("skip");
    crx::linux_::apply_sysctls({{"kernel.shmmni", "1234"}});
    std::ifstream in("/proc/sys/kernel/shmmni");
    std::string v;
    in >> v;
    return v;
  });
  if (out == "skip") GTEST_SKIP() << "needs CAP_SYS_ADMIN as uid 0, or user namespaces";
  EXPECT_EQ(out, "1234");
  const std::string bad = crx::test::in_child([] {
    crx::linux_::apply_sysctls({{"kernel.no_such_key", "1"}});
    return std::string("applied");
  });
  EXPECT_EQ(bad.rfind("error: sysctl \"kernel.no_such_key\": open /proc/sys/kernel/no_such_key", 0),
            0u)
      << bad;
}

}  // namespace
