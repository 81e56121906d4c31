// crx restore: runc's flags; the restored container is an ordinary crx
// container. Without --detach, waits for its init and returns its status.
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cerrno>
#include <memory>

#include "checkpoint/container_checkpoint.hpp"

#include "common/retry_eintr.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "cmd_criu_flags.hpp"

namespace crx::cmd {

void register_restore(Cli& cli) {
  auto* sub = add_command(cli, "restore");
  auto id = std::make_shared<std::string>();
  auto r = std::make_shared<checkpoint::RestoreRequest>();
  auto f = std::make_shared<CriuFlagArgs>();
  auto no_pivot = std::make_shared<bool>(false);
  sub->add_option("id", *id, "container id")->required();
  sub->add_option("--image-path", r->image_path, "directory with the checkpoint images")->required();
  sub->add_option("--work-path", r->work_path, "directory for CRIU's logs (default: image path)");
  sub->add_option("-b,--bundle", r->bundle, "bundle directory (default: .)");
  sub->add_flag("-d,--detach", r->detach, "do not wait for the container");
  sub->add_option("--pid-file", r->pid_file, "write the restored init's pid here");
  sub->add_option("--console-socket", r->console_socket, "unix socket for the pty master");
  sub->add_flag("--no-subreaper", r->no_subreaper, "accepted for runc compatibility");
  sub->add_flag("--no-pivot", *no_pivot, "accepted for runc compatibility");
  add_criu_flags(sub, *f);
  sub->callback([&cli, id, r, f] {
    cli.action = [&cli, id, r, f] {
      use_criu_binary(cli);
      r->flags = f->to_flags();
      r->as_child = !r->detach;
      if (!r->detach && !r->no_subreaper) ::prctl(PR_SET_CHILD_SUBREAPER, 1);
      pid_t pid = checkpoint::restore_container(cli.global, *id, *r);
      if (r->detach) return 0;
      int status = 0;
      retry_eintr([&] { return ::waitpid(pid, &status, 0); });
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return 0;
    };
  });
}

}  // namespace crx::cmd
