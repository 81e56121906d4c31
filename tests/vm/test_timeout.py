#!/usr/bin/python3
"""A hung guest is killed at its time-out and reported as a failure that
carries its console log; a guest that dies is reported the same way."""
from vmtest import VmTestCase, main, testbed


class TimeoutTest(VmTestCase):
    def test_hung_guest_is_killed_with_console_log(self):
        # panic=0: a panicking kernel hangs instead of rebooting.
        tb = self.boot(1, rxe=False, extra_cmdline="panic=0")
        g = tb.guests[0]
        tb.spawn(0, "echo 1 > /proc/sys/kernel/sysrq; echo c > /proc/sysrq-trigger")
        with self.assertRaises(testbed.GuestTimeout) as caught:
            tb.run(0, "sleep 5; echo still alive", timeout=15)
        msg = str(caught.exception)
        self.assertIn("did not finish within 15 s: guest killed", msg)
        self.assertIn("--- console log of g0", msg)
        self.assertIn("crx-vm: g0 ready", msg)             # the log of this boot
        self.assertIn("Kernel panic", msg)                  # and how it hung
        self.assertIsNotNone(g.proc.poll(), "qemu of the hung guest still runs")
        with self.assertRaises(testbed.GuestDied):
            tb.run(0, "true", timeout=10)

    def test_dead_guest_is_reported_with_console_log(self):
        tb = self.boot(1, rxe=False)
        with self.assertRaises(testbed.GuestDied) as caught:
            tb.run(0, "echo 1 > /proc/sys/kernel/sysrq; echo c > /proc/sysrq-trigger; sleep 60",
                   timeout=120)
        self.assertIn("Kernel panic", str(caught.exception))
        self.assertIn("qemu exited", str(caught.exception))


if __name__ == "__main__":
    main()
