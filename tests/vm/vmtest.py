"""Shared bits of the tests/vm tests (unittest, stdlib only)."""
import os
import shlex
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testbed  # noqa: E402
from testbed import Testbed  # noqa: E402,F401


def patched_rxe_modules():
    """The guest modules tree with crx's rdma_rxe (rxe-patches/build.sh
    builds it, or finds it cached, and prints its path last)."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([os.path.join(top, "rxe-patches", "build.sh")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.strip().splitlines()[-1]


def wait_until(cond, timeout, what, interval=0.5):
    """Poll cond() every `interval` seconds until it returns a true value,
    and return that value. After `timeout` seconds fail the test
    (AssertionError) naming `what` was awaited; `what` may be a callable,
    called only then, so the message can show the state at the time-out.
    cond() may raise to end the wait early (e.g. a process it needs died)."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for "
                                 + (what() if callable(what) else what))
        time.sleep(interval)


def wait_for_count(counts, above, timeout=180):
    """Wait until the last number of counts() (a counter's output so far) is
    above `above`; returns those numbers."""
    return wait_until(lambda: (lambda c: c if c and c[-1] > above else None)(counts()), timeout,
                      lambda: f"the counter to get above {above}: {counts()[-5:]}")


def listening(tb, k, port):
    """Whether guest k has a TCP socket listening on `port` (state 0A). Not
    any socket on it: a killed receiver's connections stay in TIME_WAIT on
    that port for a minute, and the next receiver would look up already."""
    return tb.run(k, f"awk '$4 == \"0A\" && $2 ~ /:{port:04X}$/' /proc/net/tcp | grep -q .")[0] == 0


def wait_listening(tb, k, port, what, proc=None, timeout=60):
    """Wait until `what` (a program in guest k) listens on TCP `port`; fail
    at once, with its result, when `proc` (its tb.spawn handle) has ended."""
    def up():
        if proc is not None and proc.done.is_set():
            raise AssertionError(f"{what} exited: {proc.result}")
        return listening(tb, k, port)
    wait_until(up, timeout, f"{what} to listen on port {port}", interval=0.3)


def loopback_tcp_cmd(pid):
    """A guest command: in the network namespace of pid, lo up, then one TCP
    connection over it; prints "ok" (a namespace that drops packets: a
    timeout, non-zero exit)."""
    py = ("import socket; l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(); "
          "c = socket.socket(); c.settimeout(3); c.connect(l.getsockname()); print('ok')")
    return (f"nsenter -t {pid} -n ip link set lo up && "
            f"nsenter -t {pid} -n python3 -c \"{py}\"")


def report_line(report):
    """A crx migrate JSON report in one line: outcome, downtime, phases,
    bytes and the verbs objects moved (the whole report is long, and CI
    shows a failing test's output only from its start)."""
    if not report:
        return f"report: {report!r}"
    phases = " ".join(f"{p['name']} {p['seconds']:.2f}" for p in report.get("phases", []))
    sizes = " ".join(f"{k} {v}" for k, v in report.get("bytes", {}).items() if v)
    verbs = (report.get("verbs") or {}).get("objects")
    receiving = (report.get("verbs") or {}).get("receives_in_progress")
    return (f"{report.get('outcome')}: downtime {report.get('downtime_seconds', 0):.2f} s "
            f"[{phases}] bytes [{sizes}]" + (f" verbs {verbs}" if verbs else "")
            + (f", {receiving} receive(s) in progress" if receiving else ""))


def criu_times(report):
    """CRIU's own account of a crx move, from its report (the final round's
    `criu` and `criu_restore`: runtime/migrate/README.md, "CRIU's own
    times"), in seconds: frozen, memdump (the pages, their write
    included), memwrite, restore, forking. None for a report without it
    (the runc way's, an older crx's)."""
    rounds = report.get("rounds") or []
    final = rounds[-1].get("criu") if rounds and rounds[-1].get("final") else None
    restore = report.get("criu_restore")
    if not final or not restore:
        return None
    return {"frozen": final["frozen_seconds"], "memdump": final["memdump_seconds"],
            "memwrite": final["memwrite_seconds"], "restore": restore["restore_seconds"],
            "forking": restore["forking_seconds"]}


def boot_shared(n, prepare, **kw):
    """For setUpClass: boot n guests (Testbed(n, **kw)) that all cases of a
    class share and run prepare(tb); the test bed is closed again when that
    fails. The class's tearDownClass closes it."""
    t = time.monotonic()
    tb = Testbed(n, **kw).start()
    print(f"booted {n} guest(s) in {time.monotonic() - t:.1f} s", flush=True)
    try:
        prepare(tb)
    except BaseException:
        tb.close()
        raise
    return tb


