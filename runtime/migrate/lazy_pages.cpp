#include "migrate/lazy_pages.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "checkpoint/criu_rpc.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/retry_eintr.hpp"

namespace crx::migrate {
namespace {

constexpr const char* kLogName = "lazy-pages.log";

// "(00.012345) uffd: 123-7: #PF at 0x7f12..." -> pid 123, rest "#PF at
// 0x7f12..." (uffd.c's LOG_PREFIX, then its lp_debug's "pid-uffd: ");
// false for a line of another shape.
bool task_line(std::string_view line, long* pid, std::string_view* rest) {
  size_t p = line.find(") ");
  if (line.empty() || line[0] != '(' || p == std::string_view::npos) return false;
  line.remove_prefix(p + 2);
  if (line.rfind("uffd: ", 0) == 0) line.remove_prefix(6);
  size_t dash = line.find('-');
  size_t colon = line.find(": ");
  if (dash == std::string_view::npos || colon == std::string_view::npos || dash > colon ||
      dash == 0)
    return false;
  for (size_t i = 0; i < colon; ++i)
    if (i != dash && (line[i] < '0' || line[i] > '9')) return false;
  *pid = std::stol(std::string(line.substr(0, dash)));
  *rest = line.substr(colon + 2);
  return true;
}

unsigned long long number(std::string_view s, int base) {
  std::string t(s);
  try {
    return std::stoull(t, nullptr, base);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

LazyStats lazy_stats_from_log(std::string_view log) {
  LazyStats s;
  // Faulting addresses not copied yet, per task.
  std::map<long, std::set<unsigned long long>> waiting;
  while (!log.empty()) {
    size_t nl = log.find('\n');
    std::string_view line = log.substr(0, nl);
    log.remove_prefix(nl == std::string_view::npos ? log.size() : nl + 1);
    long pid = 0;
    std::string_view rest;
    if (!task_line(line, &pid, &rest)) continue;
    if (rest.rfind("#PF at 0x", 0) == 0) {
      ++s.faults;
      waiting[pid].insert(number(rest.substr(9), 16));
    } else if (rest.rfind("uffd_copy: 0x", 0) == 0) {
      std::string_view v = rest.substr(13);
      size_t slash = v.find('/');
      if (slash == std::string_view::npos) continue;
      unsigned long long addr = number(v.substr(0, slash), 16);
      unsigned long long len = number(v.substr(slash + 1), 10);
      s.pages += len / kLazyPageSize;
      auto& w = waiting[pid];
      for (auto it = w.lower_bound(addr); it != w.end() && *it < addr + len;) {
        ++s.on_demand_pages;
        it = w.erase(it);
      }
    }
  }
  return s;
}

CriuLazyPages::CriuLazyPages(const std::string& images_dir, const std::string& work_dir,
                             UniqueFd channel, std::chrono::milliseconds start_timeout)
    : work_dir_(work_dir) {
  mkdir_p(work_dir, 0700);
  if (channel && is_kernel_tls_socket(channel.get())) {
    relay_ = std::make_unique<PageRelay>(std::move(channel), PageRelay::Mode::Splice,
                                         PageRelay::OnEnd::Hold);
    channel = relay_->take_peer_end();
  }
  spawn_daemon(images_dir, std::move(channel));
  wait_listening(start_timeout);
}

CriuLazyPages::CriuLazyPages(Gated, const std::string& images_dir, const std::string& work_dir,
                             std::chrono::milliseconds start_timeout)
    : work_dir_(work_dir) {
  mkdir_p(work_dir, 0700);
  spawn_daemon(images_dir, UniqueFd());
  hold_gate(images_dir + "/" + kGate, start_timeout);
}

void CriuLazyPages::spawn_daemon(const std::string& images_dir, UniqueFd channel) {
  // The daemon writes one byte here once it listens for the restore.
  int sp[2];
  if (::pipe2(sp, O_CLOEXEC) != 0) throw_errno("pipe for criu lazy-pages' status");
  UniqueFd status_w(sp[1]);
  status_.reset(sp[0]);
  std::vector<std::string> argv{checkpoint::criu_binary(), "lazy-pages", "--images-dir", images_dir,
                                "--work-dir", work_dir_, "--status-fd",
                                std::to_string(status_w.get()), "--log-file", kLogName, "-v4"};
  std::vector<int> keep{status_w.get()};
  // Without a channel the daemon reads the pages images in images_dir:
  // a view without parents (fill_plan.hpp), since CRIU 3.17's daemon
  // cannot answer a fault through a parent dump.
  if (channel) {
    argv.insert(argv.end(), {"--page-server", "--ps-socket", std::to_string(channel.get())});
    keep.push_back(channel.get());
  }
  child_ = spawn(argv, {.keep_fds = keep, .quiet = true});
}

void CriuLazyPages::wait_listening(std::chrono::milliseconds timeout) {
  pollfd pfd{status_.get(), POLLIN, 0};
  int n = retry_eintr([&] { return ::poll(&pfd, 1, static_cast<int>(timeout.count())); });
  char c = 1;
  if (n <= 0 || ::read(status_.get(), &c, 1) != 1) {
    child_.kill_and_wait();
    std::string tail = log_tail();
    throw Error("criu lazy-pages did not start" + (tail.empty() ? "" : ": " + tail));
  }
  status_.reset();
}

void CriuLazyPages::hold_gate(const std::string& gate, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + timeout;
  // A blocking open would wait for ever on a daemon that died before its
  // own; a non-blocking one fails with ENXIO until the daemon has it open.
  // Once this end is open, the daemon's open returns and it waits in its
  // first read instead.
  for (;;) {
    gate_.reset(::open(gate.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    if (gate_) break;
    if (errno != ENXIO) throw_errno("opening " + gate + " for criu lazy-pages");
    int status = 0;
    if (child_.try_wait(&status)) {
      std::string tail = log_tail();
      throw Error("criu lazy-pages " + describe_wait_status(status) + " before its images came" +
                  (tail.empty() ? "" : ": " + tail));
    }
    if (Clock::now() > until) {
      child_.kill_and_wait();
      throw Error("criu lazy-pages did not open " + gate + " within " +
                      std::to_string(timeout.count()) + " ms",
                  Cause::TimedOut);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  int flags = ::fcntl(gate_.get(), F_GETFL);
  if (flags < 0 || ::fcntl(gate_.get(), F_SETFL, flags & ~O_NONBLOCK) != 0)
    throw_errno("making " + gate + " blocking");
}

void CriuLazyPages::open_gate(const std::string& image, std::chrono::milliseconds timeout) {
  if (!gate_) throw Error("criu lazy-pages is not waiting on a gate", Cause::Invalid);
  const std::string data = read_file(image);
  for (size_t off = 0; off < data.size();) {
    ssize_t n = retry_eintr([&] { return ::write(gate_.get(), data.data() + off, data.size() - off); });
    if (n <= 0) {
      int e = errno;
      child_.kill_and_wait();
      errno = e;
      throw_errno("writing " + image + " to criu lazy-pages");
    }
    off += static_cast<size_t>(n);
  }
  gate_.reset();  // the end of the image
  wait_listening(timeout);
}

CriuLazyPages::~CriuLazyPages() {
  // The caller killed the restored tasks if the phase failed; now the
  // daemon may go.
  if (child_.running()) child_.kill_and_wait();
  if (relay_) relay_->stop();
}

std::string CriuLazyPages::log_tail() const {
  try {
    return checkpoint::criu_log_tail(read_file(work_dir_ + "/" + kLogName));
  } catch (const std::exception&) {
    return {};
  }
}

LazyStats CriuLazyPages::wait(std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  auto until = Clock::now() + timeout;
  std::optional<Clock::time_point> network_ended;
  int status = 0;
  while (!child_.try_wait(&status)) {
    // A broken channel: the relay holds the daemon's end, the daemon waits
    // for pages that will not come; say why at once.
    if (relay_ && !relay_->error().empty()) throw Error(relay_->error());
    // The source ends the channel only after the daemon's last message; a
    // daemon still running long after that end waits for pages in vain.
    if (relay_ && relay_->network_ended()) {
      if (!network_ended) network_ended = Clock::now();
      if (Clock::now() - *network_ended > std::chrono::seconds(10))
        throw Error("the source ended the page channel before every page arrived");
    }
    if (Clock::now() > until)
      throw Error("the memory did not arrive within " + std::to_string(timeout.count() / 1000) +
                  " s (criu lazy-pages still running)");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (status != 0) {
    std::string tail = log_tail();
    std::string why = relay_ ? relay_->error() : std::string();
    throw Error((why.empty() ? "" : why + "; ") + "criu lazy-pages " + describe_wait_status(status) +
                (tail.empty() ? "" : ": " + tail));
  }
  LazyStats s;
  try {
    s = lazy_stats_from_log(read_file(work_dir_ + "/" + kLogName));
  } catch (const std::exception&) {
  }
  if (relay_) {
    relay_->join();
    s.bytes = relay_->bytes_from_network();
    // The log's uffd_copy lines missed most background copies on the test
    // bed (22k of 66k pages for 256 MiB whose every byte crossed the
    // channel; not understood yet): the channel's bytes count the pages
    // (each answer adds a 24-byte header), the log the faults.
    s.pages = std::max(s.pages, s.bytes / kLazyPageSize);
  } else {
    s.bytes = s.pages * kLazyPageSize;
  }
  return s;
}

}  // namespace crx::migrate
