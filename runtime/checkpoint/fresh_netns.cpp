#include "checkpoint/fresh_netns.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <sstream>
#include <string_view>
#include <utility>
#include <thread>
#include <vector>

#include "checkpoint/netlink_socket.hpp"
#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"

namespace crx::checkpoint {
namespace {

struct CacheFree {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
using Sock = NlSock;
using Cache = std::unique_ptr<nl_cache, CacheFree>;

// A cache in libnl's one-line form: the object's configuration, without
// counters (NL_DUMP_STATS) or timestamps and per-device sysctls
// (NL_DUMP_DETAILS; the sysctls are compared on their own).
std::vector<std::string> lines_of(nl_cache* c, const std::string& prefix) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = ::open_memstream(&buf, &len);
  if (!f) throw_errno("network namespace: a buffer for libnl's dump");
  nl_dump_params p{};
  p.dp_type = NL_DUMP_LINE;
  p.dp_fd = f;
  nl_cache_dump(c, &p);
  std::fclose(f);
  std::string text(buf, len);
  std::free(buf);
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(prefix + l);
  return out;
}

// One rtnetlink dump into a libnl cache: alloc is libnl's
// rtnl_*_alloc_cache with its socket and family bound.
template <class Alloc>
Cache dumped(Alloc alloc, const char* what) {
  nl_cache* raw = nullptr;
  if (int rc = alloc(&raw); rc < 0) throw_nl(std::string("network namespace: dumping its ") + what, rc);
  return Cache(raw);
}

void add_rtnetlink(std::vector<std::string>& out) {
  Sock s = nl_connected(NETLINK_ROUTE, "network namespace: rtnetlink");
  nl_sock* sk = s.get();
  Cache links = dumped([&](nl_cache** c) { return rtnl_link_alloc_cache(sk, AF_UNSPEC, c); }, "links");
  // The links by name in the other objects' lines ("dev lo", not "dev 1"):
  // libnl looks them up in the cache provided for the link type, until
  // it is unprovided (before the cache is freed).
  nl_cache_mngt_provide(links.get());
  struct Unprovide {
    nl_cache* c;
    ~Unprovide() { nl_cache_mngt_unprovide(c); }
  } unprovide{links.get()};
  Cache addrs = dumped([&](nl_cache** c) { return rtnl_addr_alloc_cache(sk, c); }, "addresses");
  // AF_UNSPEC, no flags: every family's routes of every table.
  Cache routes = dumped([&](nl_cache** c) { return rtnl_route_alloc_cache(sk, AF_UNSPEC, 0, c); },
                        "routes");
  Cache rules = dumped([&](nl_cache** c) { return rtnl_rule_alloc_cache(sk, AF_UNSPEC, c); }, "rules");
  for (auto [c, prefix] : {std::pair{links.get(), "link "}, {addrs.get(), "addr "},
                           {routes.get(), "route "}, {rules.get(), "rule "}}) {
    auto l = lines_of(c, prefix);
    out.insert(out.end(), l.begin(), l.end());
  }
  // What a link's line leaves out and CRIU's dump carries.
  nl_cache_foreach(
      links.get(),
      [](nl_object* o, void* arg) {
        auto* link = reinterpret_cast<rtnl_link*>(o);
        const char* name = rtnl_link_get_name(link);
        static_cast<std::vector<std::string>*>(arg)->push_back(
            std::string("link ") + (name ? name : "?") + " mtu " +
            std::to_string(rtnl_link_get_mtu(link)) + " txqlen " +
            std::to_string(rtnl_link_get_txqlen(link)));
      },
      &out);
}

int on_nft_table(nl_msg* msg, void* arg) {
  auto* out = static_cast<std::vector<std::string>*>(arg);
  nlmsghdr* h = nlmsg_hdr(msg);
  const auto* g = static_cast<const nfgenmsg*>(nlmsg_data(h));
  std::array<nlattr*, NFTA_TABLE_MAX + 1> tb{};
  std::string name = "?";
  if (nlmsg_parse(h, sizeof(nfgenmsg), tb.data(), NFTA_TABLE_MAX, nullptr) == 0 &&
      tb[NFTA_TABLE_NAME])
    name = nla_get_string(tb[NFTA_TABLE_NAME]);
  out->push_back("nft table family " + std::to_string(g->nfgen_family) + " " + name);
  return NL_OK;
}

// nftables' tables (iptables-nft's included). Where the kernel has no
// nf_tables, the dump's failure is the line: it is the same for every
// namespace of the host.
void add_nftables(std::vector<std::string>& out) {
  Sock s = nl_connected(NETLINK_NETFILTER, "network namespace: nfnetlink");
  nfgenmsg g{};
  g.nfgen_family = AF_UNSPEC;
  g.version = NFNETLINK_V0;
  int rc = nl_send_simple(s.get(), (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE, NLM_F_DUMP, &g,
                          sizeof g);
  if (rc < 0) throw_nl("network namespace: asking for its nftables tables", rc);
  nl_socket_modify_cb(s.get(), NL_CB_VALID, NL_CB_CUSTOM, on_nft_table, &out);
  rc = nl_recvmsgs_default(s.get());
  if (rc < 0) out.push_back(std::string("nft tables: ") + nl_geterror(rc));
}

// "!ENOENT" and the like: a value that could not be read, in its place.
std::string unreadable(int err) {
  const char* name = strerrorname_np(err);
  return "!" + std::string(name ? name : std::to_string(err));
}

// A small /proc file's text from its fd, or why it could not be read.
std::string read_fd(int fd) {
  // A sysctl gives its whole value to the first read that has room: no
  // second read for the end (490 files, a read is dear in a TCG guest).
  // From the start, whatever was read before: a NetnsWatch reads its
  // sysctl fds again at the freeze.
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = retry_eintr(
        [&] { return ::pread(fd, buf, sizeof buf, static_cast<off_t>(out.size())); });
    if (n < 0) return unreadable(errno);
    out.append(buf, static_cast<size_t>(n));
    if (static_cast<size_t>(n) < sizeof buf) break;
  }
  return out;
}

// A small /proc file's text; a missing one is "" when missing is given.
std::string read_small(const std::string& path, bool* missing = nullptr) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (missing && errno == ENOENT) {
      *missing = true;
      return {};
    }
    return unreadable(errno);
  }
  return read_fd(fd.get());
}

