#include "unix_listener.hpp"
#include "linux/seccomp.hpp"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <seccomp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "child_process.hpp"
#include "common/error.hpp"
#include "linux/console.hpp"
#include "linux/rlimits.hpp"

namespace {

using crx::spec::Seccomp;
using crx::spec::SeccompArg;
using crx::spec::SeccompSyscall;

Seccomp allow_all_but(SeccompSyscall rule) {
  Seccomp s;
  s.default_action = "SCMP_ACT_ALLOW";
  s.syscalls.push_back(std::move(rule));
  return s;
}

SeccompSyscall rule(std::vector<std::string> names, std::string action,
                    std::optional<unsigned> errno_ret = std::nullopt,
                    std::vector<SeccompArg> args = {}) {
  SeccompSyscall r;
  r.names = std::move(names);
  r.action = std::move(action);
  r.errno_ret = errno_ret;
  r.args = std::move(args);
  return r;
}

// Loads the filter in a forked child (with no_new_privs, as an unprivileged
// caller must) and returns what `probe` reports after it.
std::string with_filter(const Seccomp& s, const std::function<std::string()>& probe) {
  auto filter = crx::linux_::build_seccomp(s);
  return crx::test::in_child([&] {
    crx::linux_::set_no_new_privs();
    filter.load();
    return probe();
  });
}

std::string errno_of(long rc) { return rc < 0 ? std::string(strerrorname_np(errno)) : "ok"; }

// setpriority under a filter whose rules answer EDOM: "EDOM" if the filter
// refused the call, "ok" if it let it through - also when the kernel then
// refuses it (EACCES: lowering the nice value of a process that runs at a
// higher one, e.g. a reniced build, needs CAP_SYS_NICE).
std::string filter_verdict_of_setpriority(int which, int prio) {
  std::string r = errno_of(::setpriority(which, 0, prio));
  return r == "EDOM" ? r : "ok";
}

std::string expect_error(const Seccomp& s) {
  try {
    crx::linux_::build_seccomp(s);
  } catch (const crx::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Seccomp, BuildsAndExportsAProgramWithoutLoadingIt) {
  auto s = allow_all_but(rule({"mkdir", "getcwd"}, "SCMP_ACT_ERRNO"));
  s.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
  s.flags = {"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW"};
  auto filter = crx::linux_::build_seccomp(s);
  EXPECT_GT(filter.program().size(), 4u);
  EXPECT_FALSE(filter.uses_notify());
  EXPECT_EQ(filter.flags(), unsigned(SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_SPEC_ALLOW));
  const std::string pfc = crx::linux_::seccomp_pfc(s);
  EXPECT_NE(pfc.find("mkdir"), std::string::npos) << pfc;
  EXPECT_NE(pfc.find("getcwd"), std::string::npos) << pfc;
  EXPECT_NE(pfc.find("x86_64"), std::string::npos) << pfc;
  // Only the native architecture: a shorter program.
  auto native = crx::linux_::build_seccomp(allow_all_but(rule({"mkdir"}, "SCMP_ACT_ERRNO")));
  EXPECT_LT(native.program().size(), filter.program().size());
}

TEST(Seccomp, UnknownNamesAreClearErrors) {
  EXPECT_NE(expect_error(allow_all_but(rule({"getcwd", "no_such_syscall"}, "SCMP_ACT_ERRNO")))
                .find("unknown syscall \"no_such_syscall\""),
            std::string::npos);
  EXPECT_NE(expect_error(allow_all_but(rule({"getcwd"}, "SCMP_ACT_EXPLODE")))
                .find("unknown action \"SCMP_ACT_EXPLODE\""),
            std::string::npos);
  auto arch = allow_all_but(rule({"getcwd"}, "SCMP_ACT_ERRNO"));
  arch.architectures = {"SCMP_ARCH_VAX"};
  EXPECT_NE(expect_error(arch).find("unknown architecture \"SCMP_ARCH_VAX\""), std::string::npos);
  auto flag = allow_all_but(rule({"getcwd"}, "SCMP_ACT_ERRNO"));
  flag.flags = {"SECCOMP_FILTER_FLAG_BOGUS"};
  EXPECT_NE(expect_error(flag).find("unknown flag \"SECCOMP_FILTER_FLAG_BOGUS\""),
            std::string::npos);
  EXPECT_NE(expect_error(allow_all_but(rule({"getcwd"}, "SCMP_ACT_ERRNO", {}, {{0, 1, 0, "SCMP_CMP_SIMILAR"}})))
                .find("unknown operator \"SCMP_CMP_SIMILAR\""),
            std::string::npos);
  EXPECT_NE(expect_error(allow_all_but(rule({"getcwd"}, "SCMP_ACT_ERRNO", {}, {{6, 1, 0, "SCMP_CMP_EQ"}})))
                .find("argument index 6"),
            std::string::npos);
  Seccomp notify_default;
  notify_default.default_action = "SCMP_ACT_NOTIFY";
  EXPECT_NE(expect_error(notify_default).find("SCMP_ACT_NOTIFY"), std::string::npos);
  auto notify_no_path = allow_all_but(rule({"getppid"}, "SCMP_ACT_NOTIFY"));
  EXPECT_NE(expect_error(notify_no_path).find("listenerPath"), std::string::npos);
}

TEST(Seccomp, ErrnoActionUsesErrnoRetOrEperm) {
  Seccomp s = allow_all_but(rule({"getcwd"}, "SCMP_ACT_ERRNO", ENOTSUP));
  s.syscalls.push_back(rule({"mkdir"}, "SCMP_ACT_ERRNO"));
  EXPECT_EQ(with_filter(s,
                        [] {
                          char buf[256];
                          std::string r = errno_of(::syscall(SYS_getcwd, buf, sizeof buf));
                          r += " " + errno_of(::syscall(SYS_mkdir, "/tmp/crx-never", 0700));
                          r += " " + errno_of(::syscall(SYS_getppid));
                          return r;
                        }),
            "EOPNOTSUPP EPERM ok");
}

TEST(Seccomp, DefaultErrnoRet) {
  Seccomp s;
  s.default_action = "SCMP_ACT_ERRNO";
  s.default_errno_ret = ENOSYS;
  // sigaltstack: in the sanitizer build, ASan's handler before a noreturn
  // call (the child's _exit) reads the alternate signal stack, and fails
  // its check if the filter refuses that.
  s.syscalls.push_back(rule({"write", "exit", "exit_group", "brk", "mmap", "munmap", "mremap",
                             "rt_sigprocmask", "futex", "getpid", "sigaltstack"},
                            "SCMP_ACT_ALLOW"));
  EXPECT_EQ(with_filter(s,
                        [] {
                          return errno_of(::syscall(SYS_getppid)) + " " +
                                 errno_of(::syscall(SYS_getpid));
                        }),
            "ENOSYS ok");
}

TEST(Seccomp, ArgumentConditionsAreAndedAcrossArguments) {
  // setpriority(PRIO_PROCESS, 0, 19) is refused; other priorities pass.
  auto s = allow_all_but(rule({"setpriority"}, "SCMP_ACT_ERRNO", EDOM,
                              {{0, PRIO_PROCESS, 0, "SCMP_CMP_EQ"}, {2, 19, 0, "SCMP_CMP_EQ"}}));
  EXPECT_EQ(with_filter(s,
                        [] {
                          std::string r = filter_verdict_of_setpriority(PRIO_PROCESS, 5);
                          r += " " + filter_verdict_of_setpriority(PRIO_PROCESS, 19);
                          r += " " + filter_verdict_of_setpriority(PRIO_PGRP, 19);
                          return r;
                        }),
            "ok EDOM ok");
}

TEST(Seccomp, RepeatedArgumentConditionsAreOred) {
  auto s = allow_all_but(rule({"setpriority"}, "SCMP_ACT_ERRNO", EDOM,
                              {{2, 18, 0, "SCMP_CMP_EQ"}, {2, 19, 0, "SCMP_CMP_EQ"}}));
  EXPECT_EQ(with_filter(s,
                        [] {
                          std::string r = filter_verdict_of_setpriority(PRIO_PROCESS, 17);
                          r += " " + filter_verdict_of_setpriority(PRIO_PROCESS, 18);
                          r += " " + filter_verdict_of_setpriority(PRIO_PROCESS, 19);
                          return r;
                        }),
            "ok EDOM EDOM");
}

TEST(Seccomp, MaskedEqualUsesValueAsMaskAndValueTwoAsDatum) {
  // mkdir whose "other" permission bits are exactly r-x is refused.
  auto s = allow_all_but(rule({"mkdir"}, "SCMP_ACT_ERRNO", EACCES,
                              {{1, 0007, 0005, "SCMP_CMP_MASKED_EQ"}}));
  char tmpl[] = "/tmp/crx-seccomp-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  EXPECT_EQ(with_filter(s,
                        [&] {
                          std::string r =
                              errno_of(::syscall(SYS_mkdir, (dir + "/a").c_str(), 0755));
                          r += " " + errno_of(::syscall(SYS_mkdir, (dir + "/b").c_str(), 0700));
                          return r;
                        }),
            "EACCES ok");
  ::rmdir((dir + "/a").c_str());
  ::rmdir((dir + "/b").c_str());
  ::rmdir(dir.c_str());
}

