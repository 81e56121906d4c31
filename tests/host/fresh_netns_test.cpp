// checkpoint/fresh_netns.hpp against the host kernel's real namespaces: a
// namespace crx makes is as a new one, and every kind of configuration
// CRIU's network dump would carry makes it differ.
#include "checkpoint/fresh_netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "harness.hpp"

namespace crx::test {
namespace {

using checkpoint::fingerprint_difference;
using checkpoint::fresh_netns_fingerprint;
using checkpoint::netns_fingerprint;

// A network namespace of its own, held by an fd of this process.
UniqueFd new_netns() {
  UniqueFd fd;
  checkpoint::in_netns(-1, [&] {
    fd = UniqueFd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!fd) throw_errno("opening the new network namespace");
  });
  return fd;
}

// Runs a shell command in the namespace fd refers to.
Result in_ns(const UniqueFd& fd, const std::string& command) {
  return run_sh("nsenter --net=/proc/" + std::to_string(::getpid()) + "/fd/" +
                std::to_string(fd.get()) + " sh -c " + shell_quoted(command));
}

TEST(FreshNetns, TwoNewNamespacesAreAlike) {
  CRX_REQUIRE_ROOT();
  // Nothing in a new namespace may differ from one to the next (a counter,
  // a random key): else no container would ever count as fresh.
  std::string a = fresh_netns_fingerprint(), b = fresh_netns_fingerprint();
  EXPECT_EQ(fingerprint_difference(a, b), std::nullopt) << *fingerprint_difference(a, b);
  EXPECT_NE(a.find("link lo"), std::string::npos) << a;
  EXPECT_NE(a.find("sysctl net/ipv4/ip_forward = "), std::string::npos) << a;
}

TEST(FreshNetns, ACrxContainersOwnNamespaceIsFresh) {
  CRX_REQUIRE_ROOT();
  std::string fresh = fresh_netns_fingerprint();
  std::string id;
  {
    Running c;
    id = c.id;
    auto cmp = checkpoint::compare_netns_with_fresh(init_pid(c.id), fresh);
    EXPECT_EQ(cmp.config_difference, std::nullopt) << *cmp.config_difference;
    EXPECT_TRUE(cmp.changed_sysctls.empty());
    // Configured (as a CNI plugin would, from the host): not any more.
    auto r = run_sh("nsenter -t " + std::to_string(init_pid(c.id)) + " -n ip link set lo up");
    ASSERT_EQ(r.status, 0) << r.err;
    cmp = checkpoint::compare_netns_with_fresh(init_pid(c.id), fresh);
    ASSERT_TRUE(cmp.config_difference.has_value());
    EXPECT_NE(cmp.config_difference->find("127.0.0.1"), std::string::npos)
        << *cmp.config_difference;
  }
  expect_nothing_left(id);
}

// Each kind of thing CRIU's network dump saves with its tools, as a
// command that makes one in a namespace.
struct ConfigCase {
  const char* command;
  const char* seen;  // in the fingerprint
  bool announced;    // by an rtnetlink or nftables notification
};
constexpr ConfigCase kConfigCases[] = {
    {"ip link set lo up", "link lo", true},
    {"ip link set lo mtu 1280", "mtu 1280", true},
    {"ip addr add 10.9.8.7/32 dev lo", "10.9.8.7", true},
    {"ip link add crx-veth0 type veth peer name crx-veth1", "crx-veth0", true},
    {"ip rule add from 10.1.2.3 table 7", "10.1.2.3", true},
    {"ip link set lo up && ip route add 10.5.0.0/16 dev lo table 9", "10.5.0.0", true},
    {"sysctl -qw net.ipv4.tcp_keepalive_time=1234", "tcp_keepalive_time", false},
    {"iptables-nft -A INPUT -s 10.6.0.1 -j ACCEPT", "nft table", true},
    {"iptables-legacy -A INPUT -s 10.6.0.1 -j ACCEPT", "legacy ip_tables_names filter", false},
};

// Each of them, alone in a new namespace, makes the namespace differ from
// a fresh one.
TEST(FreshNetns, EveryKindOfConfigurationIsSeen) {
  CRX_REQUIRE_ROOT();
  std::string fresh = fresh_netns_fingerprint();
  for (const auto& c : kConfigCases) {
    UniqueFd ns = new_netns();
    ASSERT_EQ(fingerprint_difference(netns_fingerprint(ns.get()), fresh), std::nullopt) << c.command;
    auto r = in_ns(ns, c.command);
    ASSERT_EQ(r.status, 0) << c.command << ": " << r.err;
    auto diff = fingerprint_difference(netns_fingerprint(ns.get()), fresh);
    ASSERT_TRUE(diff.has_value()) << c.command << " went unseen";
    // The first difference may be another line the command made (a route
    // of the link it brought up); the whole fingerprint has what it set.
    EXPECT_NE(netns_fingerprint(ns.get()).find(c.seen), std::string::npos)
        << c.command << ": " << *diff;
  }
}

// Sysctls are told apart from the configuration: a namespace whose only
// change is a sysctl is configured as a new one, and the sysctl is what
// crx carries. Set in another container's namespace, the carried values
// make it alike.
TEST(FreshNetns, ChangedSysctlsAreCarriedApartFromTheConfiguration) {
  CRX_REQUIRE_ROOT();
  std::string fresh = fresh_netns_fingerprint();
  std::string id1, id2;
  {
    Running a, b;
    id1 = a.id;
    id2 = b.id;
    auto r = run_sh("nsenter -t " + std::to_string(init_pid(a.id)) +
                    " -n sysctl -qw net.ipv4.tcp_keepalive_time=1234 "
                    "net.ipv4.ip_unprivileged_port_start=80 net.ipv4.conf.lo.forwarding=1");
    ASSERT_EQ(r.status, 0) << r.err;
    auto cmp = checkpoint::compare_netns_with_fresh(init_pid(a.id), fresh);
    EXPECT_EQ(cmp.config_difference, std::nullopt) << *cmp.config_difference;
    checkpoint::NetSysctls want{{"net/ipv4/conf/lo/forwarding", "1"},
                                {"net/ipv4/ip_unprivileged_port_start", "80"},
                                {"net/ipv4/tcp_keepalive_time", "1234"}};
    EXPECT_EQ(cmp.changed_sysctls, want);
    EXPECT_TRUE(checkpoint::criu_carries_sysctl("net/ipv4/conf/lo/forwarding"));
    EXPECT_TRUE(checkpoint::criu_carries_sysctl("net/ipv6/conf/all/disable_ipv6"));
    EXPECT_TRUE(checkpoint::criu_carries_sysctl("net/unix/max_dgram_qlen"));
    EXPECT_FALSE(checkpoint::criu_carries_sysctl("net/ipv4/tcp_keepalive_time"));

    checkpoint::apply_net_sysctls(init_pid(b.id), cmp.changed_sysctls);
    auto other = checkpoint::compare_netns_with_fresh(init_pid(b.id), fresh);
    EXPECT_EQ(other.changed_sysctls, want);

    // A sysctl this kernel lacks: an error that names it, with its errno.
    try {
      checkpoint::apply_net_sysctls(init_pid(b.id), {{"net/ipv4/crx_no_such_sysctl", "1"}});
      ADD_FAILURE() << "an unknown sysctl was set";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("net/ipv4/crx_no_such_sysctl"), std::string::npos)
          << e.what();
      EXPECT_EQ(e.sys_errno(), ENOENT) << e.what();
    }
    EXPECT_THROW(checkpoint::apply_net_sysctls(init_pid(b.id), {{"kernel/hostname", "x"}}), Error);
  }
  expect_nothing_left(id1);
  expect_nothing_left(id2);
}

