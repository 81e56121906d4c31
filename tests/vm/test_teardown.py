#!/usr/bin/python3
"""Teardown leaves nothing on the host: after the suite (this test runs last),
and when a test bed's owner fails, is interrupted or is killed."""
import os
import signal
import subprocess
import sys
import time

from vmtest import VmTestCase, main, testbed, wait_until

CHILD = r"""
import sys, time
sys.path.insert(0, {here!r})
from testbed import Testbed
mode = {mode!r}
with Testbed(1, rxe=False) as tb:
    print("booted", flush=True)
    if mode == "fail":
        raise RuntimeError("a failing test")
    time.sleep(3600)
"""


def qemu_pids(owner):
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmd = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            if "qemu-system" in cmd and f"{testbed.TEMP_PREFIX}{owner}." in cmd:
                pids.append(int(entry))
    return pids


class TeardownTest(VmTestCase):
    def test_0_the_suite_left_nothing(self):
        self.assertEqual(testbed.leftovers(), [])

    def owner(self, mode):
        child = subprocess.Popen([sys.executable, "-c", CHILD.format(
            here=os.path.dirname(testbed.__file__), mode=mode)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.reap, child)
        return child

    @staticmethod
    def reap(child):
        if child.poll() is None:
            child.kill()
        child.communicate()

    def interrupt_while_booting(self, sig):
        child = self.owner("sleep")
        wait_until(lambda: qemu_pids(child.pid), 300, "qemu", interval=0.2)
        time.sleep(2)  # let it get going
        child.send_signal(sig)
        child.wait(timeout=120)
        wait_until(lambda: not qemu_pids(child.pid), 60, "qemu to go", interval=0.2)
        return child

    def test_sigint(self):
        child = self.interrupt_while_booting(signal.SIGINT)
        self.assertEqual(testbed.leftovers({child.pid}), [])

    def test_sigterm(self):
        child = self.interrupt_while_booting(signal.SIGTERM)
        self.assertEqual(child.returncode, -signal.SIGTERM)
        self.assertEqual(testbed.leftovers({child.pid}), [])

    def test_sigkill(self):
        child = self.interrupt_while_booting(signal.SIGKILL)
        # qemu and the namespace's holder die with their owner (PDEATHSIG),
        # the holder removing the temp dir on its way out.
        wait_until(lambda: not testbed.leftovers({child.pid}),
                   60, "everything to go", interval=0.2)

    def test_failing_test(self):
        child = self.owner("fail")
        out, err = child.communicate(timeout=600)
        self.assertIn("booted", out)
        self.assertIn("RuntimeError: a failing test", err)
        self.assertEqual(testbed.leftovers({child.pid}), [])


if __name__ == "__main__":
    main()