// The legacy x_tables of the namespace whose /proc net dir proc_net is
// (iptables-legacy and friends): a table is listed once something made it
// in this namespace. The thread's own namespace by default; a process's
// (/proc/PID/net/) needs no thread that joins it.
void add_legacy_tables(std::vector<std::string>& out,
                       const std::string& proc_net = "/proc/thread-self/net/") {
  for (const char* f : {"ip_tables_names", "ip6_tables_names", "arp_tables_names"}) {
    bool missing = false;
    std::string t = read_small(proc_net + f, &missing);
    std::istringstream in(t);
    for (std::string l; std::getline(in, l);)
      if (!l.empty()) out.push_back(std::string("legacy ") + f + " " + l);
  }
}

// Values that differ between two namespaces nobody configured: the count
// of conntrack entries (traffic, not configuration) and the TCP Fast Open
// key (random per namespace).
bool volatile_sysctl(const std::string& name) {
  return name.ends_with("/nf_conntrack_count") || name.ends_with("/tcp_fastopen_key");
}

// Calls fn(dir_fd, name, path) for each sysctl file below dir (a path under
// /proc/sys, relative: "net"; path is the file's, name its last part),
// listed through the directories' fds: readdir's type, no stat, no path
// walk per file (~490 files in a new namespace, each syscall dear under
// TCG). Volatile ones are left out.
using SysctlVisit = std::function<void(int dir_fd, const std::string& name, const std::string& path)>;
void for_each_sysctl_in(int parent, const std::string& dir, const SysctlVisit& fn) {
  int dfd = ::openat(parent, dir.substr(dir.rfind('/') + 1).c_str(),
                     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw_errno("network namespace: listing /proc/sys/" + dir);
  std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(dfd), ::closedir);
  if (!d) {
    int err = errno;
    ::close(dfd);
    throw Error("network namespace: listing /proc/sys/" + dir, cause_of_errno(err), err);
  }
  std::vector<std::string> subdirs;
  while (dirent* e = ::readdir(d.get())) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + name;
    if (e->d_type == DT_DIR) {
      subdirs.push_back(path);
      continue;
    }
    if (e->d_type != DT_REG || volatile_sysctl(path)) continue;
    fn(dirfd(d.get()), name, path);
  }
  for (const auto& s : subdirs) for_each_sysctl_in(dirfd(d.get()), s, fn);
}

