#!/usr/bin/python3
"""crx-verbs-seq between two guests with the stock rdma_rxe: messages over 1
and 16 RC QPs and over an SRQ arrive exactly once and in order, and the
checker really fails when the sender breaks the contract on purpose.

The program under test is $CRX_VERBS_SEQ (ctest sets it); g1 receives and
listens for the set-up exchange, g0 sends and connects."""
import json
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from vmtest import Testbed, VmTestCase, main  # noqa: E402

SEQ = os.environ.get("CRX_VERBS_SEQ", "")
SENDER, RECEIVER = 0, 1
OOPS = r"Oops|BUG:|WARNING:|general protection|Call Trace"


def summary(out):
    """The JSON summary: the last line of stdout."""
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if not lines:
        raise AssertionError(f"no JSON summary in output:\n{out}")
    return json.loads(lines[-1])


class SeqTest(VmTestCase):
    tb = None

    @classmethod
    def setUpClass(cls):
        if not os.access(SEQ, os.X_OK):
            raise unittest.SkipTest("set CRX_VERBS_SEQ to the crx-verbs-seq binary")
        t = time.monotonic()
        cls.tb = Testbed(2).start()
        print(f"booted 2 guests in {time.monotonic() - t:.1f} s", flush=True)

    @classmethod
    def tearDownClass(cls):
        if cls.tb:
            cls.tb.close()

    def tearDown(self):
        for k in (SENDER, RECEIVER):
            rc, out, _ = self.tb.run(k, "dmesg", timeout=60)
            self.assertNotRegex(out, OOPS, f"{self.tb.name(k)} kernel log:\n{out}")

    def pair(self, recv_args, send_args, port, timeout=600):
        """Receiver in g1, sender in g0; returns ((rc, summary), (rc, summary))."""
        tb = self.tb
        h = tb.spawn(RECEIVER, f"{SEQ} recv --port {port} {recv_args}")
        try:
            src, sout, serr = tb.run(SENDER, f"{SEQ} send --connect {tb.ip(RECEIVER)} "
                                             f"--port {port} {send_args}", timeout=timeout)
        finally:
            rrc, rout, rerr = tb.wait(h, timeout=timeout)
        print(f"send rc={src} {sout.strip()}\nrecv rc={rrc} {rout.strip()}", flush=True)
        ctx = f"\n--- sender ({src}):\n{sout}{serr}\n--- receiver ({rrc}):\n{rout}{rerr}"
        self.assertIn(src, (0, 1), "the sender did not get through set-up" + ctx)
        self.assertIn(rrc, (0, 1), "the receiver did not get through set-up" + ctx)
        return (src, summary(sout), ctx), (rrc, summary(rout), ctx)

    def assert_clean(self, result, qps, count, size):
        (src, s, ctx), (rrc, r, _) = result
        self.assertEqual((src, rrc), (0, 0), "a side reported a failure" + ctx)
        self.assertTrue(s["ok"] and r["ok"], ctx)
        self.assertEqual(r["messages"], qps * count, ctx)
        self.assertEqual(s["messages"], qps * count, ctx)
        self.assertEqual(r["bytes"], qps * count * size, ctx)
        for key in ("out_of_order", "duplicates", "missing", "unexpected", "errors"):
            self.assertEqual(r[key], 0, f"{key}{ctx}")

    def test_one_qp_multi_packet_messages(self):
        # 4 KiB over a 1 KiB path MTU: every message is 4 packets; each byte checked.
        args = "--qps 1 --count 300 --size 4096 --verify-payload"
        self.assert_clean(self.pair(args, args, 18600), 1, 300, 4096)

    def test_sixteen_qps(self):
        args = "--qps 16 --count 100 --size 256 --window 8"
        self.assert_clean(self.pair(args, args, 18601), 16, 100, 256)

    def test_sixteen_qps_on_srq(self):
        args = "--qps 16 --count 100 --size 256 --window 8"
        self.assert_clean(self.pair(args + " --srq", args, 18602), 16, 100, 256)

    def test_duration_and_rate(self):
        # --duration ends the run by time; the FIN message tells the receiver
        # the total, which must match what the sender completed.
        args = "--qps 2 --size 128"
        (src, s, ctx), (rrc, r, _) = self.pair(args, args + " --duration 4 --rate 100", 18606)
        self.assertEqual((src, rrc), (0, 0), ctx)
        self.assertGreater(r["messages"], 0, ctx)
        self.assertEqual(r["messages"], s["messages"], ctx)
        for key in ("out_of_order", "duplicates", "missing", "unexpected", "errors"):
            self.assertEqual(r[key], 0, f"{key}{ctx}")

    def test_checker_fails_on_duplicate(self):
        args = "--qps 2 --count 50"
        (src, s, ctx), (rrc, r, _) = self.pair(args, args + " --inject-dup 17", 18603)
        self.assertEqual(src, 0, "the sender itself saw nothing wrong" + ctx)
        self.assertEqual(rrc, 1, "the receiver must fail" + ctx)
        self.assertFalse(r["ok"], ctx)
        self.assertEqual((r["duplicates"], r["missing"], r["out_of_order"]), (1, 0, 0), ctx)
        self.assertEqual(r["messages"], 2 * 50 + 1, ctx)

    def test_checker_fails_on_gap(self):
        args = "--qps 2 --count 50"
        (src, s, ctx), (rrc, r, _) = self.pair(args, args + " --inject-skip 17", 18604)
        self.assertEqual(src, 0, ctx)
        self.assertEqual(rrc, 1, "the receiver must fail" + ctx)
        self.assertEqual((r["duplicates"], r["missing"], r["out_of_order"]), (0, 1, 1), ctx)

    def test_receiver_reports_a_vanished_sender(self):
        # The sender dies mid-transfer: the receiver must not hang or pass, but
        # report the stall once --stall-timeout has passed, and show it was
        # alive until then with progress lines.
        tb = self.tb
        port = 18605
        ready = os.path.join(tb.scratch, "sender.ready")
        h = tb.spawn(RECEIVER, f"{SEQ} recv --port {port} --stall-timeout 10 --progress 1")
        snd = tb.spawn(SENDER, f"exec {SEQ} send --connect {tb.ip(RECEIVER)} --port {port} "
                               f"--count 1000000 --rate 100 --ready-file {ready}")
        self.sh(tb, SENDER, f"for i in $(seq 1200); do [ -s {ready} ] && exit 0; sleep 0.1; done; "
                            "exit 1", timeout=180)
        time.sleep(5)
        self.assertFalse(h.done.is_set(), "the receiver ended while the sender was running")
        self.assertFalse(snd.done.is_set(), "the sender ended early")
        tb.kill(snd, signal.SIGKILL)
        tb.wait(snd, timeout=60)
        rrc, rout, rerr = tb.wait(h, timeout=120)
        r = summary(rout)
        self.assertEqual(rrc, 1, rout + rerr)
        self.assertGreater(r["messages"], 0, rout)
        self.assertIn("stalled", r.get("first_error", ""), rout)
        self.assertEqual((r["duplicates"], r["out_of_order"]), (0, 0), rout)
        progress = [json.loads(l)["progress"] for l in rerr.splitlines() if l.startswith('{"progress"')]
        self.assertGreaterEqual(len(progress), 5, rerr)
        self.assertGreater(progress[-1]["messages"], progress[0]["messages"], rerr)

if __name__ == "__main__":
    main()
