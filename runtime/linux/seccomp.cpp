#include "linux/seccomp.hpp"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "linux/console.hpp"
#include "spec/seccomp_names.hpp"

namespace crx::linux_ {
namespace {

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

void check(int rc, const std::string& what) {
  if (rc < 0) throw_errno("seccomp: " + what, -rc);
}

scmp_compare compare_op(const std::string& name, const std::string& where) {
  static const std::pair<const char*, scmp_compare> ops[] = {
      {"SCMP_CMP_NE", SCMP_CMP_NE}, {"SCMP_CMP_LT", SCMP_CMP_LT},
      {"SCMP_CMP_LE", SCMP_CMP_LE}, {"SCMP_CMP_EQ", SCMP_CMP_EQ},
      {"SCMP_CMP_GE", SCMP_CMP_GE}, {"SCMP_CMP_GT", SCMP_CMP_GT},
      {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};
  for (const auto& [n, op] : ops)
    if (name == n) return op;
  throw Error("seccomp: " + where + ": unknown operator \"" + name + "\"");
}

// Conditions of one syscall entry. Several conditions on the same argument
// cannot be ANDed in one libseccomp rule; like runc we then add one rule per
// condition (OR), otherwise one rule with all of them (AND).
std::vector<std::vector<scmp_arg_cmp>> rule_sets(const spec::SeccompSyscall& sc,
                                                const std::string& where) {
  std::vector<scmp_arg_cmp> all;
  unsigned per_index[6] = {};
  bool repeated = false;
  for (const auto& a : sc.args) {
    if (a.index > 5)
      throw Error("seccomp: " + where + ": argument index " + std::to_string(a.index) +
                  " out of range 0..5");
    scmp_arg_cmp c{};
    c.arg = a.index;
    c.op = compare_op(a.op, where);
    c.datum_a = a.value;
    c.datum_b = a.value_two;
    all.push_back(c);
    if (++per_index[a.index] > 1) repeated = true;
  }
  std::vector<std::vector<scmp_arg_cmp>> sets;
  if (repeated) {
    for (const auto& c : all) sets.push_back({c});
  } else {
    sets.push_back(std::move(all));
  }
  return sets;
}

Ctx build_ctx(const spec::Seccomp& s, bool* uses_notify) {
  if (s.default_action.empty()) throw Error("seccomp: defaultAction is required");
  if (s.default_action == "SCMP_ACT_NOTIFY")
    throw Error("seccomp: defaultAction SCMP_ACT_NOTIFY is not allowed");
  const uint32_t def = seccomp_action(s.default_action, s.default_errno_ret);
  Ctx ctx(seccomp_init(def));
  if (!ctx) throw Error("seccomp: cannot initialise filter with " + s.default_action);
  // crx loads the program itself; keep libseccomp from touching no_new_privs.
  check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0), "disable NNP attribute");
  for (const auto& name : s.architectures) {
    int rc = seccomp_arch_add(ctx.get(), seccomp_arch(name));
    if (rc < 0 && rc != -EEXIST) check(rc, "add architecture " + name);
  }
  for (const auto& flag : s.flags) seccomp_flag(flag);  // validate names early

  *uses_notify = false;
  for (size_t i = 0; i < s.syscalls.size(); ++i) {
    const auto& sc = s.syscalls[i];
    const std::string where = "syscalls[" + std::to_string(i) + "]";
    const uint32_t action = seccomp_action(sc.action, sc.errno_ret);
    const auto sets = rule_sets(sc, where);
    for (const auto& name : sc.names) {
      const int nr = seccomp_syscall_resolve_name(name.c_str());
      // Syscalls newer than this libseccomp (Docker profiles list them) are
      // skipped as runc does; any other unknown name is an error.
      if (nr == __NR_SCMP_ERROR && spec::syscall_unknown_to_libseccomp(name)) continue;
      if (nr == __NR_SCMP_ERROR)
        throw Error("seccomp: " + where + ": unknown syscall \"" + name + "\"");
      // libseccomp refuses rules equal to the default action; runc skips them.
      if (action == def) continue;
      if (action == SCMP_ACT_NOTIFY) *uses_notify = true;
      for (const auto& conds : sets) {
        check(seccomp_rule_add_array(ctx.get(), action, nr, conds.size(), conds.data()),
              where + ": add rule for \"" + name + "\" (" + sc.action + ")");
      }
    }
  }
  return ctx;
}

std::string export_with(const Ctx& ctx, int (*exporter)(const scmp_filter_ctx, int),
                        const char* what) {
  UniqueFd fd(::memfd_create("crx-seccomp", MFD_CLOEXEC));
  if (!fd) throw_errno("seccomp: memfd_create");
  check(exporter(ctx.get(), fd.get()), std::string("export ") + what);
  const off_t size = ::lseek(fd.get(), 0, SEEK_END);
  if (size < 0) throw_errno("seccomp: lseek");
  std::string out(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = retry_eintr(
        [&] { return ::pread(fd.get(), out.data() + done, out.size() - done, done); });
    if (n <= 0) throw_errno("seccomp: read exported filter");
    done += static_cast<size_t>(n);
  }
  return out;
}

std::string flag_names(unsigned flags) {
  static const std::pair<unsigned, const char*> names[] = {
      {SECCOMP_FILTER_FLAG_TSYNC, "TSYNC"},
      {SECCOMP_FILTER_FLAG_LOG, "LOG"},
      {SECCOMP_FILTER_FLAG_SPEC_ALLOW, "SPEC_ALLOW"},
      {SECCOMP_FILTER_FLAG_NEW_LISTENER, "NEW_LISTENER"},
      {SECCOMP_FILTER_FLAG_TSYNC_ESRCH, "TSYNC_ESRCH"},
      {1u << 5, "WAIT_KILLABLE_RECV"}};
  std::string out;
  for (const auto& [bit, n] : names)
    if (flags & bit) out += (out.empty() ? "" : "|") + std::string(n);
  return out.empty() ? "none" : out;
}

}  // namespace

