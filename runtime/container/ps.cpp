#include "container/ps.hpp"

#include <algorithm>
#include <sstream>

#include "common/error.hpp"
#include "cgroup/cgroup.hpp"
#include "state/store.hpp"

namespace crx::container {

std::vector<pid_t> container_pids(const GlobalOptions& g, const std::string& id) {
  auto dir = state::StateDir::open(g.root, id);
  auto st = dir.load();
  if (st.cgroup.is_null()) throw Error("container " + id + " has no cgroup");
  auto pids = cgroup::Cgroup::load(st.cgroup).pids();
  std::sort(pids.begin(), pids.end());
  return pids;
}

namespace {

std::vector<std::string> fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

}  // namespace

std::string filter_ps_output(const std::string& ps_output, const std::vector<pid_t>& pids) {
  std::istringstream in(ps_output);
  std::string header;
  std::getline(in, header);
  auto names = fields(header);
  auto it = std::find(names.begin(), names.end(), "PID");
  if (it == names.end()) throw Error("ps: couldn't find PID field in ps output");
  size_t column = static_cast<size_t>(it - names.begin());
  std::string out = header + "\n";
  for (std::string line; std::getline(in, line);) {
    auto f = fields(line);
    if (f.size() <= column) continue;
    char* end = nullptr;
    long pid = std::strtol(f[column].c_str(), &end, 10);
    if (end == f[column].c_str() || *end) continue;
    if (std::binary_search(pids.begin(), pids.end(), static_cast<pid_t>(pid))) out += line + "\n";
  }
  return out;
}

}  // namespace crx::container
