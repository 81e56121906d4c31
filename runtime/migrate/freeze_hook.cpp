#include "migrate/freeze_hook.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "common/child_process.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

extern char** environ;

namespace crx::migrate {

void FreezeHookSource::freeze() {
  inner_.freeze();
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::string(*e).rfind("CRX_MIGRATE_ID=", 0) != 0) env.emplace_back(*e);
  }
  env.push_back("CRX_MIGRATE_ID=" + id_);
  SpawnOptions o;
  o.path = "/bin/sh";
  o.env = &env;
  // stdout is the migration report's: the hook writes to stderr only
  o.keep_fds = {STDERR_FILENO};
  o.stdout_fd = STDERR_FILENO;
  o.unblock_signals = true;
  o.exec_error = "--on-freeze: exec /bin/sh";
  auto started = std::chrono::steady_clock::now();
  ChildProcess hook = spawn({"sh", "-c", command_}, o);
  int status = 0;
  while (!hook.try_wait(&status)) {
    if (std::chrono::steady_clock::now() - started >= timeout_) {
      hook.kill_and_wait();
      throw Error("--on-freeze: the command did not finish within " +
                      std::to_string(timeout_.count() / 1000) + " s: " + command_,
                  Cause::TimedOut);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw Error("--on-freeze: the command " +
                    (WIFEXITED(status) ? "exited " + std::to_string(WEXITSTATUS(status))
                                       : "was killed by signal " + std::to_string(WTERMSIG(status))) +
                    ": " + command_,
                Cause::Other);
  }
  log::debug("migrate: --on-freeze took " +
             std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
                                .count()) +
             " s");
}

}  // namespace crx::migrate
