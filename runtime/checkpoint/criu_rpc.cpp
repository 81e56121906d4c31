#include "checkpoint/criu_rpc.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "checkpoint/criu_plugins.hpp"
#include "cgroup/root_options.hpp"
#include "common/child_process.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/retry_eintr.hpp"
#include "criu-rpc/rpc.pb-c.h"

namespace crx::checkpoint {
namespace {

std::string g_criu_binary = "criu";
constexpr size_t kMaxMessage = 64 * 1024;
constexpr std::string_view kDeferResumeEnv = "CRX_VERBS_DEFER_RESUME";
constexpr std::string_view kPreloadEnv = "CRX_VERBS_PRELOAD";
constexpr std::string_view kLdPreloadEnv = "LD_PRELOAD";

bool is_var(std::string_view entry, std::string_view name) {
  return entry.starts_with(name) && entry.size() > name.size() && entry[name.size()] == '=';
}

// Our environment for `criu swrk`, with CRX_VERBS_DEFER_RESUME=1 exactly
// when asked (the verbs plugin reads it; an inherited one never counts),
// and the verbs plugin preloaded when asked (StartedRestore::Setup).
std::vector<std::string> criu_environment(bool defer_verbs_resume,
                                          const std::string& preload_plugin = {}) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view v(*e);
    if (is_var(v, kDeferResumeEnv) || is_var(v, kPreloadEnv)) continue;
    env.emplace_back(v);
  }
  auto set = [&env](std::string_view name, std::string_view value) {
    env.emplace_back(name).append("=").append(value);
  };
  if (defer_verbs_resume) set(kDeferResumeEnv, "1");
  if (!preload_plugin.empty()) {
    set(kLdPreloadEnv, preload_plugin);
    set(kPreloadEnv, "1");
  }
  return env;
}

// The plugin to preload into a waiting criu, or "" to load none: an
// LD_PRELOAD we inherited stays as it is (the operator's; ours would
// replace it), and a path ld.so would split (':' or ' ') or cannot read
// is no use.
std::string preloadable_plugin(const std::string& path) {
  if (path.empty() || std::getenv(std::string(kLdPreloadEnv).c_str())) return {};
  if (path.find_first_of(": ") != std::string::npos || ::access(path.c_str(), R_OK) != 0)
    return {};
  return path;
}

// criu_opts with the storage its pointers point into.
struct OptsBuilder {
  CriuOpts opts = CRIU_OPTS__INIT;
  CriuPageServerInfo ps = CRIU_PAGE_SERVER_INFO__INIT;
  std::vector<ExtMountMap> ext_mnt;
  std::vector<ExtMountMap*> ext_mnt_ptrs;
  std::vector<char*> external;
  std::vector<::InheritFd> inherit;
  std::vector<::InheritFd*> inherit_ptrs;
  std::vector<CgroupRoot> cg_roots;
  std::vector<CgroupRoot*> cg_root_ptrs;
  std::array<JoinNamespace, 3> joins{};
  std::array<JoinNamespace*, 3> join_ptrs{};
  std::vector<int> child_fds;  // fds CRIU itself must inherit
  std::string config_file;
  std::string libdir;                     // the config file's, "" for none
  std::vector<std::string> config_lines;  // beyond libdir, for the config file
  bool defer_verbs_resume = false;

  static char* s(const std::string& v) { return const_cast<char*>(v.c_str()); }

