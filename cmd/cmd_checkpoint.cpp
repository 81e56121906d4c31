// crx checkpoint: runc's flags, CRIU through `criu swrk`.
#include <memory>

#include "checkpoint/container_checkpoint.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "cmd_criu_flags.hpp"

namespace crx::cmd {

void register_checkpoint(Cli& cli) {
  auto* sub = add_command(cli, "checkpoint");
  auto id = std::make_shared<std::string>();
  auto r = std::make_shared<checkpoint::CheckpointRequest>();
  auto f = std::make_shared<CriuFlagArgs>();
  sub->add_option("id", *id, "container id")->required();
  sub->add_option("--image-path", r->image_path, "directory for the checkpoint images")->required();
  sub->add_option("--work-path", r->work_path, "directory for CRIU's logs (default: image path)");
  sub->add_option("--parent-path", r->parent_path, "previous images, relative to --image-path");
  sub->add_flag("--leave-running", r->leave_running, "leave the container running after the dump");
  sub->add_flag("--pre-dump", r->pre_dump, "dump memory only; the container keeps running");
  sub->add_option("--page-server", r->page_server, "ADDRESS:PORT of a CRIU page server");
  sub->add_option("--status-fd", r->status_fd, "fd CRIU notifies when lazy pages are ready");
  sub->add_flag("--kill-exec", r->kill_exec,
                "accept losing processes outside the init's tree (crx exec): they are not in "
                "the images (and die with the container); without it such a container is refused");
  add_criu_flags(sub, *f);
  sub->callback([&cli, id, r, f] {
    cli.action = [&cli, id, r, f] {
      use_criu_binary(cli);
      r->flags = f->to_flags();
      checkpoint::checkpoint_container(cli.global, *id, *r);
      return 0;
    };
  });
}

}  // namespace crx::cmd
