// crx create --bundle B [--pid-file F] [--console-socket S] ID
#include "cli.hpp"
#include "commands.hpp"
#include "container/create.hpp"

namespace crx::cmd {

void add_create_flags(CLI::App* sub, container::CreateOptions& o) {
  sub->add_option("-b,--bundle", o.bundle, "path to the bundle directory")->default_val(".");
  sub->add_option("--pid-file", o.pid_file, "file to write the init pid to");
  sub->add_option("--console-socket", o.console_socket, "unix socket that receives the pty master");
  sub->add_flag("--no-pivot", o.no_pivot, "use MS_MOVE + chroot instead of pivot_root");
  sub->add_flag("--no-new-keyring", o.no_new_keyring, "do not create a new session keyring");
  sub->add_option("--preserve-fds", o.preserve_fds, "pass N extra fds (3..3+N-1) to the container");
  sub->add_option("id", o.id, "container id")->required();
}

void register_create(Cli& cli) {
  auto* sub = add_command(cli, "create");
  auto o = std::make_shared<container::CreateOptions>();
  add_create_flags(sub, *o);
  sub->callback([&cli, o] {
    cli.action = [&cli, o] {
      container::create_container(cli.global, *o);
      return 0;
    };
  });
}

}  // namespace crx::cmd
