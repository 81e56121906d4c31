// crx-verbs-seq: sends sequence-numbered messages over RC QPs and checks on
// the receiver that every message arrives exactly once and in order per QP.
// Exit status: 0 clean run, 1 a violation or transport error, 2 set-up failed.
#include <signal.h>

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <thread>

#include "common/error.hpp"
#include "seq/clock.hpp"
#include "seq/roles.hpp"

namespace crx::verbs_seq {
volatile int g_stop_signal = 0;
volatile int g_finish_signal = 0;
}

namespace {

void on_stop(int sig) { crx::verbs_seq::g_stop_signal = sig; }
void on_finish(int sig) { crx::verbs_seq::g_finish_signal = sig; }

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  // A set-up wait (poll/accept) returns EINTR only without SA_RESTART; the
  // loops check the flag at least every 100 ms.
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = on_finish;
  sigaction(SIGUSR1, &sa, nullptr);
}

// Lets a test see that the traffic has started, e.g. before it checkpoints.
void write_ready_file(const std::string& path) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << getpid() << "\n";
    if (!f) crx::throw_errno("write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str())) crx::throw_errno("rename " + tmp + " to " + path);
}

// The whole run, from opening the device to the summary.
int run(const crx::verbs_seq::Options& o) {
  using namespace crx::verbs_seq;
  if (o.role == Role::Idle) {
    Summary sum = run_idle(o, [&] { write_ready_file(o.ready_file); });
    std::printf("%s\n", summary_json(sum).c_str());
    return sum.ok() ? 0 : 1;
  }
  Session s = open_session(o);
  if (o.role == Role::Recv) post_initial_receives(s, o);
  connect_session(s, o);
  write_ready_file(o.ready_file);
  Summary sum = o.role == Role::Recv ? run_receiver(s, o) : run_sender(s, o);
  std::printf("%s\n", summary_json(sum).c_str());
  return sum.ok() ? 0 : 1;
}

// --worker-thread: the run happens in a second thread, which creates and
// uses every verbs object, while the main thread only waits for it (as in
// a library with a progress thread, UCX's async thread for one).
int run_in_worker(const crx::verbs_seq::Options& o) {
  int rc = 2;
  std::exception_ptr failure;
  std::thread worker([&] {
    try {
      rc = run(o);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure) std::rethrow_exception(failure);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace crx::verbs_seq;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    Options o = parse_options(argc, argv);
    install_stop_handlers();
    return o.worker_thread ? run_in_worker(o) : run(o);
  } catch (const crx::Error& e) {
    std::fprintf(stderr, "crx-verbs-seq: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crx-verbs-seq: unexpected: %s\n", e.what());
    return 2;
  }
}