// A process alone in a new network namespace, for a NetnsWatch to watch;
// killed and reaped at the end.
struct NetnsChild {
  pid_t pid = -1;
  NetnsChild() : pid(fork_into_new_namespaces(CLONE_NEWNET)) {}
  ~NetnsChild() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  Result sh(const std::string& command) const {
    return run_sh("nsenter -t " + std::to_string(pid) + " -n sh -c " + shell_quoted(command));
  }
};

// What changes after the watch began is seen at its compare(): the
// configuration read again only when a notification announced a change,
// the legacy tables and the sysctls always read anew.
TEST(NetnsWatch, EveryKindOfConfigurationMadeAfterItIsSeen) {
  CRX_REQUIRE_ROOT();
  std::string fresh = fresh_netns_fingerprint();
  for (const auto& c : kConfigCases) {
    NetnsChild child;
    checkpoint::NetnsWatch watch(child.pid);
    auto before = watch.compare(fresh);
    EXPECT_EQ(before.config_difference, std::nullopt) << c.command << ": " << *before.config_difference;
    EXPECT_TRUE(before.changed_sysctls.empty()) << c.command;
    EXPECT_TRUE(before.config_read_ahead) << c.command << ": a notification with nothing changed";
    auto r = child.sh(c.command);
    ASSERT_EQ(r.status, 0) << c.command << ": " << r.err;
    auto after = watch.compare(fresh);
    EXPECT_EQ(after.config_read_ahead, !c.announced) << c.command;
    // With the sysctls left for later (no thread in the namespace when
    // nothing was announced), the configuration compares the same.
    auto later = watch.compare(fresh, checkpoint::NetnsWatch::Sysctls::Later);
    EXPECT_EQ(later.config_difference, after.config_difference) << c.command;
    EXPECT_TRUE(later.changed_sysctls.empty()) << c.command;
    if (std::string_view(c.command).starts_with("sysctl")) {
      EXPECT_EQ(after.config_difference, std::nullopt) << c.command;
      EXPECT_EQ(after.changed_sysctls.count("net/ipv4/tcp_keepalive_time"), 1u) << c.command;
      continue;
    }
    ASSERT_TRUE(after.config_difference.has_value()) << c.command << " went unseen";
    // As compared without a watch.
    auto direct = checkpoint::compare_netns_with_fresh(child.pid, fresh);
    EXPECT_EQ(after.config_difference, direct.config_difference) << c.command;
    EXPECT_EQ(after.changed_sysctls, direct.changed_sysctls) << c.command;
  }
}