  void common(const CommonOptions& o) {
    if (o.images_dir_fd < 0) throw Error("criu: no images directory given");
    opts.images_dir_fd = o.images_dir_fd;
    if (o.work_dir_fd >= 0) {
      opts.has_work_dir_fd = true;
      opts.work_dir_fd = o.work_dir_fd;
    }
    if (!o.log_file.empty()) opts.log_file = s(o.log_file);
    opts.has_log_level = true;
    opts.log_level = o.log_level;
    if (!o.root.empty()) opts.root = s(o.root);
    set(opts.has_tcp_established, opts.tcp_established, o.tcp_established);
    set(opts.has_ext_unix_sk, opts.ext_unix_sk, o.ext_unix_sk);
    set(opts.has_shell_job, opts.shell_job, o.shell_job);
    set(opts.has_file_locks, opts.file_locks, o.file_locks);
    set(opts.has_notify_scripts, opts.notify_scripts, o.notify_scripts);
    set(opts.has_orphan_pts_master, opts.orphan_pts_master, o.orphan_pts_master);
    if (o.manage_cgroups_mode) {
      opts.has_manage_cgroups_mode = true;
      opts.manage_cgroups_mode = to_rpc(*o.manage_cgroups_mode);
    }
    ext_mnt.reserve(o.ext_mounts.size());
    for (const auto& m : o.ext_mounts) {
      ExtMountMap e = EXT_MOUNT_MAP__INIT;
      e.key = s(m.key);
      e.val = s(m.value);
      ext_mnt.push_back(e);
    }
    for (auto& e : ext_mnt) ext_mnt_ptrs.push_back(&e);
    opts.n_ext_mnt = ext_mnt_ptrs.size();
    opts.ext_mnt = ext_mnt_ptrs.data();
    for (const auto& e : o.external) external.push_back(s(e));
    opts.n_external = external.size();
    opts.external = external.data();
    const int config_dir = o.work_dir_fd >= 0 ? o.work_dir_fd : o.images_dir_fd;
    libdir = !o.plugins       ? make_no_plugins_dir(config_dir)
             : o.criu_libdir ? *o.criu_libdir
                             : criu_plugin_dir();
    if (!libdir.empty() || !config_lines.empty()) {
      config_file = write_criu_config(config_dir, libdir, config_lines);
      opts.config_file = s(config_file);
    }
  }

  void page_server(const PageServerTarget& t) {
    if (!t.address.empty()) ps.address = s(t.address);
    if (t.port > 0) {
      ps.has_port = true;
      ps.port = t.port;
    }
    if (t.socket_fd >= 0) {
      ps.has_fd = true;
      ps.fd = t.socket_fd;
      child_fds.push_back(t.socket_fd);
    }
    opts.ps = &ps;
  }

  void dump(const DumpOptions& o) {
    if (o.lazy_page_socket >= 0) {
      if (!o.lazy_pages) throw Error("criu dump: a lazy page socket without lazy pages");
      // Inherited under the same number (SwrkSession keeps child_fds).
      config_lines.push_back("ps-socket " + std::to_string(o.lazy_page_socket));
      child_fds.push_back(o.lazy_page_socket);
    }
    // rpc.proto has no field for it; the config file is parsed after the
    // request, as `criu dump --file-validation filesize`.
    if (o.validate_file_sizes_only) config_lines.push_back("file-validation filesize");
    common(o);
    if (o.pid <= 0) throw Error("criu dump: no pid given");
    opts.has_pid = true;
    opts.pid = o.pid;
    set(opts.has_leave_running, opts.leave_running, o.leave_running);
    set(opts.has_track_mem, opts.track_mem, o.track_mem);
    set(opts.has_lazy_pages, opts.lazy_pages, o.lazy_pages);
    set(opts.has_auto_dedup, opts.auto_dedup, o.auto_dedup);
    if (!o.parent_img.empty()) opts.parent_img = s(o.parent_img);
    if (o.page_server) page_server(*o.page_server);
    if (o.status_fd >= 0) {
      opts.has_status_fd = true;
      opts.status_fd = o.status_fd;
    }
    if (o.empty_ns) {
      opts.has_empty_ns = true;
      opts.empty_ns = o.empty_ns;
    }
    if (!o.freeze_cgroup.empty()) opts.freeze_cgroup = s(o.freeze_cgroup);
    if (o.nftables_network_lock) {
      opts.has_network_lock = true;
      opts.network_lock = CRIU_NETWORK_LOCK_METHOD__NFTABLES;
    }
    if (o.pre_dump_read) {
      opts.has_pre_dump_mode = true;
      opts.pre_dump_mode = CRIU_PRE_DUMP_MODE__VM_READ;
    }
  }

