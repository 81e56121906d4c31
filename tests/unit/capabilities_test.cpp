#include "linux/capabilities.hpp"

#include <grp.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "capability.hpp"
#include "child_process.hpp"
#include "common/error.hpp"
#include "linux/process_security.hpp"
#include "linux/rlimits.hpp"
#include "linux/user.hpp"

namespace {

// "CapEff=...,CapPrm=...,..." from /proc/self/status, as hex masks.
std::string cap_status() {
  std::ifstream in("/proc/self/status");
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("Cap", 0) == 0) {
      std::istringstream fields(line);
      std::string key, value;
      fields >> key >> value;
      out += key + value + " ";
    }
  return out;
}

std::string mask(std::initializer_list<int> caps) {
  unsigned long long m = 0;
  for (int c : caps) m |= 1ull << c;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", m);
  return buf;
}

// What the tests below set: dropping from the bounding set takes
// CAP_SETPCAP, and the sets can only keep capabilities the process has.
// Without them, get a full capability set in a fresh user namespace.
bool privileged() {
  if (crx::test::missing_capability({CAP_SETPCAP, CAP_CHOWN, CAP_KILL, CAP_NET_BIND_SERVICE})
          .empty())
    return true;
  return ::unshare(CLONE_NEWUSER) == 0;
}

crx::spec::Capabilities reduced() {
  crx::spec::Capabilities caps;
  caps.bounding = {CAP_CHOWN, CAP_KILL, CAP_NET_BIND_SERVICE};
  caps.effective = {CAP_CHOWN, CAP_NET_BIND_SERVICE};
  caps.permitted = {CAP_CHOWN, CAP_KILL, CAP_NET_BIND_SERVICE};
  caps.inheritable = {CAP_NET_BIND_SERVICE};
  caps.ambient = {CAP_NET_BIND_SERVICE};
  return caps;
}

TEST(Capabilities, NamesComeFromLibcap) {
  EXPECT_EQ(crx::linux_::capability_name(CAP_SYS_ADMIN), "CAP_SYS_ADMIN");
  EXPECT_EQ(crx::linux_::capability_name(CAP_CHOWN), "CAP_CHOWN");
  EXPECT_GE(crx::linux_::last_capability(), CAP_AUDIT_READ);
}

TEST(Capabilities, AllFiveSetsAreApplied) {
  const std::string out = crx::test::in_child([] {
    if (!privileged()) return std::string("skip");
    const auto caps = reduced();
    crx::linux_::drop_bounding_set(caps);
    crx::linux_::apply_capabilities(caps);
    return cap_status();
  });
  if (out == "skip") GTEST_SKIP() << "needs CAP_SETPCAP or user namespaces";
  EXPECT_NE(out.find("CapInh:" + mask({CAP_NET_BIND_SERVICE})), std::string::npos) << out;
  EXPECT_NE(out.find("CapPrm:" + mask({CAP_CHOWN, CAP_KILL, CAP_NET_BIND_SERVICE})),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("CapEff:" + mask({CAP_CHOWN, CAP_NET_BIND_SERVICE})), std::string::npos)
      << out;
  EXPECT_NE(out.find("CapBnd:" + mask({CAP_CHOWN, CAP_KILL, CAP_NET_BIND_SERVICE})),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("CapAmb:" + mask({CAP_NET_BIND_SERVICE})), std::string::npos) << out;
}

// Like runc: an ambient capability outside inheritable is skipped, the
// others are still raised.
TEST(Capabilities, AmbientOutsideInheritableIsSkipped) {
  const std::string out = crx::test::in_child([] {
    if (!privileged()) return std::string("skip");
    auto caps = reduced();
    caps.ambient = {CAP_KILL, CAP_NET_BIND_SERVICE};
    crx::linux_::apply_capabilities(caps);
    return cap_status();
  });
  if (out == "skip") GTEST_SKIP() << "needs CAP_SETPCAP or user namespaces";
  EXPECT_NE(out.find("CapAmb:" + mask({CAP_NET_BIND_SERVICE})), std::string::npos) << out;
}

// The whole child sequence: capabilities survive the switch to a non-root
// user, which gets the uid, gid, groups and umask of the spec.
TEST(ProcessSecurity, NonRootUserKeepsTheConfiguredCapabilities) {
  // to uid 1000, gid 1001, groups 2000 2001; the bounding set; reduced()
  CRX_SKIP_WITHOUT(CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_CHOWN, CAP_KILL, CAP_NET_BIND_SERVICE);
  const std::string out = crx::test::in_child([] {
    crx::spec::Process p;
    p.capabilities = reduced();
    p.user.uid = 1000;
    p.user.gid = 1001;
    p.user.additional_gids = {2000, 2001};
    p.user.umask = 027;
    p.no_new_privileges = true;
    crx::linux_::finalize_process(p, nullptr);
    uid_t r, e, s;
    ::getresuid(&r, &e, &s);
    gid_t gr, ge, gs;
    ::getresgid(&gr, &ge, &gs);
    gid_t groups[8];
    const int n = ::getgroups(8, groups);
    const mode_t old = ::umask(0);
    std::string res = "uid " + std::to_string(r) + "/" + std::to_string(e) + "/" +
                      std::to_string(s) + " gid " + std::to_string(gr) + "/" +
                      std::to_string(ge) + "/" + std::to_string(gs) + " groups";
    for (int i = 0; i < n; ++i) res += " " + std::to_string(groups[i]);
    res += " umask " + std::to_string(old) + " nnp " +
           std::to_string(::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)) +
           " keepcaps " + std::to_string(::prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0)) + " ";
    return res + cap_status();
  });
  EXPECT_NE(out.find("uid 1000/1000/1000 gid 1001/1001/1001 groups 2000 2001 umask 23 nnp 1 "
                     "keepcaps 0"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("CapEff:" + mask({CAP_CHOWN, CAP_NET_BIND_SERVICE})), std::string::npos)
      << out;
  EXPECT_NE(out.find("CapAmb:" + mask({CAP_NET_BIND_SERVICE})), std::string::npos) << out;
}

TEST(ProcessSecurity, WithoutCapabilitiesANonRootUserHasNone) {
  CRX_SKIP_WITHOUT(CAP_SETUID, CAP_SETGID);  // to uid and gid 1000, no groups
  const std::string out = crx::test::in_child([] {
    crx::spec::Process p;
    p.user.uid = 1000;
    p.user.gid = 1000;
    crx::linux_::finalize_process(p, nullptr);
    return cap_status();
  });
  EXPECT_NE(out.find("CapEff:" + mask({})), std::string::npos) << out;
  EXPECT_NE(out.find("CapPrm:" + mask({})), std::string::npos) << out;
}

TEST(User, DefaultUmaskIs022) {
  const std::string out = crx::test::in_child([] {
    ::umask(0);
    crx::linux_::apply_umask(crx::spec::User{});
    return std::to_string(::umask(0));
  });
  EXPECT_EQ(out, std::to_string(022));
}

}  // namespace
