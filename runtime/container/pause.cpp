#include "container/pause.hpp"

#include "common/error.hpp"
#include "container/lifecycle.hpp"
#include "cgroup/cgroup.hpp"
#include "state/store.hpp"

namespace crx::container {

namespace {

cgroup::Cgroup cgroup_of(const state::ContainerState& st) {
  if (st.cgroup.is_null()) throw Error("container " + st.id + " has no cgroup to freeze");
  return cgroup::Cgroup::load(st.cgroup);
}

}  // namespace

void pause_container(const GlobalOptions& g, const std::string& id) {
  auto dir = state::StateDir::open(g.root, id);
  auto st = dir.load();
  auto status = current_status(dir, st);
  if (status == state::Status::Paused) throw Error("container " + id + " is already paused");
  if (status != state::Status::Running && status != state::Status::Created)
    throw Error("container " + id + ": container not running");
  cgroup_of(st).freeze();
}

void resume_container(const GlobalOptions& g, const std::string& id) {
  auto dir = state::StateDir::open(g.root, id);
  auto st = dir.load();
  auto status = current_status(dir, st);
  if (status == state::Status::Stopped) throw Error("container " + id + ": container not running");
  auto cg = cgroup_of(st);
  if (!cg.frozen()) throw Error("container " + id + ": container not paused");
  cg.thaw();
}

}  // namespace crx::container
