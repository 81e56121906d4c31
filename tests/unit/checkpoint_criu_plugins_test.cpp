// CRIU gets crx's plugin dir through a config file (`libdir <dir>`) named
// in criu_opts.config_file, and CRX_VERBS_DEFER_RESUME exactly when a
// restore asks for it. A fake `criu swrk` records the request it gets.
#include <gtest/gtest.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <set>

#include "checkpoint/criu_plugins.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/unique_fd.hpp"

namespace {

using namespace crx;
using namespace crx::checkpoint;

struct FakeCriu {
  std::string dir;
  std::string out, env;
  FakeCriu() {
    char tmpl[] = "/tmp/crx-fake-criu-XXXXXX";
    dir = ::mkdtemp(tmpl);
    out = dir + "/request.bin";
    env = dir + "/env.txt";
    // `criu swrk <fd>`: keep the environment, read one request, exit.
    write_file(dir + "/criu",
               "#!/bin/sh\nenv > " + env + "\neval \"exec dd bs=65536 count=1 of=" + out +
                   " <&$2\" 2>/dev/null\n",
               0755);
    set_criu_binary(dir + "/criu");
  }
  ~FakeCriu() {
    set_criu_binary("criu");
    remove_tree(dir);
  }
  UniqueFd open_dir(const std::string& name) {
    mkdir_p(dir + "/" + name, 0700);
    return UniqueFd(::open((dir + "/" + name).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  // criu_opts.config_file (field 51, length-delimited: tag bytes 9a 03).
  std::string config_file_field() {
    std::string req = read_file(out);
    size_t at = req.find("\x9a\x03");
    if (at == std::string::npos) return {};
    size_t len = static_cast<unsigned char>(req[at + 2]);  // paths here are < 128 bytes
    return req.substr(at + 3, len);
  }
  bool env_has(const std::string& line) {
    std::string all = read_file(env);
    return ("\n" + all).find("\n" + line + "\n") != std::string::npos;
  }
};

TEST(CriuPlugins, DirRule) {
  std::set<std::string> dirs;
  auto is_dir = [&](const std::string& d) { return dirs.count(d) > 0; };
  EXPECT_EQ(choose_criu_plugin_dir("/env/dir", "/opt/crx/bin", is_dir), "/env/dir");
  EXPECT_EQ(choose_criu_plugin_dir("", "/opt/crx/bin", is_dir), "");  // set but empty: CRIU's default
  EXPECT_EQ(choose_criu_plugin_dir(nullptr, "/opt/crx/bin", is_dir), "");
  dirs.insert("/opt/crx/bin/../lib/crx/criu-plugins");
  EXPECT_EQ(choose_criu_plugin_dir(nullptr, "/opt/crx/bin", is_dir),
            "/opt/crx/bin/../lib/crx/criu-plugins");
  dirs.insert("/opt/crx/bin/criu-plugins");  // the build dir layout wins
  EXPECT_EQ(choose_criu_plugin_dir(nullptr, "/opt/crx/bin", is_dir), "/opt/crx/bin/criu-plugins");
}

// A dump into `images` with `work` as its work dir and a plugin dir given.
DumpOptions dump_into(const UniqueFd& images, const UniqueFd& work) {
  DumpOptions o;
  o.images_dir_fd = images.get();
  o.work_dir_fd = work.get();
  o.log_file = "dump.log";
  o.pid = 1;
  o.criu_libdir = "/opt/crx/criu-plugins";
  return o;
}

TEST(CriuPlugins, DumpWritesConfigIntoWorkDirAndPassesIt) {
  FakeCriu criu;
  UniqueFd images = criu.open_dir("images"), work = criu.open_dir("work");
  DumpOptions o = dump_into(images, work);
  EXPECT_THROW(criu_dump(o), Error);  // the fake never answers
  EXPECT_EQ(read_file(criu.dir + "/work/crx-criu.conf"), "libdir /opt/crx/criu-plugins\n");
  EXPECT_EQ(criu.config_file_field(), "/proc/" + std::to_string(::getpid()) + "/fd/" +
                                          std::to_string(work.get()) + "/crx-criu.conf");
  EXPECT_FALSE(criu.env_has("CRX_VERBS_DEFER_RESUME=1"));
}

// Without plugins, the libdir CRIU is given is an empty directory of the
// work dir.
void expect_no_plugins(FakeCriu& criu, int work_fd) {
  const std::string empty = "/proc/" + std::to_string(::getpid()) + "/fd/" +
                            std::to_string(work_fd) + "/" + kNoPluginsDir;
  EXPECT_EQ(read_file(criu.dir + "/work/crx-criu.conf"), "libdir " + empty + "\n");
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir((criu.dir + "/work/" + kNoPluginsDir).c_str()),
                                        ::closedir);
  ASSERT_TRUE(d);
  int entries = 0;
  while (::readdir(d.get())) ++entries;
  EXPECT_EQ(entries, 2);  // . and ..
}

TEST(CriuPlugins, DumpWithoutPluginsGetsAnEmptyLibdir) {
  FakeCriu criu;
  UniqueFd images = criu.open_dir("images"), work = criu.open_dir("work");
  DumpOptions o = dump_into(images, work);
  o.plugins = false;  // overrules the plugin dir
  EXPECT_THROW(criu_dump(o), Error);
  expect_no_plugins(criu, work.get());
}

TEST(CriuPlugins, RestoreWithoutPluginsGetsAnEmptyLibdir) {
  FakeCriu criu;
  UniqueFd images = criu.open_dir("images"), work = criu.open_dir("work");
  RestoreOptions o;
  o.images_dir_fd = images.get();
  o.work_dir_fd = work.get();
  o.plugins = false;  // and the dir from the rule (the build dir's, if any)
  EXPECT_THROW(criu_restore(o), Error);
  expect_no_plugins(criu, work.get());
}

TEST(CriuPlugins, NoDirNoConfigFile) {
  FakeCriu criu;
  UniqueFd images = criu.open_dir("images");
  DumpOptions o;
  o.images_dir_fd = images.get();
  o.pid = 1;
  o.criu_libdir = "";
  EXPECT_THROW(criu_pre_dump(o), Error);
  EXPECT_FALSE(path_exists(criu.dir + "/images/crx-criu.conf"));
  EXPECT_EQ(criu.config_file_field(), "");
}

TEST(CriuPlugins, EnvironmentPicksTheDirForRestoreAndDeferIsPassed) {
  FakeCriu criu;
  ::setenv(kCriuLibdirEnv, "/from/env", 1);
  ::setenv("CRX_VERBS_DEFER_RESUME", "1", 1);  // inherited: must not count
  UniqueFd images = criu.open_dir("images");
  RestoreOptions o;
  o.images_dir_fd = images.get();  // no work dir: the config goes here
  EXPECT_THROW(criu_restore(o), Error);
  EXPECT_EQ(read_file(criu.dir + "/images/crx-criu.conf"), "libdir /from/env\n");
  EXPECT_FALSE(criu.env_has("CRX_VERBS_DEFER_RESUME=1"));
  o.defer_verbs_resume = true;
  EXPECT_THROW(criu_restore(o), Error);
  EXPECT_TRUE(criu.env_has("CRX_VERBS_DEFER_RESUME=1"));
  ::unsetenv("CRX_VERBS_DEFER_RESUME");
  ::unsetenv(kCriuLibdirEnv);
}

// A criu started ahead of a migration's images gets the verbs plugin
// preloaded (its constructor loads libibverbs' providers off the frozen
// window), exactly when asked, the file is there and crx has no
// LD_PRELOAD of its own.
TEST(CriuPlugins, WaitingRestorePreloadsTheVerbsPlugin) {
  FakeCriu criu;
  std::string plugin = criu.dir + "/" + kVerbsPluginName;
  write_file(plugin, "", 0644);  // ld.so says it cannot preload it; sh runs on
  auto started_env = [&](const std::string& preload) {
    ::unlink(criu.env.c_str());
    StartedRestore::Setup s;
    s.preload_verbs_plugin = preload;
    { StartedRestore r(s); }  // closing its socket ends the fake
    return read_file(criu.env);
  };
  ::setenv("CRX_VERBS_PRELOAD", "1", 1);  // inherited: must not count
  started_env("");
  EXPECT_FALSE(criu.env_has("CRX_VERBS_PRELOAD=1"));
  started_env(plugin);
  EXPECT_TRUE(criu.env_has("LD_PRELOAD=" + plugin));
  EXPECT_TRUE(criu.env_has("CRX_VERBS_PRELOAD=1"));
  started_env(criu.dir + "/missing.so");
  EXPECT_FALSE(criu.env_has("CRX_VERBS_PRELOAD=1"));
  ::setenv("LD_PRELOAD", "/the/operators.so", 1);
  started_env(plugin);
  ::unsetenv("LD_PRELOAD");
  EXPECT_TRUE(criu.env_has("LD_PRELOAD=/the/operators.so"));
  EXPECT_FALSE(criu.env_has("CRX_VERBS_PRELOAD=1"));
  ::unsetenv("CRX_VERBS_PRELOAD");

  ::setenv(kCriuLibdirEnv, "/from/env", 1);
  EXPECT_EQ(verbs_plugin_path(), "/from/env/crx_ibverbs.so");
  ::setenv(kCriuLibdirEnv, "", 1);
  EXPECT_EQ(verbs_plugin_path(), "/usr/lib/criu/crx_ibverbs.so");
  ::unsetenv(kCriuLibdirEnv);
}

}  // namespace