  void restore(const RestoreOptions& o) {
    common(o);
    defer_verbs_resume = o.defer_verbs_resume;
    set(opts.has_rst_sibling, opts.rst_sibling, o.rst_sibling);
    set(opts.has_mntns_compat_mode, opts.mntns_compat_mode, o.mount_engine_compat);
    set(opts.has_lazy_pages, opts.lazy_pages, o.lazy_pages);
    set(opts.has_auto_dedup, opts.auto_dedup, o.auto_dedup);
    if (o.page_server) page_server(*o.page_server);
    inherit.reserve(o.inherit_fds.size());
    for (const auto& i : o.inherit_fds) {
      ::InheritFd f = INHERIT_FD__INIT;
      f.key = s(i.key);
      f.fd = i.fd;
      inherit.push_back(f);
      child_fds.push_back(i.fd);
    }
    for (auto& f : inherit) inherit_ptrs.push_back(&f);
    opts.n_inherit_fd = inherit_ptrs.size();
    opts.inherit_fd = inherit_ptrs.data();
    cg_roots.reserve(o.cgroup_roots.size());
    for (const auto& [ctrl, path] : o.cgroup_roots) {
      CgroupRoot r = CGROUP_ROOT__INIT;
      if (!ctrl.empty()) r.ctrl = s(ctrl);
      r.path = s(path);
      cg_roots.push_back(r);
    }
    for (auto& r : cg_roots) cg_root_ptrs.push_back(&r);
    opts.n_cg_root = cg_root_ptrs.size();
    opts.cg_root = cg_root_ptrs.data();
    if (!o.cgroup_yard.empty()) opts.cgroup_yard = s(o.cgroup_yard);
    const std::pair<const char*, const std::string*> wanted[] = {
        {"net", &o.join_netns}, {"uts", &o.join_uts}, {"ipc", &o.join_ipc}};
    size_t n = 0;
    for (const auto& [type, file] : wanted) {
      if (file->empty()) continue;
      joins[n] = JOIN_NAMESPACE__INIT;
      joins[n].ns = const_cast<char*>(type);
      joins[n].ns_file = s(*file);
      join_ptrs[n] = &joins[n];
      ++n;
    }
    if (n > 0) {
      opts.n_join_ns = n;
      opts.join_ns = join_ptrs.data();
    }
  }

  // All that CRIU reads of req, this builder's request: its packed bytes
  // and the config file's lines. Two requests with the same key ask CRIU
  // for the same thing.
  std::string key(const CriuReq& req) const {
    std::string out(criu_req__get_packed_size(&req), '\0');
    criu_req__pack(&req, reinterpret_cast<uint8_t*>(out.data()));
    out += '\n' + libdir;
    for (const auto& line : config_lines) out += '\n' + line;
    return out;
  }

  static void set(protobuf_c_boolean& has, protobuf_c_boolean& field, bool v) {
    if (v) {
      has = true;
      field = true;
    }
  }

  static CriuCgMode to_rpc(CgroupMode m) {
    switch (m) {
      case CgroupMode::Soft: return CRIU_CG_MODE__SOFT;
      case CgroupMode::Full: return CRIU_CG_MODE__FULL;
      case CgroupMode::Strict: return CRIU_CG_MODE__STRICT;
      case CgroupMode::Ignore: return CRIU_CG_MODE__IGNORE;
      case CgroupMode::None: return CRIU_CG_MODE__CG_NONE;
      case CgroupMode::Props: return CRIU_CG_MODE__PROPS;
      case CgroupMode::Default: return CRIU_CG_MODE__DEFAULT;
    }
    return CRIU_CG_MODE__DEFAULT;
  }
};

struct RespDeleter {
  void operator()(CriuResp* r) const { criu_resp__free_unpacked(r, nullptr); }
};
using RespPtr = std::unique_ptr<CriuResp, RespDeleter>;

