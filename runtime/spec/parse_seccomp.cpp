// LinuxSeccomp: actions, architectures, flags, operators and syscall names
// are all checked here, so the filter builder only sees valid names.
#include <seccomp.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "spec/parse_parts.hpp"
#include "spec/seccomp_names.hpp"

namespace crx::spec {
namespace detail {
namespace {

constexpr std::array kActions = {
    "SCMP_ACT_KILL",  "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP",
    "SCMP_ACT_ERRNO", "SCMP_ACT_TRACE",        "SCMP_ACT_ALLOW",       "SCMP_ACT_LOG",
    "SCMP_ACT_NOTIFY"};
constexpr std::array kOperators = {"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE",
                                   "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT",
                                   "SCMP_CMP_MASKED_EQ"};
constexpr std::array kFlags = {"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                               "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
                               "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"};
// Kernel syscalls newer than the libseccomp this is built with: accepted in
// profiles (Docker's default lists some) but not resolvable, so the filter
// builder skips them as runc does.
constexpr std::array kNewerSyscalls = {
    "statmount",     "listmount",  "lsm_get_self_attr", "lsm_set_self_attr",
    "lsm_list_modules", "mseal",   "setxattrat",        "getxattrat",
    "listxattrat",   "removexattrat", "open_tree_attr", "uretprobe",
    "file_getattr",  "file_setattr"};

template <size_t N>
bool contains(const std::array<const char*, N>& list, const std::string& value) {
  return std::any_of(list.begin(), list.end(), [&](const char* s) { return value == s; });
}

std::string parse_action(const Field& f) {
  std::string action = f.as_string();
  if (!contains(kActions, action)) f.fail("unknown seccomp action \"" + action + "\"");
  return action;
}

void check_architecture(const Field& f, const std::string& name) {
  const std::string prefix = "SCMP_ARCH_";
  bool ok = name.rfind(prefix, 0) == 0 && name.size() > prefix.size();
  if (ok) {
    std::string lib = name.substr(prefix.size());
    for (auto& c : lib) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ok = seccomp_arch_resolve_name(lib.c_str()) != 0;
  }
  if (!ok) f.fail("unknown seccomp architecture \"" + name + "\"");
}

bool known_syscall(const std::string& name) {
  if (seccomp_syscall_resolve_name(name.c_str()) != __NR_SCMP_ERROR) return true;
  return syscall_unknown_to_libseccomp(name);
}

bool allows_errno(const std::string& action) {
  return action == "SCMP_ACT_ERRNO" || action == "SCMP_ACT_TRACE";
}

SeccompArg parse_arg(const Field& f) {
  f.expect_object();
  SeccompArg a;
  auto index = f.required("index");
  a.index = index.as<unsigned>();
  if (a.index > 5) index.fail("argument index " + std::to_string(a.index) + " out of range [0, 5]");
  a.value = f.required("value").as_uint64();
  if (auto v2 = f.member("valueTwo")) a.value_two = v2->as_uint64();
  auto op = f.required("op");
  a.op = op.as_string();
  if (!contains(kOperators, a.op)) op.fail("unknown seccomp operator \"" + a.op + "\"");
  return a;
}

SeccompSyscall parse_syscall(const Field& f) {
  f.expect_object();
  SeccompSyscall s;
  auto names = f.required("names");
  names.for_each_element([&](const Field& n) {
    std::string name = n.as_string();
    if (!known_syscall(name)) n.fail("unknown syscall \"" + name + "\"");
    s.names.push_back(std::move(name));
  });
  if (s.names.empty()) names.fail("names must not be empty");
  s.action = parse_action(f.required("action"));
  if (auto e = f.member("errnoRet")) {
    if (!allows_errno(s.action))
      e->fail("errnoRet is only valid with SCMP_ACT_ERRNO or SCMP_ACT_TRACE, not " + s.action);
    s.errno_ret = e->as<unsigned>();
  }
  if (auto args = f.member("args"))
    args->for_each_element([&](const Field& a) { s.args.push_back(parse_arg(a)); });
  return s;
}

}  // namespace
}  // namespace detail

bool syscall_unknown_to_libseccomp(const std::string& name) {
  return detail::contains(detail::kNewerSyscalls, name) &&
         seccomp_syscall_resolve_name(name.c_str()) == __NR_SCMP_ERROR;
}

namespace detail {

Seccomp parse_seccomp_field(const Field& f) {
  f.expect_object();
  Seccomp s;
  auto def = f.required("defaultAction");
  s.default_action = parse_action(def);
  if (s.default_action == "SCMP_ACT_NOTIFY")
    def.fail("SCMP_ACT_NOTIFY cannot be the default action");
  if (auto e = f.member("defaultErrnoRet")) {
    if (!allows_errno(s.default_action))
      e->fail("defaultErrnoRet is only valid with SCMP_ACT_ERRNO or SCMP_ACT_TRACE, not " +
              s.default_action);
    s.default_errno_ret = e->as<unsigned>();
  }
  if (auto archs = f.member("architectures")) {
    archs->for_each_element([&](const Field& a) {
      std::string name = a.as_string();
      check_architecture(a, name);
      s.architectures.push_back(std::move(name));
    });
  }
  if (auto flags = f.member("flags")) {
    flags->for_each_element([&](const Field& fl) {
      std::string name = fl.as_string();
      if (!contains(kFlags, name)) fl.fail("unknown seccomp flag \"" + name + "\"");
      s.flags.push_back(std::move(name));
    });
  }
  s.listener_path = string_or_empty(f, "listenerPath");
  s.listener_metadata = string_or_empty(f, "listenerMetadata");
  bool uses_notify = false;
  if (auto calls = f.member("syscalls")) {
    calls->for_each_element([&](const Field& c) {
      s.syscalls.push_back(parse_syscall(c));
      if (s.syscalls.back().action == "SCMP_ACT_NOTIFY") uses_notify = true;
    });
  }
  if (uses_notify && s.listener_path.empty())
    f.fail("SCMP_ACT_NOTIFY is used but listenerPath is not set");
  if (!s.listener_path.empty() && s.listener_path[0] != '/')
    f.member("listenerPath")->fail("listenerPath must be an absolute path");
  return s;
}

}  // namespace detail
}  // namespace crx::spec