void for_each_sysctl(const SysctlVisit& fn) {
  UniqueFd sys(::open("/proc/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!sys) throw_errno("network namespace: opening /proc/sys");
  for_each_sysctl_in(sys.get(), "net", fn);
}

// A sysctl's line of the fingerprint, its value read from fd (or why it
// could not be opened: open_errno).
std::string sysctl_line(const std::string& path, int fd, int open_errno) {
  std::string v = fd >= 0 ? read_fd(fd) : unreadable(open_errno);
  while (!v.empty() && v.back() == '\n') v.pop_back();
  return "sysctl " + path + " = " + v;
}

// Opens a sysctl file for reading; -1 and errno EACCES for a write-only one
// (as root: the mode says so), which has no line.
UniqueFd open_sysctl(int dir_fd, const std::string& name) {
  return UniqueFd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC));
}

// A sysctl's line, its file opened now; none for a write-only one.
void add_sysctl_opened(int dir_fd, const std::string& name, const std::string& path,
                       std::vector<std::string>& out) {
  UniqueFd fd = open_sysctl(dir_fd, name);
  if (!fd && errno == EACCES) return;
  out.push_back(sysctl_line(path, fd.get(), errno));
}

void add_sysctls(std::vector<std::string>& out) {
  for_each_sysctl([&](int dir_fd, const std::string& name, const std::string& path) {
    add_sysctl_opened(dir_fd, name, path, out);
  });
}

std::string joined_sorted(std::vector<std::string> lines) {
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (auto& l : lines) out += l + "\n";
  return out;
}

std::string fingerprint_here() {
  std::vector<std::string> lines;
  add_rtnetlink(lines);
  add_nftables(lines);
  add_legacy_tables(lines);
  add_sysctls(lines);
  return joined_sorted(std::move(lines));
}

}  // namespace

void in_netns(int netns_fd, const std::function<void()>& fn) {
  std::exception_ptr error;
  // Network namespaces are per thread: this one joins (or makes) the
  // namespace and ends with it; the process's other threads stay where
  // they are.
  std::thread t([&] {
    try {
      if (netns_fd >= 0 ? ::setns(netns_fd, CLONE_NEWNET) : ::unshare(CLONE_NEWNET))
        throw_errno(netns_fd >= 0 ? "joining the container's network namespace"
                                  : "making a network namespace to compare with");
      fn();
    } catch (...) {
      error = std::current_exception();
    }
  });
  t.join();
  if (error) std::rethrow_exception(error);
}

std::string netns_fingerprint(int netns_fd) {
  std::string out;
  in_netns(netns_fd, [&] { out = fingerprint_here(); });
  return out;
}

std::string fresh_netns_fingerprint() { return netns_fingerprint(-1); }

UniqueFd new_netns() {
  UniqueFd fd;
  in_netns(-1, [&] {
    fd.reset(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!fd) throw_errno("opening a new network namespace (/proc/thread-self/ns/net)");
  });
  return fd;
}