TEST(Seccomp, KillActionsEndTheProcessWithSigsys) {
  for (const char* action : {"SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
                             "SCMP_ACT_TRAP"}) {
    auto s = allow_all_but(rule({"getppid"}, action));
    EXPECT_EQ(with_filter(s,
                          [] {
                            ::syscall(SYS_getppid);
                            return std::string("survived");
                          }),
              "signal " + std::to_string(SIGSYS))
        << action;
  }
}

TEST(Seccomp, LogAndTraceActions) {
  // LOG allows the call; TRACE without a tracer fails it with ENOSYS.
  auto s = allow_all_but(rule({"getppid"}, "SCMP_ACT_LOG"));
  s.syscalls.push_back(rule({"getcwd"}, "SCMP_ACT_TRACE"));
  EXPECT_EQ(with_filter(s,
                        [] {
                          char buf[256];
                          return errno_of(::syscall(SYS_getppid)) + " " +
                                 errno_of(::syscall(SYS_getcwd, buf, sizeof buf));
                        }),
            "ok ENOSYS");
}

TEST(Seccomp, SyscallsNewerThanLibseccompAreSkipped) {
  // "mseal" (Linux 6.10) is in Docker's profile but unknown to libseccomp 2.5.
  if (seccomp_syscall_resolve_name("mseal") != __NR_SCMP_ERROR) GTEST_SKIP();
  EXPECT_NO_THROW(crx::linux_::build_seccomp(allow_all_but(rule({"mseal", "getcwd"}, "SCMP_ACT_ERRNO"))));
}

