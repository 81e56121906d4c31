#include "seq/options.hpp"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "common/error.hpp"
#include "seq/message.hpp"

namespace crx::verbs_seq {

Options parse_options(int argc, char** argv) {
  Options o;
  CLI::App app{
      "crx-verbs-seq: sequence-numbered messages over RC QPs; the receiver checks that "
      "every message arrives exactly once and in order per QP and prints a JSON summary."};
  app.require_subcommand(1, 1);
  auto* send = app.add_subcommand("send", "post messages");
  auto* recv = app.add_subcommand("recv", "receive and check messages");
  auto* idle = app.add_subcommand(
      "idle",
      "open no device and create no verbs object; only hold (and write) the memory a receiver "
      "with the same --qps, --window, --size and --mr-size would, until --duration passes or "
      "SIGTERM: the same process without verbs objects, as a baseline for migration benchmarks");

  for (auto* sub : {send, recv}) {
    sub->add_option("--connect", o.connect_host, "exchange QP info by connecting to HOST (else listen)");
    sub->add_option("--bind", o.bind_address, "address to listen on")->capture_default_str();
    sub->add_option("--port", o.port, "TCP port for the QP info exchange")->capture_default_str();
    sub->add_option("--setup-timeout", o.setup_timeout_s, "seconds to wait for the peer")->capture_default_str();
    sub->add_option("--dev", o.device, "RDMA device (default: first)");
    sub->add_option("--ib-port", o.ib_port, "device port")->capture_default_str();
    sub->add_option("--gid-index", o.gid_index, "GID index (-1: first IPv4-mapped)")->capture_default_str();
    sub->add_option("--qps", o.qps, "number of RC QPs")->capture_default_str()->check(CLI::Range(1u, 4096u));
    sub->add_option("--size", o.size, "bytes per message")->capture_default_str()
        ->check(CLI::Range(kMinMessageSize, size_t{1} << 30));
    sub->add_option("--window", o.window, "outstanding sends / posted receives per QP")
        ->capture_default_str()->check(CLI::Range(1u, 16384u));
    sub->add_flag("--verify-payload", o.verify_payload, "fill and check every payload byte");
    sub->add_option("--timeout", o.timeout, "QP local ack timeout exponent")->capture_default_str()->check(CLI::Range(0, 31));
    sub->add_option("--retry-cnt", o.retry_cnt, "QP retry count (7 = forever)")->capture_default_str()->check(CLI::Range(0, 7));
    sub->add_option("--rnr-retry", o.rnr_retry, "QP RNR retry count (7 = forever)")->capture_default_str()->check(CLI::Range(0, 7));
    sub->add_option("--stall-timeout", o.stall_timeout_s, "fail after this many seconds without a completion (0 = never)")
        ->capture_default_str();
    sub->add_option("--stall-list", o.stall_list_s,
                    "list every stall longer than SEC seconds in the summary (\"stalls\": when it "
                    "ended as Unix time, its length as counted for max_stall_s, and as the plain "
                    "clock difference)");
    sub->add_option("--progress", o.progress_s, "print a JSON progress line on stderr every N seconds");
    sub->add_option("--ready-file", o.ready_file,
                    "write this file (our pid) once set-up is done and traffic starts");
    sub->add_flag("--busy-poll", o.busy_poll, "poll the CQ instead of sleeping on the completion channel");
    sub->add_flag("--worker-thread", o.worker_thread,
                  "run in a second thread that makes and uses every verbs object");
    // Accepted by both roles so one argument list serves both; the receiver
    // learns the real total from the sender's last message.
    sub->add_option("--count", o.count, "data messages per QP (sender)")->capture_default_str();
    sub->add_option("--duration", o.duration_s,
                    "send for this many seconds instead of --count (sender); SIGUSR1 also ends "
                    "the sending early: FIN on every QP, normal exit");
    sub->add_option("--rate", o.rate, "messages per second over all QPs, 0 = unlimited (sender)");
  }
  recv->add_flag("--srq", o.srq, "all QPs receive from one shared receive queue");
  recv->add_option("--mr-rewrite", o.mr_rewrite_s,
                   "every N seconds check each page of the --mr-size MR (the value it was last "
                   "given, in its first 8 bytes), then give a sixteenth of them a new one; "
                   "a page that arrived stale after a migration is an error")
      ->check(CLI::PositiveNumber);
  recv->add_option("--poll-every", o.poll_every_s,
                   "poll the CQ only every N seconds, so that completions wait in it (a "
                   "checkpoint finds them there)")
      ->check(CLI::PositiveNumber);
  for (auto* sub : {send, recv}) {
    sub->add_option("--mr-remote-write", o.mr_remote_write_s,
                    "every N seconds the sender RDMA-WRITEs every page of the receiver's "
                    "--mr-size MR (same --mr-size on both sides); the receiver fails when a page "
                    "goes back to an older pass (a write of the NIC lost by a migration)")
        ->check(CLI::PositiveNumber);
  }
  for (auto* sub : {send, recv, idle}) {
    sub->add_flag("--mr-huge", o.mr_huge,
                  "put the --mr-size memory on 2 MiB boundaries and ask for transparent huge "
                  "pages (MADV_HUGEPAGE); without it the memory is kept off them "
                  "(MADV_NOHUGEPAGE)");
    sub->add_option("--mr-size", o.mr_size,
                    "register one more MR of this size (bytes, or with a unit: 16MiB, 1G), every "
                    "page written before the traffic starts; idle: only allocate and write it")
        ->transform(CLI::AsSizeValue(false));
  }
  idle->add_option("--qps", o.qps, "as recv: the message buffer holds qps x window x size bytes")
      ->capture_default_str()->check(CLI::Range(1u, 4096u));
  idle->add_option("--size", o.size, "as recv")->capture_default_str()
      ->check(CLI::Range(kMinMessageSize, size_t{1} << 30));
  idle->add_option("--window", o.window, "as recv")->capture_default_str()
      ->check(CLI::Range(1u, 16384u));
  idle->add_option("--duration", o.duration_s, "exit after this many seconds (0: at SIGTERM/SIGINT)");
  idle->add_option("--progress", o.progress_s, "print a JSON progress line on stderr every N seconds");
  idle->add_option("--ready-file", o.ready_file, "write this file (our pid) once the memory is written");
  send->add_option("--inject-dup", o.inject_dup, "debug: send this sequence number twice on QP 0");
  send->add_option("--inject-skip", o.inject_skip, "debug: never send this sequence number on QP 0");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  o.role = app.got_subcommand(send) ? Role::Send : app.got_subcommand(idle) ? Role::Idle : Role::Recv;
  if (o.srq && o.role == Role::Send) throw Error("--srq is a receiver option");
  if (o.mr_rewrite_s > 0 && o.mr_size == 0) throw Error("--mr-rewrite needs --mr-size");
  if (o.mr_remote_write_s > 0 && o.mr_size == 0) throw Error("--mr-remote-write needs --mr-size");
  if (o.mr_remote_write_s > 0 && o.mr_size > (size_t{1} << 31))
    throw Error("--mr-remote-write writes the MR in one message: --mr-size at most 2 GiB");
  if (o.mr_remote_write_s > 0 && o.mr_rewrite_s > 0)
    throw Error("--mr-remote-write and --mr-rewrite both change the MR: choose one");
  if (o.mr_huge && o.mr_size == 0) throw Error("--mr-huge needs --mr-size");
  return o;
}

}  // namespace crx::verbs_seq