namespace {

constexpr std::string_view kSysctlLine = "sysctl ";
constexpr std::string_view kSysctlIs = " = ";

UniqueFd netns_of(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("network namespace of the container (" + path + ")");
  return fd;
}

// A fingerprint split into its configuration lines and its sysctls.
std::pair<std::string, NetSysctls> split_fingerprint(const std::string& fp) {
  std::string config;
  NetSysctls sysctls;
  std::istringstream in(fp);
  for (std::string l; std::getline(in, l);) {
    size_t is = l.find(kSysctlIs);
    if (l.starts_with(kSysctlLine) && is != std::string::npos) {
      sysctls[l.substr(kSysctlLine.size(), is - kSysctlLine.size())] = l.substr(is + kSysctlIs.size());
    } else {
      config += l + "\n";
    }
  }
  return {config, sysctls};
}

// A fingerprint of the namespace this thread is in, against a fresh one's
// (asks the namespace which of its sysctls it would let be written).
NetnsComparison compared_here(const std::string& fingerprint, const std::string& fresh) {
  NetnsComparison out;
  auto [config, sysctls] = split_fingerprint(fingerprint);
  auto [fresh_config, fresh_sysctls] = split_fingerprint(fresh);
  out.config_difference = fingerprint_difference(config, fresh_config);
  for (auto& [path, value] : sysctls) {
    auto f = fresh_sysctls.find(path);
    if (f != fresh_sysctls.end() && f->second == value) continue;
    if (value.starts_with("!")) continue;  // unreadable here: nothing to carry
    if (::access(("/proc/sys/" + path).c_str(), W_OK) != 0) continue;  // the kernel's own
    out.changed_sysctls[path] = value;
  }
  return out;
}

// The rtnetlink groups whose notifications announce a change to what
// add_rtnetlink dumps: links, addresses, routes of every family and table
// (and the nexthop objects they may use), rules.
constexpr int kRouteGroups[] = {
    RTNLGRP_LINK,       RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV4_ROUTE,
    RTNLGRP_IPV6_ROUTE, RTNLGRP_IPV4_MROUTE, RTNLGRP_IPV6_MROUTE, RTNLGRP_MPLS_ROUTE,
    RTNLGRP_NEXTHOP,    RTNLGRP_IPV4_RULE,   RTNLGRP_IPV6_RULE,
};

// A netlink socket of this thread's namespace that receives groups'
// notifications, without blocking.
Sock subscribed(int protocol, std::span<const int> groups, const char* what) {
  Sock s = nl_connected(protocol, what);
  for (int g : groups)
    if (int rc = nl_socket_add_membership(s.get(), g); rc < 0)
      throw_nl(std::string(what) + ": subscribing to group " + std::to_string(g), rc);
  if (int rc = nl_socket_set_nonblocking(s.get()); rc < 0) throw_nl(what, rc);
  return s;
}

// Whether s holds a notification, or lost some (ENOBUFS: its queue
// overflowed). Any other answer cannot tell, so counts as one.
bool notified(nl_sock* s) {
  char c;
  ssize_t n = retry_eintr([&] { return ::recv(nl_socket_get_fd(s), &c, 1, MSG_DONTWAIT | MSG_PEEK); });
  return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

std::pair<dev_t, ino_t> identity(int fd, const std::string& what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno(what);
  return {st.st_dev, st.st_ino};
}

}  // namespace

NetnsComparison compare_netns_with_fresh(pid_t pid, const std::string& fresh) {
  UniqueFd ns = netns_of(pid);
  NetnsComparison out;
  in_netns(ns.get(), [&] { out = compared_here(fingerprint_here(), fresh); });
  return out;
}

struct NetnsWatch::State {
  pid_t pid = 0;
  UniqueFd netns;
  std::pair<dev_t, ino_t> netns_id;
  Sock route, nft;
  // The rtnetlink and nftables lines, read after the subscriptions.
  std::vector<std::string> config;
  // The sysctl files kept open, by path; and those found write-only.
  std::map<std::string, UniqueFd> sysctls;
  std::set<std::string> write_only;
};

NetnsWatch::NetnsWatch(pid_t pid) : s_(std::make_unique<State>()) {
  s_->pid = pid;
  s_->netns = netns_of(pid);
  s_->netns_id = identity(s_->netns.get(), "the container's network namespace");
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) != 0) throw_errno("getrlimit(RLIMIT_NOFILE)");
  const size_t budget = nofile.rlim_cur == RLIM_INFINITY ? SIZE_MAX : nofile.rlim_cur / 2;
  in_netns(s_->netns.get(), [&] {
    // Subscribed first: whatever changes after this is announced, so
    // the configuration read below is either current at the freeze or
    // read again then.
    s_->route = subscribed(NETLINK_ROUTE, kRouteGroups, "network namespace: rtnetlink notifications");
    constexpr int kNftGroups[] = {NFNLGRP_NFTABLES};
    s_->nft = subscribed(NETLINK_NETFILTER, kNftGroups, "network namespace: nftables notifications");
    add_rtnetlink(s_->config);
    add_nftables(s_->config);
    for_each_sysctl([&](int dir_fd, const std::string& name, const std::string& path) {
      if (s_->sysctls.size() >= budget) return;
      UniqueFd fd = open_sysctl(dir_fd, name);
      if (fd)
        s_->sysctls.emplace(path, std::move(fd));
      else if (errno == EACCES)
        s_->write_only.insert(path);
    });
  });
}

NetnsWatch::~NetnsWatch() = default;
NetnsWatch::NetnsWatch(NetnsWatch&&) noexcept = default;
NetnsWatch& NetnsWatch::operator=(NetnsWatch&&) noexcept = default;

size_t NetnsWatch::sysctls_kept() const { return s_->sysctls.size(); }

