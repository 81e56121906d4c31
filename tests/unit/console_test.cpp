#include "unix_listener.hpp"
#include "linux/console.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "common/error.hpp"

namespace {

TEST(Console, PtyMasterSurvivesASocketRoundTrip) {
  std::string slave_name;
  crx::UniqueFd master = crx::linux_::open_pty(&slave_name, crx::spec::ConsoleSize{40, 100});
  ASSERT_EQ(slave_name.rfind("/dev/pts/", 0), 0u) << slave_name;
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  crx::UniqueFd a(sv[0]), b(sv[1]);
  crx::linux_::send_fd(a.get(), master.get(), slave_name, "test");
  std::string name;
  crx::UniqueFd received = crx::linux_::recv_console_fd(b.get(), &name);
  EXPECT_EQ(name, slave_name);
  master.reset();  // the received fd alone keeps the pty alive

  crx::UniqueFd slave(::open(slave_name.c_str(), O_RDWR | O_NOCTTY));
  ASSERT_TRUE(slave.valid());
  winsize ws{};
  ASSERT_EQ(::ioctl(slave.get(), TIOCGWINSZ, &ws), 0);
  EXPECT_EQ(ws.ws_row, 40);
  EXPECT_EQ(ws.ws_col, 100);
  ASSERT_EQ(::write(slave.get(), "hi\n", 3), 3);
  char buf[16] = {};
  ssize_t n = ::read(received.get(), buf, sizeof buf - 1);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, n), "hi\r\n");  // through the line discipline
}

TEST(Console, SendConsoleFdConnectsToTheSocketPath) {
  char tmpl[] = "/tmp/crx-console-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/console.sock";
  crx::UniqueFd server = crx::test::listen_unix(path);
  ASSERT_TRUE(server.valid());
  std::string slave_name;
  crx::UniqueFd master = crx::linux_::open_pty(&slave_name);
  crx::linux_::send_console_fd(path, master.get(), slave_name);
  crx::UniqueFd conn(::accept(server.get(), nullptr, nullptr));
  std::string name;
  crx::UniqueFd received = crx::linux_::recv_console_fd(conn.get(), &name);
  EXPECT_EQ(name, slave_name);
  EXPECT_TRUE(::isatty(received.get()));
  ::unlink(path.c_str());
  ::rmdir(tmpl);

  try {
    crx::linux_::send_console_fd(path, master.get(), slave_name);
    FAIL() << "expected an error";
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("connect " + path), std::string::npos) << e.what();
  }
}

TEST(Console, ProxyCopiesThePtyToStdioUntilTheSlaveCloses) {
  std::string slave_name;
  crx::UniqueFd master = crx::linux_::open_pty(&slave_name);
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      master.reset();
      crx::linux_::use_console_as_stdio(slave_name);
      char line[64] = {};
      ssize_t n = ::read(0, line, sizeof line - 1);  // "ping\n" from the proxy
      std::string reply = "got " + std::string(line, n > 0 ? n : 0);
      (void)!::write(1, reply.data(), reply.size());
      ::_exit(::isatty(1) && ::tcgetpgrp(0) == ::getpgrp() ? 0 : 1);
    } catch (...) {
      ::_exit(2);
    }
  }
  ASSERT_EQ(::write(in[1], "ping\n", 5), 5);
  crx::linux_::proxy_pty(master.get(), in[0], out[1]);
  ::close(out[1]);
  std::string got;
  char buf[256];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) got.append(buf, n);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(got.find("got ping"), std::string::npos) << got;
  ::close(in[0]);
  ::close(in[1]);
  ::close(out[0]);
}

}  // namespace