// A frozen container's sysctls cannot change after its dump: compare()
// may leave them out, for changed_sysctls() to read them then (the final
// dump's images travel meanwhile). The configuration is still compared.
TEST(NetnsWatch, SysctlsLeftForLaterAreReadThen) {
  CRX_REQUIRE_ROOT();
  using Sysctls = checkpoint::NetnsWatch::Sysctls;
  std::string fresh = fresh_netns_fingerprint();
  NetnsChild child;
  checkpoint::NetnsWatch watch(child.pid);
  auto r = child.sh("sysctl -qw net.ipv4.tcp_keepalive_time=1234");
  ASSERT_EQ(r.status, 0) << r.err;
  auto at_freeze = watch.compare(fresh, Sysctls::Later);
  EXPECT_EQ(at_freeze.config_difference, std::nullopt) << *at_freeze.config_difference;
  EXPECT_TRUE(at_freeze.changed_sysctls.empty());
  EXPECT_EQ(watch.changed_sysctls(fresh),
            (checkpoint::NetSysctls{{"net/ipv4/tcp_keepalive_time", "1234"}}));
  r = child.sh("ip link set lo up");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(watch.compare(fresh, Sysctls::Later).config_difference.has_value());
}

// A sysctl file that appeared after the watch began (a new device's) is
// read too; and a watch that may keep few fds opens the rest at compare().
TEST(NetnsWatch, SysctlsNotKeptAreReadAtTheCompare) {
  CRX_REQUIRE_ROOT();
  std::string fresh = fresh_netns_fingerprint();
  rlimit was{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &was), 0);
  NetnsChild child;
  std::optional<checkpoint::NetnsWatch> few;
  {
    rlimit low = was;
    low.rlim_cur = 256;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    try {
      few.emplace(child.pid);
    } catch (...) {
      ::setrlimit(RLIMIT_NOFILE, &was);
      throw;
    }
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &was), 0);
  }
  checkpoint::NetnsWatch all(child.pid);
  EXPECT_LE(few->sysctls_kept(), 128u);
  EXPECT_GT(all.sysctls_kept(), 400u);  // ~490 in a new namespace
  auto r = child.sh(
      "ip link add crx-veth0 type veth peer name crx-veth1 && "
      "sysctl -qw net.ipv4.conf.crx-veth0.forwarding=1 net.ipv4.tcp_keepalive_time=1234");
  ASSERT_EQ(r.status, 0) << r.err;
  checkpoint::NetSysctls want{{"net/ipv4/conf/crx-veth0/forwarding", "1"},
                              {"net/ipv4/tcp_keepalive_time", "1234"}};
  for (auto* w : {&*few, &all}) {
    auto cmp = w->compare(fresh);
    EXPECT_FALSE(cmp.config_read_ahead);
    ASSERT_TRUE(cmp.config_difference.has_value());
    for (const auto& [path, value] : want) {
      auto got = cmp.changed_sysctls.find(path);
      ASSERT_NE(got, cmp.changed_sysctls.end()) << path;
      EXPECT_EQ(got->second, value) << path;
    }
  }
}

// A container's own namespace, watched and compared as without a watch.
TEST(NetnsWatch, AContainersNamespaceComparesAsWithoutAWatch) {
  CRX_REQUIRE_ROOT();
  std::string fresh = fresh_netns_fingerprint();
  std::string id;
  {
    Running c;
    id = c.id;
    checkpoint::NetnsWatch watch(init_pid(c.id));
    auto r = run_sh("nsenter -t " + std::to_string(init_pid(c.id)) +
                    " -n sysctl -qw net.ipv4.ip_unprivileged_port_start=80");
    ASSERT_EQ(r.status, 0) << r.err;
    auto cmp = watch.compare(fresh);
    EXPECT_TRUE(cmp.config_read_ahead);
    EXPECT_EQ(cmp.config_difference, std::nullopt) << *cmp.config_difference;
    EXPECT_EQ(cmp.changed_sysctls,
              (checkpoint::NetSysctls{{"net/ipv4/ip_unprivileged_port_start", "80"}}));
  }
  expect_nothing_left(id);
}

TEST(FreshNetns, ADifferenceSaysWhatIsThereAndWhatIsNot) {
  EXPECT_EQ(fingerprint_difference("a\nb\n", "a\nb\n"), std::nullopt);
  EXPECT_EQ(fingerprint_difference("a\nb\nc\n", "a\nc\n"), "it has \"b\"");
  EXPECT_EQ(fingerprint_difference("a\nc\n", "a\nb\nc\n"), "it lacks \"b\"");
  EXPECT_EQ(fingerprint_difference("a\n", ""), "it has \"a\"");
}

}  // namespace
}  // namespace crx::test