// One `criu swrk` child serving one request.
class SwrkSession {
 public:
  // die_with_us: criu swrk is killed when we die (a restore: the tasks it
  // made are killed by restore_guard.hpp's guard then; a dump must not,
  // CRIU has to cure and let go of the tasks it seized).
  // output_fd: CRIU's stdout and stderr (-1: /dev/null).
  SwrkSession(std::string action, const std::vector<int>& child_fds, bool defer_verbs_resume,
              bool die_with_us, int output_fd, const std::string& preload_plugin = {},
              const std::vector<int>& namespace_fds = {})
      : action_(std::move(action)) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
      throw_errno("criu " + action_ + ": socketpair");
    sock_.reset(sv[0]);
    UniqueFd theirs(sv[1]);
    std::vector<std::string> env = criu_environment(defer_verbs_resume, preload_plugin);
    SpawnOptions o;
    o.keep_fds = child_fds;
    o.keep_fds.push_back(theirs.get());
    o.quiet = output_fd < 0;
    o.stdout_fd = output_fd;
    o.stderr_fd = output_fd;
    o.env = &env;
    o.die_with_parent = die_with_us;
    o.namespace_fds = namespace_fds;
    child_ = spawn({g_criu_binary, "swrk", std::to_string(theirs.get())}, o);
    // CRIU's cgroup2 mounts reset the host's cgroup2 options (it mounts
    // none before a request): put back in the destructor
    // (cgroup/root_options.hpp).
    try {
      host_cgroup_ = cgroup::RootOptions::acquire();
      holds_host_cgroup_ = true;
    } catch (const std::exception& e) {
      log::warn("criu " + action_ + ": the host's cgroup2 options cannot be read, so they are "
                "not kept across CRIU's run: " + e.what());
    }
  }

  ~SwrkSession() {
    sock_.reset();
    // CRIU exits once its socket closes; give it the chance before SIGKILL
    // (child_'s destructor). Nothing may escape a destructor: a waitpid
    // that fails means the child is no longer ours to kill or reap.
    try {
      int status;
      if (child_.running()) child_.wait_for(std::chrono::seconds(2), &status);
    } catch (const Error& e) {
      log::warn("criu " + action_ + ": " + e.what());
      child_.release();
    }
    put_back_host_cgroup();
  }

  // False when CRIU is gone (EPIPE and friends).
  bool send(const CriuReq& req) {
    size_t len = criu_req__get_packed_size(&req);
    std::vector<uint8_t> buf(len);
    criu_req__pack(&req, buf.data());
    ssize_t n = retry_eintr([&] { return ::send(sock_.get(), buf.data(), buf.size(), MSG_NOSIGNAL); });
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)) return false;
    if (n < 0) throw_errno("criu " + action_ + ": send request");
    return true;
  }

  // Receives one response; a passed fd lands in *fd.
  RespPtr receive(UniqueFd* fd) {
    std::vector<uint8_t> buf(kMaxMessage);
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov{buf.data(), buf.size()};
    struct msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = retry_eintr([&] { return ::recvmsg(sock_.get(), &msg, MSG_CMSG_CLOEXEC); });
    if (n < 0 && errno == ECONNRESET) return nullptr;
    if (n < 0) throw_errno("criu " + action_ + ": receive response");
    if (n == 0) return nullptr;  // CRIU went away
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && fd) {
        int received;
        std::memcpy(&received, CMSG_DATA(c), sizeof received);
        fd->reset(received);
      }
    }
    CriuResp* resp = criu_resp__unpack(nullptr, static_cast<size_t>(n), buf.data());
    if (!resp) throw Error("criu " + action_ + ": malformed response from criu swrk");
    return RespPtr(resp);
  }

  pid_t pid() const { return child_.pid(); }

  // Why CRIU is gone, when it is.
  std::string exit_reason() {
    sock_.reset();
    if (!child_.running()) return "criu exited";
    int status = child_.wait();
    return "criu " + describe_wait_status(status);
  }

 private:
  void put_back_host_cgroup() noexcept {
    if (!holds_host_cgroup_) return;
    cgroup::RootOptions::release();
    if (!host_cgroup_) return;
    try {
      if (host_cgroup_->put_back())
        log::debug("criu " + action_ + ": the host's cgroup2 options put back after CRIU's run");
    } catch (const std::exception& e) {
      log::warn("criu " + action_ + ": CRIU's run reset the host's cgroup2 options (" +
                host_cgroup_->mountpoint() + ") and they cannot be put back: " + e.what());
    }
  }

  std::string action_;
  std::optional<cgroup::RootOptions> host_cgroup_;
  bool holds_host_cgroup_ = false;
  UniqueFd sock_;
  ChildProcess child_;
};

