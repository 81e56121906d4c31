#include "linux/hooks.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "../support/temp_dir.hpp"

namespace {

class Hooks : public ::testing::Test {
 protected:

  // A /bin/sh script hook in the temp dir.
  crx::spec::Hook script(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    crx::write_file(path, "#!/bin/sh\n" + body + "\n", 0755);
    crx::spec::Hook h;
    h.path = path;
    h.args = {path};
    h.env = {"OUT=" + dir_ + "/out"};
    return h;
  }
  std::string out() { return crx::path_exists(dir_ + "/out") ? crx::read_file(dir_ + "/out") : ""; }
  std::string error_of(const std::vector<crx::spec::Hook>& hooks, const std::string& phase,
                       const std::string& state = "{}") {
    try {
      crx::linux_::run_hooks(hooks, state, phase);
    } catch (const crx::Error& e) {
      return e.what();
    }
    return "no error";
  }

  crx::test::TempDir tmp_{"crx-hooks"};
  std::string dir_ = tmp_.path();
};

TEST_F(Hooks, StateArrivesOnStdinAndEnvIsExactlyTheHooks) {
  const std::string state = R"({"ociVersion":"1.0.2","id":"c1","status":"created","pid":42})";
  auto h = script("state", "cat > \"$OUT\"; echo \"|$FOO|$HOME|\" >> \"$OUT\"");
  h.env.push_back("FOO=bar");
  crx::linux_::run_hooks({h}, state, "createRuntime");
  EXPECT_EQ(out(), state + "|bar||\n");
}

TEST_F(Hooks, WithoutEnvTheHookInheritsCrxsEnvironment) {
  crx::spec::Hook h;
  h.path = "/bin/sh";
  h.args = {"sh", "-c", "echo \"$CRX_HOOK_TEST\" > \"$CRX_HOOK_OUT\""};
  ::setenv("CRX_HOOK_TEST", "inherited", 1);
  ::setenv("CRX_HOOK_OUT", (dir_ + "/out").c_str(), 1);
  crx::linux_::run_hooks({h}, "{}", "poststart");
  ::unsetenv("CRX_HOOK_TEST");
  ::unsetenv("CRX_HOOK_OUT");
  EXPECT_EQ(out(), "inherited\n");
}

TEST_F(Hooks, ArgsArePassedWithArgv0AsGiven) {
  crx::spec::Hook h;
  h.path = "/bin/sh";
  h.args = {"custom-zero", "-c", "tr '\\0' ' ' < /proc/$$/cmdline > \"$OUT\"", "x"};
  h.env = {"OUT=" + dir_ + "/out"};
  crx::linux_::run_hooks({h}, "{}", "prestart");
  EXPECT_EQ(out().substr(0, 14), "custom-zero -c");
}

TEST_F(Hooks, LargeStateIsNotABlockerForAHookThatIgnoresStdin) {
  auto h = script("ignore", "echo done > \"$OUT\"");
  crx::linux_::run_hooks({h}, std::string(1 << 20, 'x'), "poststart");
  EXPECT_EQ(out(), "done\n");
}

TEST_F(Hooks, FailureNamesPhasePathStatusAndFirstStderrLine) {
  auto bad = script("bad", "echo 'disk on fire' >&2; echo 'second line' >&2; exit 3");
  auto never = script("never", "echo ran > \"$OUT\"");
  EXPECT_EQ(error_of({bad, never}, "prestart"),
            "hook prestart " + bad.path + " exited with status 3: disk on fire");
  EXPECT_EQ(out(), "") << "hooks after a failed one must not run";
}

TEST_F(Hooks, TimeoutKillsTheHook) {
  auto slow = script("slow", "echo $$ > \"$OUT\"; exec sleep 30");
  slow.timeout = 1;
  EXPECT_EQ(error_of({slow}, "createContainer"),
            "hook createContainer " + slow.path + " timed out after 1s");
  const std::string pid = out().substr(0, out().find('\n'));
  ASSERT_FALSE(pid.empty());
  EXPECT_FALSE(crx::path_exists("/proc/" + pid)) << "the hook must be killed and reaped";
}

TEST_F(Hooks, SignalAndExecFailuresAreNamed) {
  auto killed = script("killed", "kill -TERM $$");
  EXPECT_EQ(error_of({killed}, "startContainer"),
            "hook startContainer " + killed.path + " killed by signal SIGTERM");
  crx::spec::Hook missing;
  missing.path = dir_ + "/missing";
  EXPECT_EQ(error_of({missing}, "prestart"),
            "hook prestart " + missing.path + ": execve: No such file or directory");
}

TEST_F(Hooks, PoststopFailuresAreOnlyWarnings) {
  auto bad = script("bad", "exit 1");
  auto after = script("after", "echo ran > \"$OUT\"");
  EXPECT_EQ(error_of({bad, after}, "poststop"), "no error");
  EXPECT_EQ(out(), "ran\n");
}

}  // namespace
