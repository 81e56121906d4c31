// What crx asks CRIU to do: plain structs, translated to rpc.proto's
// criu_opts by criu_rpc.cpp. Field names follow runc's checkpoint/restore
// flags so cmd/ can fill them one to one.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crx::checkpoint {

// --manage-cgroups-mode: runc's names (soft|full|strict|ignore) plus CRIU's.
enum class CgroupMode { Soft, Full, Strict, Ignore, None, Props, Default };
// Throws Error naming the accepted values.
CgroupMode parse_cgroup_mode(std::string_view name);
std::string_view cgroup_mode_name(CgroupMode mode);

// Where dumped pages go instead of the images dir: a page server reached by
// address/port, or an already connected (and authenticated) socket fd that
// CRIU uses as is.
struct PageServerTarget {
  std::string address;
  int port = 0;
  int socket_fd = -1;  // >= 0: hand this connected socket to CRIU
};

// A bind mount the container had: CRIU records it as external under key
// (the mount point inside the container) and restore maps it back to val.
struct ExternalMount {
  std::string key;
  std::string value;
};

// The options dump, pre-dump and restore share.
struct CommonOptions {
  int images_dir_fd = -1;  // required
  int work_dir_fd = -1;    // logs and stats; images dir when unset
  std::string log_file;    // name inside the work dir, e.g. "dump.log"
  int log_level = 4;
  std::string root;  // container rootfs (dump: mount ns root; restore: root)
  bool tcp_established = false;
  bool ext_unix_sk = false;
  bool shell_job = false;
  bool file_locks = false;
  std::optional<CgroupMode> manage_cgroups_mode;
  std::vector<ExternalMount> ext_mounts;
  std::vector<std::string> external;  // CRIU --external entries
  bool notify_scripts = false;        // ask CRIU to send NOTIFY messages
  bool orphan_pts_master = false;     // CRIU hands back the pty master fd
  // CRIU's plugin dir, passed through a config file in the work dir
  // (criu_plugins.hpp); nullopt: criu_plugin_dir(), "": CRIU's default.
  std::optional<std::string> criu_libdir;
  // false: CRIU loads no plugin at all (its libdir is an empty dir made in
  // the work dir, kNoPluginsDir). Loading crx_ibverbs costs 0.09 s of a
  // dump and 0.15 s of a restore in a guest, inside the downtime, for
  // tasks that hold no verbs context (criu_plugins.hpp).
  bool plugins = true;
};

struct DumpOptions : CommonOptions {
  pid_t pid = 0;  // the container's init
  bool leave_running = false;
  bool track_mem = false;     // keep soft-dirty tracking for later rounds
  std::string parent_img;     // relative to the images dir, e.g. "../1"
  std::optional<PageServerTarget> page_server;
  bool lazy_pages = false;
  int status_fd = -1;         // CRIU writes a byte when lazy pages are ready
  // With lazy_pages: serve the memory on this connected socket (a
  // migration's authenticated page channel) instead of a listening port.
  // CRIU 3.17's RPC ignores `ps` when lazy_pages is set (cr-service.c:
  // it takes only the port and listens on every address), so crx passes
  // it as `ps-socket` in the RPC config file, which CRIU parses after the
  // request and which sets the same option as `criu dump --ps-socket`.
  int lazy_page_socket = -1;
  uint32_t empty_ns = 0;      // CLONE_NEW* mask of namespaces to leave empty
  bool auto_dedup = false;
  std::string freeze_cgroup;  // freezer cgroup dir of the container
  // Lock the container's network namespace with nftables (in CRIU's own
  // process, libnftables) instead of iptables-restore (two helper runs to
  // lock, two to unlock: seconds under TCG).
  bool nftables_network_lock = false;
  // Namespaces of the container CRIU itself runs in (joined before its
  // exec). Each is then CRIU's own namespace to CRIU, not the container's:
  // CRIU does not dump it, and the images hold none of its type. Their
  // restore must give the tasks new ones (RestoreOptions::join_netns,
  // join_uts, join_ipc), or they land in CRIU's. The network namespace:
  // a new one nobody configured, moved as a new one (fresh_netns.hpp);
  // CRIU then neither dumps nor locks it (CRIU 3.17 locks every namespace
  // it dumps, its empty ones too: 0.18 s of a frozen dump in a TCG guest).
  // The UTS and IPC namespaces: uts_ipc_anew.hpp.
  std::vector<int> criu_namespace_fds;
  // `file-validation filesize`: CRIU stores no build-ids, and the restore
  // checks sizes only (CRIU's default reads the ELF build-id of every file
  // at both ends). Only for a migration whose destination checked them
  // before the freeze (runtime/migrate/elf_files.hpp).
  bool validate_file_sizes_only = false;
  // Pre-dump only: CRIU's "read" mode (`--pre-dump-mode read`). The tasks
  // are let go once their pagemap is taken, and CRIU reads the pages with
  // process_vm_readv while they run, instead of splicing them into pipes
  // (and making every mapping readable and back) while they are stopped.
  // The pages read may be newer than the snapshot; the soft-dirty bits,
  // cleared frozen, send them again in the next round. Only into images or
  // a page channel that copies what CRIU splices: CRIU reuses the buffer
  // it spliced from, and a stream socket would carry the next batch's
  // bytes (runtime/migrate/message_reader.hpp).
  bool pre_dump_read = false;
};

// One inherited fd for restore: CRIU uses `fd` where the image says `key`
// (e.g. "pipe:[1234]" for a container's stdio).
struct InheritFd {
  std::string key;
  int fd = -1;
};

struct RestoreOptions : CommonOptions {
  bool rst_sibling = true;  // restored init becomes our child, not CRIU's
  std::vector<InheritFd> inherit_fds;
  bool lazy_pages = false;
  std::optional<PageServerTarget> page_server;  // lazy pages source
  bool auto_dedup = false;
  std::vector<std::pair<std::string, std::string>> cgroup_roots;  // ctrl, path
  // CRIU's --cgroup-yard: a directory with the hierarchies mounted already
  // (cgroup_yard.hpp); "" lets CRIU make its own.
  std::string cgroup_yard;
  // CRX_VERBS_DEFER_RESUME=1 for CRIU: the verbs plugin leaves restored QPs
  // stopped and crx resumes them itself (after a migration's commit).
  bool defer_verbs_resume = false;
  // Non-empty: the restored root task joins this network namespace (a
  // path, e.g. /proc/<pid>/fd/<n>) before anything of it is restored -
  // CRIU's --join-ns net:<path>. For images that hold no network namespace
  // (DumpOptions::criu_namespace_fds) only: with one, CRIU makes it anew.
  std::string join_netns;
  // The same for the UTS and the IPC namespace (CRIU's --join-ns uts:,
  // ipc:), for images that hold none (uts_ipc_anew.hpp).
  std::string join_uts;
  std::string join_ipc;
  // CRIU's older mount engine (--mntns-compat-mode) instead of mount-v2:
  // only for mount trees without propagation (mount_images.hpp).
  bool mount_engine_compat = false;
};

}  // namespace crx::checkpoint
