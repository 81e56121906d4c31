#include "checkpoint/criu_options.hpp"

#include "common/error.hpp"

namespace crx::checkpoint {

namespace {
struct Name {
  std::string_view name;
  CgroupMode mode;
};
constexpr Name kNames[] = {
    {"soft", CgroupMode::Soft},     {"full", CgroupMode::Full},
    {"strict", CgroupMode::Strict}, {"ignore", CgroupMode::Ignore},
    {"none", CgroupMode::None},     {"props", CgroupMode::Props},
    {"default", CgroupMode::Default},
};
}  // namespace

CgroupMode parse_cgroup_mode(std::string_view name) {
  for (const auto& n : kNames) {
    if (n.name == name) return n.mode;
  }
  throw Error("invalid --manage-cgroups-mode \"" + std::string(name) +
              "\": expected soft, full, strict, ignore, none, props or default");
}

std::string_view cgroup_mode_name(CgroupMode mode) {
  for (const auto& n : kNames) {
    if (n.mode == mode) return n.name;
  }
  return "default";
}

}  // namespace crx::checkpoint