// What CRIU and the libraries it runs write to stdout/stderr (libnftables'
// "Error: No such file or directory" from the network-lock clean-up on
// every successful restore: nft_lock_tables.hpp, CRIU's messages
// before its log is open) belongs in CRIU's log, not on the user's
// terminal or in the receiver's journal: crx reports failures itself, with
// the log's tail (fail()). CRIU opens its log O_APPEND too, so both
// writers' lines land whole. No log file: /dev/null.
UniqueFd open_output_for_criu(const CommonOptions* o) {
  if (!o || o->log_file.empty()) return {};
  int dir = o->work_dir_fd >= 0 ? o->work_dir_fd : o->images_dir_fd;
  return UniqueFd(::openat(dir, o->log_file.c_str(),
                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
}

std::string read_log(const CommonOptions& o) {
  if (o.log_file.empty()) return {};
  int dir = o.work_dir_fd >= 0 ? o.work_dir_fd : o.images_dir_fd;
  UniqueFd fd(::openat(dir, o.log_file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  std::string out;
  char buf[16384];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

[[noreturn]] void fail(const std::string& action, const CommonOptions* o, const std::string& why) {
  std::string msg = "criu " + action + " failed";
  std::string tail = o ? criu_log_tail(read_log(*o)) : std::string();
  if (!tail.empty()) {
    msg += ": " + tail;
  } else if (!why.empty()) {
    msg += ": " + why;
  }
  if (o && !o->log_file.empty()) msg += " (log: " + o->log_file + ")";
  throw Error(msg);
}

// Answers CRIU's notification: go on (ok) or stop. False when CRIU is gone.
bool send_answer(SwrkSession& session, bool ok) {
  CriuReq ack = CRIU_REQ__INIT;
  ack.type = CRIU_REQ_TYPE__NOTIFY;
  ack.has_notify_success = true;
  ack.notify_success = ok;
  return session.send(ack);
}

void answer(SwrkSession& session, const std::string& action, const CommonOptions* o,
            const std::string& script, bool ok) {
  if (!send_answer(session, ok)) fail(action, o, session.exit_reason() + " during " + script);
}

// Serves CRIU's notifications on a request of `type` sent already, until
// its final response, returned. With stop_at, a notification of that name
// is left unanswered instead, and null returned: CRIU waits there.
RespPtr serve_replies(SwrkSession& session, const std::string& action, int type,
                      const CommonOptions* o, const NotifyHandler& notify,
                      std::string_view stop_at = {}) {
  std::optional<std::string> handler_error;
  for (;;) {
    UniqueFd passed;
    RespPtr resp = session.receive(&passed);
    if (!resp) fail(action, o, session.exit_reason() + " without answering");
    if (resp->type != CRIU_REQ_TYPE__NOTIFY) {
      if (handler_error) throw Error(*handler_error);
      if (resp->type != type) {
        fail(action, o, "unexpected response type " + std::to_string(resp->type));
      }
      if (!resp->success) {
        std::string why;
        if (resp->cr_errmsg) why = resp->cr_errmsg;
        if (resp->has_cr_errno && resp->cr_errno) {
          why += (why.empty() ? "" : ", ") + std::string("errno ") + std::to_string(resp->cr_errno);
        }
        fail(action, o, why);
      }
      return resp;
    }
    Notification n;
    if (resp->notify) {
      if (resp->notify->script) n.script = resp->notify->script;
      n.pid = resp->notify->has_pid ? resp->notify->pid : 0;
    }
    if (!stop_at.empty() && n.script == stop_at) return nullptr;
    n.fd = std::move(passed);
    bool ok = true;
    if (notify && !handler_error) {
      try {
        notify(n);
      } catch (const std::exception& e) {
        ok = false;
        handler_error = "criu " + action + " stopped at " + n.script + ": " + e.what();
      }
    }
    answer(session, action, o, n.script, ok);
  }
}

// Sends req to a waiting CRIU and serves notifications until the final
// response.
RespPtr serve(SwrkSession& session, const std::string& action, CriuReq& req,
              const CommonOptions* o, const NotifyHandler& notify) {
  if (!session.send(req)) fail(action, o, session.exit_reason() + " before reading the request");
  return serve_replies(session, action, req.type, o, notify);
}

// One CRIU child for one request: started, asked, served.
// CRIU runs in the namespaces of namespace_fds (none: ours).
RespPtr run(const std::string& action, CriuReq& req, const std::vector<int>& child_fds,
            const CommonOptions* o, const NotifyHandler& notify, bool defer_verbs_resume = false,
            const std::vector<int>& namespace_fds = {}) {
  UniqueFd output = open_output_for_criu(o);
  SwrkSession session(action, child_fds, defer_verbs_resume, req.type == CRIU_REQ_TYPE__RESTORE,
                      output.get(), {}, namespace_fds);
  return serve(session, action, req, o, notify);
}

}  // namespace

void set_criu_binary(std::string path) { g_criu_binary = std::move(path); }
const std::string& criu_binary() { return g_criu_binary; }

CriuVersion criu_version() {
  CriuReq req = CRIU_REQ__INIT;
  req.type = CRIU_REQ_TYPE__VERSION;
  RespPtr resp = run("version", req, {}, nullptr, {});
  if (!resp->version) throw Error("criu version: CRIU sent no version");
  CriuVersion v;
  v.major = resp->version->major_number;
  v.minor = resp->version->minor_number;
  v.sublevel = resp->version->has_sublevel ? resp->version->sublevel : 0;
  if (resp->version->gitid) v.gitid = resp->version->gitid;
  return v;
}

bool criu_check() {
  CriuReq req = CRIU_REQ__INIT;
  req.type = CRIU_REQ_TYPE__CHECK;
  try {
    run("check", req, {}, nullptr, {});
    return true;
  } catch (const Error&) {
    return false;
  }
}

void criu_ensure_kerndat_cache() {
  // CRIU's KDAT_RUNDIR is /run on Debian (criu/include/kerndat.h).
  if (::access("/run/criu.kdat", F_OK) == 0) return;
  CriuReq req = CRIU_REQ__INIT;
  req.type = CRIU_REQ_TYPE__FEATURE_CHECK;
  CriuFeatures none = CRIU_FEATURES__INIT;  // asks for no feature: the probe is the point
  req.features = &none;
  run("feature check", req, {}, nullptr, {});
}

static void dump_like(const char* action, CriuReqType type, const DumpOptions& o,
                      const NotifyHandler& notify) {
  OptsBuilder b;
  b.dump(o);
  CriuReq req = CRIU_REQ__INIT;
  req.type = type;
  req.opts = &b.opts;
  run(action, req, b.child_fds, &o, notify, false, o.criu_namespace_fds);
}

void criu_dump(const DumpOptions& o, const NotifyHandler& notify) {
  dump_like("dump", CRIU_REQ_TYPE__DUMP, o, notify);
}

// SINGLE_PRE_DUMP, not PRE_DUMP: after a PRE_DUMP CRIU waits on the socket
// for the next round or the final DUMP and logs "Can't recv request" when
// we close it instead; SINGLE_PRE_DUMP answers once and ends cleanly.
void criu_pre_dump(const DumpOptions& o, const NotifyHandler& notify) {
  dump_like("pre-dump", CRIU_REQ_TYPE__SINGLE_PRE_DUMP, o, notify);
}

pid_t criu_restore(const RestoreOptions& o, const NotifyHandler& notify) {
  OptsBuilder b;
  b.restore(o);
  CriuReq req = CRIU_REQ__INIT;
  req.type = CRIU_REQ_TYPE__RESTORE;
  req.opts = &b.opts;
  RespPtr resp = run("restore", req, b.child_fds, &o, notify, b.defer_verbs_resume);
  if (!resp->restore) throw Error("criu restore: CRIU sent no pid");
  return resp->restore->pid;
}

namespace {

// Namespaces by their inodes, in the order given.
std::vector<std::pair<dev_t, ino_t>> namespace_ids(const std::vector<int>& fds) {
  std::vector<std::pair<dev_t, ino_t>> out;
  for (int fd : fds) {
    struct stat st{};
    if (::fstat(fd, &st) != 0) throw_errno("criu dump: a namespace to run CRIU in");
    out.emplace_back(st.st_dev, st.st_ino);
  }
  return out;
}

}  // namespace

class StartedRestore::Session : public SwrkSession {
 public:
  using SwrkSession::SwrkSession;
};

StartedRestore::StartedRestore(const Setup& s)
    : setup_(s),
      session_(std::make_unique<Session>("restore", s.inherit_fds, s.defer_verbs_resume,
                                         /*die_with_us=*/true, s.output_fd,
                                         preloadable_plugin(s.preload_verbs_plugin))) {}

StartedRestore::~StartedRestore() = default;

pid_t StartedRestore::pid() const { return session_ ? session_->pid() : -1; }

pid_t StartedRestore::run(const RestoreOptions& o, const NotifyHandler& notify) {
  if (!session_) throw Error("criu restore: the waiting criu was used already", Cause::Invalid);
  // Gone at the end, whatever happens: one request per child.
  std::unique_ptr<Session> session = std::move(session_);
  OptsBuilder b;
  b.restore(o);
  for (int fd : b.child_fds) {
    bool kept = false;
    for (int k : setup_.inherit_fds) kept = kept || k == fd;
    if (!kept)
      throw Error("criu restore: the request names fd " + std::to_string(fd) +
                      ", which the criu started ahead of it did not inherit",
                  Cause::Invalid);
  }
  if (b.defer_verbs_resume != setup_.defer_verbs_resume)
    throw Error("criu restore: the request wants the verbs plugin's other resume mode than the "
                "criu started ahead of it has",
                Cause::Invalid);
  CriuReq req = CRIU_REQ__INIT;
  req.type = CRIU_REQ_TYPE__RESTORE;
  req.opts = &b.opts;
  RespPtr resp = serve(*session, "restore", req, &o, notify);
  if (!resp->restore) throw Error("criu restore: CRIU sent no pid");
  return resp->restore->pid;
}

class StartedDump::Session : public SwrkSession {
 public:
  using SwrkSession::SwrkSession;
};

StartedDump::StartedDump(const Setup& s) : setup_(s) {
  namespaces_ = namespace_ids(s.namespace_fds);
  session_ = std::make_unique<Session>("dump", s.inherit_fds, /*defer_verbs_resume=*/false,
                                       /*die_with_us=*/false, s.output_fd, std::string(),
                                       s.namespace_fds);
  // Its version, with keep_open: once the answer is here, CRIU is past its
  // start-up and waits for the next request (cr_service_work).
  CriuReq req = CRIU_REQ__INIT;
  req.type = CRIU_REQ_TYPE__VERSION;
  req.has_keep_open = true;
  req.keep_open = true;
  serve(*session_, "dump", req, nullptr, {});
}

StartedDump::~StartedDump() = default;

pid_t StartedDump::pid() const { return session_ ? session_->pid() : -1; }

namespace {

// The dump request of o into req (pointing into b and o), and its key, if
// it fits the child of `inherited` fds started in the namespaces
// `namespaces`. It asks for CRIU's notifications always, so that a request
// sent ahead and the one it stands for compare equal.
std::optional<std::string> fitting_dump_request(DumpOptions& o, const std::vector<int>& inherited,
                                                const std::vector<std::pair<dev_t, ino_t>>& namespaces,
                                                OptsBuilder& b, CriuReq& req) {
  if (namespace_ids(o.criu_namespace_fds) != namespaces) return std::nullopt;
  o.notify_scripts = true;
  b.dump(o);
  for (int fd : b.child_fds)
    if (std::find(inherited.begin(), inherited.end(), fd) == inherited.end()) return std::nullopt;
  req.type = CRIU_REQ_TYPE__DUMP;
  req.opts = &b.opts;
  return b.key(req);
}

constexpr std::string_view kPreDump = "pre-dump";

}  // namespace

bool StartedDump::send_ahead(const DumpOptions& o) {
  if (!session_ || !parked_key_.empty())
    throw Error("criu dump: the waiting criu was used already", Cause::Invalid);
  DumpOptions notified = o;
  OptsBuilder b;
  CriuReq req = CRIU_REQ__INIT;
  std::optional<std::string> key =
      fitting_dump_request(notified, setup_.inherit_fds, namespaces_, b, req);
  if (!key) {
    session_.reset();
    return false;
  }
  try {
    if (!session_->send(req)) fail("dump", &o, session_->exit_reason() + " before reading the request");
    serve_replies(*session_, "dump", req.type, &o, {}, kPreDump);
  } catch (...) {
    session_.reset();
    throw;
  }
  parked_key_ = std::move(*key);
  return true;
}

bool StartedDump::run(const DumpOptions& o, const NotifyHandler& notify) {
  if (!session_) throw Error("criu dump: the waiting criu was used already", Cause::Invalid);
  // Gone at the end, whatever happens: one request per child.
  std::unique_ptr<Session> session = std::move(session_);
  const std::string parked = std::exchange(parked_key_, std::string());
  DumpOptions notified = o;
  OptsBuilder b;
  CriuReq req = CRIU_REQ__INIT;
  std::optional<std::string> key =
      fitting_dump_request(notified, setup_.inherit_fds, namespaces_, b, req);
  if (!parked.empty()) {
    // CRIU waits at its pre-dump: a request other than the one sent is
    // refused there (CRIU stops before it touched a task, and exits).
    if (key != parked) {
      send_answer(*session, false);  // CRIU gone already: as good
      return false;
    }
    answer(*session, "dump", &o, std::string(kPreDump), true);
    serve_replies(*session, "dump", req.type, &o, notify);
  } else {
    if (!key) return false;
    serve(*session, "dump", req, &o, notify);
  }
  answered_ = std::move(session);
  return true;
}

std::string criu_log_tail(std::string_view log, size_t max_lines) {
  std::vector<std::string_view> lines, errors;
  while (!log.empty()) {
    size_t nl = log.find('\n');
    std::string_view line = log.substr(0, nl);
    log = nl == std::string_view::npos ? std::string_view() : log.substr(nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    lines.push_back(line);
    if (line.find("Error") != std::string_view::npos) errors.push_back(line);
  }
  // The first error is the cause (a plugin's, say); CRIU's own "... FAILED"
  // lines follow it. Keep it, then the last ones.
  std::vector<std::string_view> pick = errors.empty() ? lines : errors;
  if (max_lines == 0) return {};
  if (pick.size() > max_lines) {
    std::vector<std::string_view> kept;
    if (!errors.empty()) kept.push_back(pick.front());
    kept.insert(kept.end(), pick.end() - static_cast<long>(max_lines - kept.size()), pick.end());
    pick = std::move(kept);
  }
  std::string out;
  for (std::string_view l : pick) {
    if (!out.empty()) out += "; ";
    // Strip CRIU's "(00.012345) " timestamp prefix.
    if (l.size() > 2 && l[0] == '(') {
      size_t close = l.find(") ");
      if (close != std::string_view::npos && close < 16) l.remove_prefix(close + 2);
    }
    out += l;
  }
  return out;
}

}  // namespace crx::checkpoint