NetnsComparison NetnsWatch::compare(const std::string& fresh, Sysctls sysctls) const {
  UniqueFd now = netns_of(s_->pid);
  if (identity(now.get(), "the container's network namespace") != s_->netns_id) {
    NetnsComparison out = compare_netns_with_fresh(s_->pid, fresh);
    if (sysctls == Sysctls::Later) out.changed_sysctls.clear();
    return out;
  }
  NetnsComparison out;
  const bool changed = notified(s_->route.get()) || notified(s_->nft.get());
  std::vector<std::string> lines = changed ? std::vector<std::string>{} : s_->config;
  // The pid's namespace is the watched one (checked above; a frozen
  // container's cannot change): its legacy tables are read through its
  // /proc dir, from this thread.
  add_legacy_tables(lines, "/proc/" + std::to_string(s_->pid) + "/net/");
  const auto compare_here = [&] {
    if (changed) {
      add_rtnetlink(lines);
      add_nftables(lines);
    }
    if (sysctls == Sysctls::Now) add_sysctls_here(lines);
    out = compared_here(joined_sorted(std::move(lines)), fresh);
  };
  // Only a configuration read again or the sysctls need a thread in the
  // namespace (netlink sockets and /proc/sys/net are the caller's
  // namespace's). The final dump's usual case, nothing announced and its
  // sysctls left for later, makes none: a thread and a setns cost the
  // frozen window several ms in a TCG guest.
  if (changed || sysctls == Sysctls::Now) {
    in_netns(s_->netns.get(), compare_here);
  } else {
    compare_here();
  }
  out.config_read_ahead = !changed;
  return out;
}

NetSysctls NetnsWatch::changed_sysctls(const std::string& fresh) const {
  UniqueFd now = netns_of(s_->pid);
  if (identity(now.get(), "the container's network namespace") != s_->netns_id)
    return compare_netns_with_fresh(s_->pid, fresh).changed_sysctls;
  NetSysctls out;
  in_netns(s_->netns.get(), [&] {
    std::vector<std::string> lines;
    add_sysctls_here(lines);
    out = compared_here(joined_sorted(std::move(lines)), fresh).changed_sysctls;
  });
  return out;
}

// This thread is in the watched namespace: every sysctl's line, through
// the fds kept for them.
void NetnsWatch::add_sysctls_here(std::vector<std::string>& lines) const {
  for_each_sysctl([&](int dir_fd, const std::string& name, const std::string& path) {
    if (s_->write_only.contains(path)) return;
    if (auto kept = s_->sysctls.find(path); kept != s_->sysctls.end()) {
      lines.push_back(sysctl_line(path, kept->second.get(), 0));
      return;
    }
    add_sysctl_opened(dir_fd, name, path, lines);  // appeared since, or not kept
  });
}

bool criu_carries_sysctl(const std::string& path) {
  return path.starts_with("net/ipv4/conf/") || path.starts_with("net/ipv6/conf/") ||
         path == "net/unix/max_dgram_qlen";
}

void apply_net_sysctls(pid_t pid, const NetSysctls& sysctls) {
  if (sysctls.empty()) return;
  UniqueFd ns = netns_of(pid);
  in_netns(ns.get(), [&] {
    for (const auto& [path, value] : sysctls) {
      if (path.find("..") != std::string::npos || !path.starts_with("net/"))
        throw Error("network sysctl \"" + path + "\": not a path under /proc/sys/net",
                    Cause::Invalid);
      std::string file = "/proc/sys/" + path;
      UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
      if (!fd) throw_errno("setting network sysctl " + path + " in the restored namespace");
      std::string text = value + "\n";
      ssize_t n = retry_eintr([&] { return ::write(fd.get(), text.data(), text.size()); });
      if (n < 0) throw_errno("setting network sysctl " + path + " to \"" + value + "\"");
    }
  });
}

std::optional<std::string> fingerprint_difference(const std::string& now,
                                                  const std::string& fresh) {
  if (now == fresh) return std::nullopt;
  // Both are sorted lines: the first that differs is in one of them only.
  std::istringstream a(now), b(fresh);
  std::string la, lb;
  for (;;) {
    bool ga = static_cast<bool>(std::getline(a, la));
    bool gb = static_cast<bool>(std::getline(b, lb));
    if (ga && gb && la == lb) continue;
    if (ga && (!gb || la < lb)) return "it has \"" + la + "\"";
    if (gb) return "it lacks \"" + lb + "\"";
    return "it differs";  // equal lines, unequal texts: not from netns_fingerprint
  }
}

}  // namespace crx::checkpoint