TEST(Seccomp, RuleEqualToDefaultActionIsSkipped) {
  auto s = allow_all_but(rule({"getcwd"}, "SCMP_ACT_ALLOW"));
  EXPECT_NO_THROW(crx::linux_::build_seccomp(s));
}

TEST(Seccomp, NotifyHandsOutAListenerThatAnswersTheCall) {
  auto s = allow_all_but(rule({"getppid"}, "SCMP_ACT_NOTIFY"));
  s.listener_path = "/run/unused.sock";
  auto filter = crx::linux_::build_seccomp(s);
  ASSERT_TRUE(filter.uses_notify());
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  crx::UniqueFd ours(sv[0]), theirs(sv[1]);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      crx::linux_::set_no_new_privs();
      crx::UniqueFd listener = filter.load();
      crx::linux_::send_fd(theirs.get(), listener.get(), "listener", "test");
      listener.reset();
      long v = ::syscall(SYS_getppid);  // answered by the parent
      ::_exit(v == 4242 ? 0 : 1);
    } catch (...) {
      ::_exit(2);
    }
  }
  theirs.reset();
  crx::UniqueFd listener = crx::linux_::recv_fd(ours.get());
  seccomp_notif* req = nullptr;
  seccomp_notif_resp* resp = nullptr;
  ASSERT_EQ(seccomp_notify_alloc(&req, &resp), 0);
  ASSERT_EQ(seccomp_notify_receive(listener.get(), req), 0);
  EXPECT_EQ(req->data.nr, SYS_getppid);
  EXPECT_EQ(static_cast<pid_t>(req->pid), pid);
  resp->id = req->id;
  resp->val = 4242;
  resp->error = 0;
  resp->flags = 0;
  EXPECT_EQ(seccomp_notify_respond(listener.get(), resp), 0);
  seccomp_notify_free(req, resp);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(Seccomp, ListenerFdIsSentWithContainerProcessState) {
  char tmpl[] = "/tmp/crx-seccomp-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/listener.sock";
  crx::UniqueFd server = crx::test::listen_unix(path);
  ASSERT_TRUE(server.valid());
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  crx::UniqueFd pr(p[0]), pw(p[1]);
  nlohmann::json state = {{"ociVersion", "1.0.2"}, {"id", "c1"}, {"status", "creating"}};
  crx::linux_::send_seccomp_listener_fd(path, pw.get(), 1234, "meta", state);
  crx::UniqueFd conn(::accept(server.get(), nullptr, nullptr));
  std::string payload;
  crx::UniqueFd got = crx::linux_::recv_fd(conn.get(), &payload);
  auto msg = nlohmann::json::parse(payload);
  EXPECT_EQ(msg["fds"], nlohmann::json::array({"seccompFd"}));
  EXPECT_EQ(msg["pid"], 1234);
  EXPECT_EQ(msg["metadata"], "meta");
  EXPECT_EQ(msg["state"]["id"], "c1");
  // The received fd is the pipe's write end.
  ASSERT_EQ(::write(got.get(), "x", 1), 1);
  char c = 0;
  ASSERT_EQ(::read(pr.get(), &c, 1), 1);
  EXPECT_EQ(c, 'x');
  ::unlink(path.c_str());
  ::rmdir(tmpl);
}

TEST(Seccomp, ListenerStateOverAConnectedSocket) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  crx::UniqueFd a(sv[0]), b(sv[1]);
  crx::linux_::send_seccomp_listener_fd(a.get(), a.get(), 77, "", nlohmann::json());
  std::string payload;
  crx::UniqueFd got = crx::linux_::recv_fd(b.get(), &payload);
  auto msg = nlohmann::json::parse(payload);
  EXPECT_EQ(msg["ociVersion"], "1.0.2");
  EXPECT_EQ(msg["pid"], 77);
  EXPECT_TRUE(got.valid());
}

}  // namespace