# What a guest's first migration loads on both ends: CRIU's socket dumping
# (*_diag) and checks (tun, veth, crc32c), its network lock (nf_tables),
# kernel TLS with AES-GCM or ChaCha20-Poly1305 and the AF_ALG socket crx
# measures them through. About 25 modprobes, 6-8 s under TCG, that made a
# bed's first migration freeze that much longer than the next ones (a real
# host pays milliseconds once), and cases that run traffic for a fixed time
# against their moves lost it. nf_conntrack_netlink: the ctnetlink request
# of a source's prepare (runtime/checkpoint/README.md, "Modules the dump
# would load").
MIGRATION_MODULES = ("tls gcm ctr ghash_clmulni_intel cryptd crc32c_intel libcrc32c "
                     "algif_aead chacha20poly1305 chacha_generic poly1305_generic "
                     "af_packet_diag inet_diag tcp_diag udp_diag raw_diag unix_diag "
                     "netlink_diag nf_tables nfnetlink nf_conntrack_netlink tun veth")
# The two TLS suites' AEADs, made once: the kernel builds an algorithm
# instance such as gcm(aes) on its first use and asks modprobe for its
# name first (crypto-gcm(aes), crypto-ctr(aes), crypto-cryptd(...),
# crypto-rfc7539(...), each also with -all) whether or not the modules
# are loaded: ~1-2 s of a first move on each end under TCG (tests/bench/
# mpi/README.md, Result 25). An AF_ALG bind builds them as kTLS would.
_MAKE_AEADS = ("import socket\n"
               "for name in ('gcm(aes)', 'rfc7539(chacha20,poly1305)'):\n"
               "    try:\n"
               "        socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET).bind(('aead', name))\n"
               "    except OSError:\n"
               "        pass\n")


def warm_for_migration_cmd(crx):
    """A guest command that loads MIGRATION_MODULES, builds the TLS suites'
    AEADs and reads crx, crx-migrate (and the libraries it loads), criu and
    CRIU's plugins once (cold 9p reads under TCG); never fails."""
    return (f"modprobe -a {MIGRATION_MODULES} 2>/dev/null; "
            f"python3 -c {shlex.quote(_MAKE_AEADS)} 2>/dev/null; "
            f"{crx}-migrate --version >/dev/null 2>&1; cat {crx} $(command -v criu) "
            f"{os.path.dirname(crx)}/criu-plugins/*.so >/dev/null 2>&1; true")


def warm_for_migration(tb, crx):
    """warm_for_migration_cmd in every guest of tb, in parallel."""
    tb.run_all(warm_for_migration_cmd(crx), timeout=180)


def remove_every_container_cmd(crx, image_root="/run/crx-migrate"):
    """A guest command that removes every container and every receiver's
    session, as an operator would after a crash; never fails. Not `crx
    list`: it skips what a killed receiver left half-prepared (a state dir
    without state.json), which `crx delete --force` still removes. The
    sessions' mounts (a prepared restore's rootfs bind, CRIU's cgroup
    yard) are detached before their directories go: rm -rf would descend
    into a bind-mounted rootfs."""
    return (f"for c in $(ls /run/crx 2>/dev/null); do {crx} delete --force $c 2>/dev/null; done; "
            f"awk '$2 ~ \"^{image_root}/\" {{print $2}}' /proc/mounts | sort -r | "
            f"xargs -r umount -l 2>/dev/null; rm -rf {image_root}/* 2>/dev/null; true")


def rdma_setup(tb, crx, ranges, key, key_path, verbose=False):
    """Every guest k of tb: /etc/crx/config.yaml naming rxe0 on eth0 with
    the QPN, MR and AH index range ranges[k] (disjoint per guest, so that
    restored objects keep their numbers), the migration key at key_path,
    then `crx rdma setup`. verbose: print what each setup said."""
    for k in range(tb.n):
        lo, hi = ranges[k]
        cfg = (f"rdma:\n  device: rxe0\n  netdev: eth0\n"
               f"  qpn_min: {lo:#x}\n  qpn_max: {hi:#x}\n"
               f"  mrn_min: {lo:#x}\n  mrn_max: {hi:#x}\n"
               f"  ahn_min: {lo:#x}\n  ahn_max: {hi:#x}\n")
        tb.run(k, f"mkdir -p /etc/crx && cat > /etc/crx/config.yaml <<'EOF'\n{cfg}EOF\n"
                  f"printf %s {key} > {key_path} && chmod 600 {key_path}", check=True)
    for k, (rc, out, err) in enumerate(tb.run_all(f"{warm_for_migration_cmd(crx)}; "
                                                  f"{crx} rdma setup && {crx} rdma status",
                                                  timeout=180)):
        if verbose:
            print(f"g{k}: crx rdma setup:\n{out}{err}", flush=True)
        if rc != 0:
            raise AssertionError(f"g{k}: crx rdma setup failed ({rc}):\n{out}\n{err}")


