#!/usr/bin/python3
"""The RDMA test bed shared by tests/vm/rdma: three guests (g0 source,
g1 partner, g2 destination) with crx's rdma_rxe loaded by `crx rdma setup`
from disjoint per-node QPN/MR-index ranges, and the helpers every case
uses (a crx-verbs-seq receiver container on g0, a sender on g1, the
checks that every message arrived exactly once and in order, `crx
migrate` between guests). A test file subclasses RdmaBedCase; its cases
share one boot of the bed (the vm label's time budget)."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.environ.get("CRX_VM_DIR", os.path.join(os.path.dirname(__file__), "..")))
from vmtest import VmTestCase, listening, patched_rxe_modules, rdma_setup, report_line, wait_until  # noqa: E402
from testbed import Testbed  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("CRX_BUILD_DIR", os.path.join(ROOT, "build"))
CRX = os.path.join(BUILD, "crx")
SEQ = os.path.join(BUILD, "verbs-ext", "tools", "crx-verbs-seq")
KEY = "0123456789abcdef0123456789abcdef"
MPORT = 7070
# How the receivers wait: crx-verbs-seq's default, sleeping on a completion
# channel (what most verbs applications do; the restore must carry the
# channel, the CQ's armed state and ib_uverbs' event counts, rxe-patches
# 0012/0016). Cases that want the other way pass --busy-poll themselves.
RECV_MODE = os.environ.get("CRX_VM_RDMA_RECV_MODE", "")
# Per-node ranges (rdma_rxe module parameters), disjoint.
RANGES = [(0x1000, 0x1fff), (0x2000, 0x2fff), (0x3000, 0x3fff)]


def rootfs():
    """The rdma-seq rootfs for this build dir's crx-verbs-seq, built if
    missing or stale (bundles/rdma-seq/make-rootfs.sh)."""
    rf = os.path.join(BUILD, "vm-rdma", "rdma-seq-rootfs")
    inside = os.path.join(rf, "usr", "local", "bin", "crx-verbs-seq")
    if not (os.path.exists(inside) and
            subprocess.run(["cmp", "-s", inside, SEQ]).returncode == 0):
        subprocess.run([os.path.join(ROOT, "bundles", "rdma-seq", "make-rootfs.sh"),
                        "--build-dir", BUILD, rf], check=True)
    return rf


class RdmaBedCase(VmTestCase):
    tb = None
    ports = {}  # cid -> the port of its start_pair, for end_sender

    @classmethod
    def setUpClass(cls):
        if cls is RdmaBedCase:
            raise unittest.SkipTest("base class")
        for f in (CRX, SEQ, os.path.join(BUILD, "criu-plugins", "crx_ibverbs.so")):
            if not os.path.exists(f):
                raise unittest.SkipTest(f"{f} not built")
        cls.rootfs = rootfs()
        mods = patched_rxe_modules()
        t = time.monotonic()
        cls.tb = tb = Testbed(3, modules_dir=mods, rxe=False).start()
        print(f"booted 3 guests in {time.monotonic() - t:.1f} s", flush=True)
        try:
            os.makedirs(os.path.join(tb.scratch, "out"))
            rdma_setup(tb, CRX, RANGES, KEY, "/tmp/key", verbose=True)
        except BaseException:
            tb.close()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.tb:
            cls.tb.close()

    # -- helpers -------------------------------------------------------------
    def out(self, name):
        return os.path.join(self.tb.scratch, "out", name)

    def make_bundle(self, cid, port, seq_args="", command=None):
        """A bundle in the scratch dir (same path in every guest) whose
        process is the receiver, stdout/stderr into /out/<cid>.json|.err.
        command: crx-verbs-seq's whole argument string instead of the
        receiver's (e.g. "send --connect HOST --port P ..."), same stdio."""
        b = os.path.join(self.tb.scratch, "bundle-" + cid)
        os.makedirs(b)
        with open(os.path.join(ROOT, "bundles", "rdma-seq", "config.json")) as f:
            spec = json.load(f)
        spec["root"]["path"] = self.rootfs
        # stdio from the container's own /dev/null and /out: what `crx run
        # -d` hands over lives in a mount CRIU cannot see from inside.
        if command is None:
            command = (f"recv --port {port} --stall-timeout 0 --progress 5 {RECV_MODE} "
                       f"--ready-file /out/{cid}.ready {seq_args}")
        spec["process"]["args"] = [
            "sh", "-c",
            f"exec </dev/null >/out/{cid}.json 2>/out/{cid}.err; "
            f"exec crx-verbs-seq {command}"]
        spec["mounts"].append({"destination": "/out", "type": "bind",
                               "source": os.path.join(self.tb.scratch, "out"),
                               "options": ["rbind", "rw"]})
        with open(os.path.join(b, "config.json"), "w") as f:
            json.dump(spec, f, indent=1)
        return b

    def start_pair(self, cid, port, count, rate, seq_args="", recv_args=""):
        """Receiver container on g0, sender process on g1; returns the
        sender's handle once the receiver is connected and ready. count
        None: the sender runs until finish() ends it (end_sender), so a
        test lasts as long as its moves, however long they take on the
        host, and no longer."""
        b = self.make_bundle(cid, port, f"{seq_args} {recv_args}")
        self.addCleanup(self.discard, cid, port)
        self.sh(self.tb, 0, f"{CRX} run -d -b {b} {cid} </dev/null >/dev/null 2>&1", timeout=300)
        self.ports[cid] = port
        if count is None:
            count = 10 ** 9
        sh = self.tb.spawn(1, f"{SEQ} send --connect {self.tb.ip(0)} --port {port} "
                              f"--count {count} --rate {rate} --stall-timeout 0 --progress 5 "
                              f"{seq_args} 2>/tmp/{cid}.send.err")
        def not_ready():
            return (f"the receiver: {self.read(cid + '.err')}\nsender: {sh.result} "
                    + self.tb.run(1, f"cat /tmp/{cid}.send.err")[1])

        def ready():
            if os.path.exists(self.out(cid + ".ready")):
                return True
            if sh.done.is_set():
                self.fail("the sender ended before the receiver was ready: " + not_ready())
            return False
        wait_until(ready, 180, not_ready)
        return sh

    def discard(self, cid, port):
        """start_pair's cleanup: a test that failed half-way must leave no
        receiver and no sender with verbs objects behind. test_12 once
        failed before its finish() and left its receiver on g2; test_4's
        `rdma link delete rxe0` there then waited for it, and every later
        test found no device on g2 (CI, 2026-12-05). Nothing is left to
        do after finish(): the sender has exited and the container is
        deleted."""
        self.tb.run(1, f"pkill -KILL -f '^{SEQ} send .*--port {port} '; true")
        for k in range(self.tb.n):
            self.tb.run(k, f"{CRX} delete --force {cid} >/dev/null 2>&1; true")

    def read(self, name):
        try:
            with open(self.out(name)) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def progress(self, cid):
        """Messages the receiver has had so far: its summary's count once it
        has ended, else its last progress line's (every 5 s), else 0. The
        summary counts: a partner held back by a move catches up at full
        speed, and the receiver can get the rest and end before its next
        progress line (test_10 failed that way on a loaded host)."""
        for line in reversed(self.read(cid + ".json").splitlines()):
            try:
                return json.loads(line)["messages"]
            except (ValueError, KeyError, TypeError):
                continue
        for line in reversed(self.read(cid + ".err").splitlines()):
            try:
                return json.loads(line)["progress"]["messages"]
            except (ValueError, KeyError, TypeError):
                continue
        return 0

    def wait_progress(self, cid, above, timeout=120):
        return wait_until(lambda: (lambda n: n if n > above else 0)(self.progress(cid)),
                          timeout, lambda: f"the receiver to count above {above}, stuck at "
                          f"{self.progress(cid)} messages:\n{self.read(cid + '.err')[-2000:]}",
                          interval=1)

    def state(self, k, cid):
        rc, out, err = self.tb.run(k, f"{CRX} state {cid}", timeout=120)
        return json.loads(out)["status"] if rc == 0 else None

    def end_sender(self, port):
        """SIGUSR1 to the sender of start_pair(port) on g1: it sends FIN on
        every QP and exits normally (finish() with count=None then checks
        that the receiver got whatever it sent)."""
        self.sh(self.tb, 1, "for p in $(pgrep -x crx-verbs-seq); do "
                            f"tr '\\0' ' ' </proc/$p/cmdline | grep -q -- '--port {port} ' "
                            "&& kill -USR1 $p; done; true")

    def finish(self, cid, sender, count, qps=1, k=0, end=None):
        """Both ends finish ok; the receiver saw every message exactly once
        and in order. k: the guest the container ends on. count None: the
        sender runs until ended here (start_pair(count=None)), and any
        total will do; end: how to end it, when not start_pair's."""
        if count is None:
            self.assertFalse(sender.done.is_set(),
                             f"the sender ended before it was told to: {sender.result}")
            if end:
                end()
            else:
                self.end_sender(self.ports[cid])
        rc, sout, serr = self.tb.wait(sender, timeout=600)
        send_err = self.sh(self.tb, 1, f"tail -5 /tmp/{cid}.send.err")
        self.assertEqual(rc, 0, f"sender failed:\n{sout}\n{send_err}")
        ssum = json.loads(sout.strip().splitlines()[-1])
        text = wait_until(lambda: self.read(cid + ".json").strip(), 120,
                          lambda: f"the receiver's summary:\n{self.read(cid + '.err')[-2000:]}",
                          interval=1)
        rsum = json.loads(text.splitlines()[-1])
        print(f"{cid}: sender {json.dumps(ssum)}\n{cid}: receiver {json.dumps(rsum)}", flush=True)
        self.assertTrue(ssum["ok"], ssum)
        self.assertTrue(rsum["ok"], rsum)
        for key in ("duplicates", "out_of_order", "missing", "unexpected", "errors"):
            self.assertEqual(rsum[key], 0, f"{key}: {rsum}")
        self.assertEqual(rsum["qps"], qps)
        self.assertEqual(rsum["messages"], ssum["messages"], "every message received exactly once")
        if count is not None:
            self.assertEqual(ssum["messages"], count * qps)
        # The container's process has exited: the container is stopped.
        try:
            wait_until(lambda: self.state(k, cid) == "stopped", 60, "stopped", interval=1)
        except AssertionError:
            diag = self.tb.run(k, f"{CRX} state {cid}; ps -eo pid,ppid,stat,wchan:32,cmd; "
                                  f"for p in $(pgrep -f '[c]rx-verbs-seq'); do echo $p; cat /proc/$p/stack; "
                                  f"gdb -p $p -batch -ex bt 2>&1 | grep '^#'; "
                                  f"ls -l /proc/$p/task; done; rdma resource show qp; "
                                  "dmesg | sed -n '/cut here/,$p' | head -60; dmesg | tail -20")[1]
            # A QP whose last packets the NIC still holds cannot be destroyed
            # (each sent skb holds a reference); does a packet sent now,
            # which makes virtio_net reclaim its finished ones, release it?
            self.tb.run(k, f"ping -c 1 -W 1 {self.tb.ip(1 if k != 1 else 0)}")
            try:
                wait_until(lambda: self.state(k, cid) == "stopped", 15, "stopped", interval=0.5)
                diag += f"\n=> it stopped once g{k} sent a packet (virtio_net reclaimed its TX ring)"
            except AssertionError:
                diag += f"\n=> still not stopped 15 s after g{k} sent a packet"
            self.fail(f"{cid} did not stop after its process finished:\n{diag}")
        self.sh(self.tb, k, f"{CRX} delete {cid}")

    def start_receive(self, k, log):
        h = self.tb.spawn(k, f"{CRX} receive --listen 0.0.0.0:{MPORT} --key /tmp/key --once "
                             f"--image-dir /run/crx-migrate --format json 2>{log}")
        wait_until(lambda: listening(self.tb, k, MPORT), 60, "crx receive to listen")
        return h

    def try_migrate(self, cid, src, dst, args=""):
        """crx migrate cid from guest src to guest dst (crx receive --once
        there): (rc, stdout, stderr, receiver rc, receiver log, seconds).
        args: more `crx migrate` flags (e.g. "--pre-copy 2")."""
        log = f"/tmp/receive-{cid}-{dst}.log"
        rh = self.start_receive(dst, log)
        t = time.monotonic()
        rc, out, err = self.tb.run(src, f"{CRX} migrate {cid} --to {self.tb.ip(dst)}:{MPORT} "
                                        f"--key /tmp/key --format json {args}", timeout=900)
        took = time.monotonic() - t
        rrc, rout, rerr = self.wait_receive(rh, dst, log, f"crx migrate ({rc}):\n{out}{err}", rc)
        rlog = rout + self.tb.run(dst, f"cat {log}")[1]
        return rc, out, err, rrc, rlog, took

    def wait_receive(self, rh, k, log, sender, sender_rc=0, timeout=300):
        """VmTestCase.wait_receiver for a receiver logging to `log`."""
        return self.wait_receiver(self.tb, rh, k, sender, sender_rc, timeout, log)

    def migrate(self, cid, src, dst, args="", arrives="running"):
        """crx migrate cid from guest src to guest dst; returns the report.
        args: more `crx migrate` flags; arrives: its state on dst."""
        before = self.queue_maps(src, cid)
        rc, out, err, rrc, rlog, took = self.try_migrate(cid, src, dst, args)
        rout = ""
        self.assertEqual(rc, 0, f"migrate g{src}->g{dst} failed:\n{out}\n{err}\n"
                                f"receiver ({rrc}):\n{rout}\n{rlog}\n"
                                f"the container's output:\n{self.read(cid + '.json')}"
                                f"{self.read(cid + '.err')[-1500:]}")
        self.assertEqual(rrc, 0, f"receiver:\n{rout}\n{rlog}")
        report = json.loads(out.strip().splitlines()[-1])
        print(f"migrate {cid} g{src} -> g{dst} ({took:.1f} s): {report_line(report)}", flush=True)
        self.assertEqual(report["outcome"], "migrated")
        # quiet success: CRIU's and libnftables' output stays in CRIU's log
        self.assertNotIn("Error", err + rlog, "a successful migration printed an error")
        self.assertIsNone(self.state(src, cid), "the source copy must be gone")
        self.assertEqual(self.state(dst, cid), arrives,
                         f"after the move, rounds {report.get('rounds')}; the container's "
                         f"output:\n{self.read(cid + '.json')}{self.read(cid + '.err')[-1500:]}")
        print(f"g{src} {cid} queue mappings before:\n{before}\n"
              f"g{dst} {cid} queue mappings after:\n{self.queue_maps(dst, cid)}", flush=True)
        return report

    def queue_maps(self, k, cid):
        """The container init's mappings of the uverbs device (its rings):
        a ring mapped anonymously after a restore would never reach rxe."""
        return self.tb.run(k, f"p=$({CRX} state {cid} | sed -n 's/.*\"pid\": *\\([0-9]*\\).*/\\1/p'); "
                              "grep -E 'uverbs|infiniband' /proc/$p/maps")[1].strip()

    # -- shared by the fault and shaped-link cases of both files ---------------
    def tc(self, k, rules):
        """Replace eth0's root qdisc of guest k by a prio qdisc plus rules
        (a qdisc on band 1:3 and a filter sending what it shapes there);
        the default bands (everything else) stay unshaped."""
        self.sh(self.tb, k, "modprobe -a sch_prio sch_tbf sch_netem cls_u32 act_gact && "
                            "tc qdisc add dev eth0 root handle 1: prio && " + rules)

    def untc(self, k):
        self.sh(self.tb, k, "tc qdisc del dev eth0 root")

    def assert_source_carries_on(self, cid, rc, out, err, rlog):
        """After a failed migration: one copy, running on g0, counting on."""
        print(f"crx migrate ({rc}):\n{out}{err}\nreceiver:\n{rlog}", flush=True)
        self.assertNotEqual(rc, 0, "the migration must fail")
        self.assertEqual(self.state(0, cid), "running", "the source must run on")
        self.assertIsNone(self.state(2, cid), "no copy on the destination")

    def verbs_numbers(self, k):
        """(QPNs, MR indices) of the crx-verbs-seq processes on guest k, as
        rdma_rxe shows them (`rdma -j resource show qp|mr`). rdma's "mrn"
        is the RDMA core's own resource id, not rxe's MR index: that is
        the lkey (printed in hex) without its low key byte."""
        def numbers(kind, key, shift=0):
            out = self.sh(self.tb, k, f"rdma -j resource show {kind}")
            return sorted(int(str(r[key]), 16 if shift else 10) >> shift
                          for r in json.loads(out or "[]")
                          if r.get("comm") == "crx-verbs-seq" and key in r)
        return numbers("qp", "lqpn"), numbers("mr", "lkey", 8)