uint32_t seccomp_action(const std::string& name, std::optional<unsigned> errno_ret) {
  const unsigned ret = errno_ret.value_or(EPERM);
  if (name == "SCMP_ACT_KILL" || name == "SCMP_ACT_KILL_THREAD") return SCMP_ACT_KILL_THREAD;
  if (name == "SCMP_ACT_KILL_PROCESS") return SCMP_ACT_KILL_PROCESS;
  if (name == "SCMP_ACT_TRAP") return SCMP_ACT_TRAP;
  if (name == "SCMP_ACT_ERRNO") return SCMP_ACT_ERRNO(ret);
  if (name == "SCMP_ACT_TRACE") return SCMP_ACT_TRACE(ret);
  if (name == "SCMP_ACT_ALLOW") return SCMP_ACT_ALLOW;
  if (name == "SCMP_ACT_LOG") return SCMP_ACT_LOG;
  if (name == "SCMP_ACT_NOTIFY") return SCMP_ACT_NOTIFY;
  throw Error("seccomp: unknown action \"" + name + "\"");
}

uint32_t seccomp_arch(const std::string& name) {
  const std::string prefix = "SCMP_ARCH_";
  if (name.rfind(prefix, 0) == 0) {
    std::string lower = name.substr(prefix.size());
    for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (uint32_t token = seccomp_arch_resolve_name(lower.c_str()); token != 0) return token;
  }
  throw Error("seccomp: unknown architecture \"" + name + "\"");
}

unsigned seccomp_flag(const std::string& name) {
  if (name == "SECCOMP_FILTER_FLAG_TSYNC") return SECCOMP_FILTER_FLAG_TSYNC;
  if (name == "SECCOMP_FILTER_FLAG_LOG") return SECCOMP_FILTER_FLAG_LOG;
  if (name == "SECCOMP_FILTER_FLAG_SPEC_ALLOW") return SECCOMP_FILTER_FLAG_SPEC_ALLOW;
  if (name == "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") return 1u << 5;
  throw Error("seccomp: unknown flag \"" + name + "\"");
}

SeccompFilter build_seccomp(const spec::Seccomp& s) {
  bool uses_notify = false;
  Ctx ctx = build_ctx(s, &uses_notify);
  const std::string bpf = export_with(ctx, seccomp_export_bpf, "BPF");
  if (bpf.empty() || bpf.size() % sizeof(sock_filter) != 0)
    throw Error("seccomp: libseccomp exported a malformed program");
  std::vector<sock_filter> program(bpf.size() / sizeof(sock_filter));
  std::memcpy(program.data(), bpf.data(), bpf.size());
  unsigned flags = 0;
  for (const auto& f : s.flags) flags |= seccomp_flag(f);
  // The kernel accepts WAIT_KILLABLE_RECV only together with a listener.
  if (!uses_notify) flags &= ~(1u << 5);
  if (uses_notify && s.listener_path.empty())
    throw Error("seccomp: SCMP_ACT_NOTIFY needs linux.seccomp.listenerPath");
  return SeccompFilter(std::move(program), flags, uses_notify);
}

std::string seccomp_pfc(const spec::Seccomp& s) {
  bool uses_notify = false;
  Ctx ctx = build_ctx(s, &uses_notify);
  return export_with(ctx, seccomp_export_pfc, "PFC");
}

UniqueFd SeccompFilter::load() const {
  if (program_.empty()) throw Error("seccomp: no filter program to load");
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(program_.size());
  prog.filter = const_cast<sock_filter*>(program_.data());
  unsigned flags = flags_;
  if (uses_notify_) {
    flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
    // TSYNC and NEW_LISTENER together need TSYNC_ESRCH.
    if (flags & SECCOMP_FILTER_FLAG_TSYNC) flags |= SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
  }
  long rc = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
  if (rc < 0) {
    const int err = errno;
    std::string what = "seccomp: load filter (flags " + flag_names(flags) + ")";
    if (err == EACCES) what += " without noNewPrivileges or CAP_SYS_ADMIN";
    throw_errno(what, err);
  }
  return uses_notify_ ? UniqueFd(static_cast<int>(rc)) : UniqueFd();
}

void send_seccomp_listener_fd(int connected_fd, int notify_fd, int pid,
                              const std::string& metadata, const nlohmann::json& state) {
  const std::string version =
      state.is_object() ? state.value("ociVersion", "1.0.2") : std::string("1.0.2");
  nlohmann::json msg = {{"ociVersion", version},
                        {"fds", {"seccompFd"}},
                        {"pid", pid},
                        {"metadata", metadata},
                        {"state", state}};
  send_fd(connected_fd, notify_fd, msg.dump(), "seccomp listener");
}

void send_seccomp_listener_fd(const std::string& listener_path, int notify_fd, int pid,
                              const std::string& metadata, const nlohmann::json& state) {
  UniqueFd sock = connect_unix_socket(listener_path, "seccomp listener");
  send_seccomp_listener_fd(sock.get(), notify_fd, pid, metadata, state);
}

}  // namespace crx::linux_