class VmTestCase(unittest.TestCase):
    maxDiff = None

    def sh(self, tb, k, cmd, timeout=120):
        """Run cmd in guest k, fail the test (with its output) unless it succeeds."""
        rc, out, err = tb.run(k, cmd, timeout=timeout)
        self.assertEqual(rc, 0, f"{tb.name(k)}: `{cmd}` exited with {rc}\n"
                                f"--- stdout:\n{out}\n--- stderr:\n{err}")
        return out

    def wait_receiver(self, tb, rh, k, sender, sender_rc=0, timeout=300, log=None):
        """The (rc, out, err) of `crx receive` (handle rh) on guest k after
        the sender finished. `sender` says what the sender did (a string,
        or a callable called only if needed); `log`, a file the receiver
        writes to. When the sender failed (sender_rc), maybe before it
        connected, a receiver still waiting a minute later is killed (its
        rc then says so). One that has not finished within `timeout` after
        a sender that succeeded fails the case with what it, CRIU and the
        kernel were doing on g<k>, its own output and the sender's; it is
        killed, and the guest only if it will not die, so the cases after
        this one keep their guests."""
        if sender_rc != 0 and not rh.done.wait(60):
            tb.kill(rh)
            return tb.wait(rh, 30)
        if rh.done.wait(timeout):
            return tb.wait(rh)
        try:
            stuck = tb.run(k, (f"echo '--' receiver log; cat {log}; " if log else "") +
                              "echo '--' CRIU logs; for f in $(find /run/crx-migrate "
                              "-name '*.log' 2>/dev/null); do echo \"== $f\"; tail -n 40 $f; done; "
                              "echo '--' processes; ps -eo pid,ppid,stat,wchan:32,cmd; "
                              "for p in $(pgrep -f '[c]riu|[c]rx '); do echo \"== $p\"; "
                              "for t in /proc/$p/task/*; do echo $t $(grep State $t/status); "
                              "cat $t/stack; done; done; "
                              "echo '--' qps; rdma resource show qp 2>&1; "
                              "echo '--' dmesg; dmesg | tail -n 40", timeout=120)[1]
        except testbed.TestbedError as e:  # the guest itself is stuck
            stuck = f"(looking at g{k} failed: {e})"
        try:
            tb.kill(rh)
            _, out, err = tb.wait(rh, 30)
        except testbed.TestbedError as e:
            out, err = "", f"(it did not end on SIGKILL: {e})"
        if callable(sender):
            sender = sender()
        self.fail(f"g{k}: crx receive did not finish within {timeout} s\n"
                  f"sender: {sender}\n--- receiver's stdout:\n{out}\n--- its stderr:\n{err}\n"
                  f"{stuck}")

    def boot(self, n, **kw):
        t = time.monotonic()
        tb = Testbed(n, **kw).start()
        self.addCleanup(tb.close)
        print(f"booted {n} guest(s) in {time.monotonic() - t:.1f} s: " + ", ".join(
            f"{tb.name(k)} {tb.boot_seconds[k]:.1f} s" for k in range(n)), flush=True)
        return tb


class _TimedResult(unittest.TextTestResult):
    """Prints each case's wall time after its verdict, and a table of
    them, slowest first, at the end: the suite's time budget (tests/vm/
    README.md) is spent case by case."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.took = []  # (seconds, test id) per case
        self._started = 0.0

    def startTest(self, test):
        self._started = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        took = time.monotonic() - self._started
        self.took.append((took, test.id()))
        self.stream.writeln(f"    ({took:.1f} s)")
        super().stopTest(test)

    def printErrors(self):
        super().printErrors()
        if len(self.took) > 1:
            self.stream.writeln("case times, slowest first:")
            for took, name in sorted(self.took, reverse=True):
                self.stream.writeln(f"  {took:7.1f} s  {name.rsplit('.', 1)[-1]}")


def main():
    unittest.main(verbosity=2, testRunner=unittest.TextTestRunner(
        verbosity=2, resultclass=_TimedResult))
