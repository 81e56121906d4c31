// state.json as StateDir::load() reads it: what crx wrote comes back, and a
// file of the wrong shape is a crx::Error naming the container, never
// another exception (found by tests/fuzz, fuzz_state).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "state/store.hpp"

namespace {

using crx::state::ContainerState;
using crx::state::StateDir;

std::string temp_root() {
  char tmpl[] = "/tmp/crx-state-test-XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl), nullptr);
  return tmpl;
}

TEST(StateJson, SaveLoadRoundTrip) {
  std::string root = temp_root();
  auto dir = StateDir::create(root, "c1");
  ContainerState st;
  st.id = "c1";
  st.pid = 42;
  st.pid_start_time = 7;
  st.annotations = {{"a", "b"}};
  dir.save(st);
  ContainerState back = dir.load();
  EXPECT_EQ(back.id, "c1");
  EXPECT_EQ(back.pid, 42);
  EXPECT_EQ(back.pid_start_time, 7u);
  EXPECT_EQ(back.annotations.at("a"), "b");
  crx::remove_tree(root);
}

TEST(StateJson, WrongShapesAreACorruptStateError) {
  std::string root = temp_root();
  auto dir = StateDir::create(root, "c1");
  for (std::string text : {"2", "[]", "\"x\"", "null", R"({"id":5})", R"({"pid":"1"})",
                           R"({"pid":1e300})", R"({"pid_start_time":-1.5})",
                           R"({"annotations":{"a":1}})", R"({"systemd_cgroup":"yes"})"}) {
    crx::write_file_atomic(dir.path() + "/state.json", text);
    try {
      dir.load();
      ADD_FAILURE() << "loaded " << text;
    } catch (const crx::Error& e) {
      EXPECT_NE(std::string(e.what()).find("state of container c1 is corrupt"), std::string::npos)
          << text << ": " << e.what();
    }
  }
  crx::remove_tree(root);
}

}  // namespace
