#!/usr/bin/python3
"""A hung guest is killed at its time-out and reported as a failure that
carries its console log; a guest that dies is reported the same way. A
hung receiver of a migration is looked at and killed, not its guest."""
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

    def test_hung_receiver_is_looked_at_and_killed_not_its_guest(self):
        tb = self.boot(1, rxe=False)
        rh = tb.spawn(0, "echo waiting for a sender; exec sleep 600")
        with self.assertRaises(AssertionError) as caught:
            self.wait_receiver(tb, rh, 0, "crx migrate (0): migrated", timeout=5)
        msg = str(caught.exception)
        self.assertIn("g0: crx receive did not finish within 5 s", msg)
        self.assertIn("sender: crx migrate (0): migrated", msg)
        self.assertIn("waiting for a sender", msg)     # its output, read after the kill
        self.assertIn("sleep 600", msg)                # what ran on the guest then
        self.assertIn("-- dmesg", msg)
        self.assertTrue(rh.done.is_set(), "the hung receiver was not killed")
        self.assertEqual(tb.run(0, "echo up", timeout=30)[1].strip(), "up")


if __name__ == "__main__":
    main()
