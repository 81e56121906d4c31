#!/usr/bin/python3
"""Boot one guest, run commands; the guest is set up as the issue demands."""
import os
import time
import unittest

import testbed
from vmtest import VmTestCase, main


class BootTest(VmTestCase):
    def test_boot_one_guest(self):
        tb = self.boot(1)
        out = self.sh(tb, 0, "uname -r")
        self.assertEqual(out.strip(), tb.abi, "guest kernel is not the resolved ABI")
        self.assertRegex(tb.abi, r"^6\.1\.\d+-\d+-amd64$")

        rc, out, err = tb.run(0, "echo out; echo err >&2; exit 7", timeout=60)
        self.assertEqual((rc, out, err), (7, "out\n", "err\n"))
        rc, _, _ = tb.run(0, "kill -TERM $$", timeout=60)
        self.assertEqual(rc, -15)

        # Identity and network.
        self.assertEqual(self.sh(tb, 0, "hostname").strip(), "g0")
        self.assertEqual(self.sh(tb, 0, "cat /sys/class/net/eth0/address").strip(), tb.mac(0))
        self.assertIn(f"inet {tb.ip(0)}/24", self.sh(tb, 0, "ip -o -4 addr show dev eth0"))
        self.assertIn("UP", self.sh(tb, 0, "ip -o link show lo"))
        self.assertIn(tb.ip(0), self.sh(tb, 0, "getent hosts g0"))

        # Mounts the tests rely on.
        mounts = {}
        for line in self.sh(tb, 0, "cat /proc/self/mounts").splitlines():
            dev, path, fstype = line.split()[:3]
            mounts[path] = fstype
        for path, fstype in {"/sys/fs/cgroup": "cgroup2", "/dev/pts": "devpts",
                             "/dev/shm": "tmpfs", "/tmp": "tmpfs", "/run": "tmpfs",
                             "/": "overlay", "/usr/lib/modules": "9p",
                             tb.scratch: "9p"}.items():
            self.assertEqual(mounts.get(path), fstype, f"{path} in guest")
        ctrl = self.sh(tb, 0, "cat /sys/fs/cgroup/cgroup.controllers").split()
        subtree = self.sh(tb, 0, "cat /sys/fs/cgroup/cgroup.subtree_control").split()
        self.assertEqual(sorted(ctrl), sorted(subtree))
        self.assertIn("memory", subtree)

        self.sh(tb, 0, "test -c /dev/net/tun && test -c /dev/ptmx && test -L /dev/fd")

        # The host root is read-only underneath, writable through the overlay.
        self.sh(tb, 0, "touch /etc/crx-vm-probe && test -e /etc/crx-vm-probe")
        self.assertFalse(os.path.exists("/etc/crx-vm-probe"))

        # rxe on the guest NIC.
        self.assertRegex(self.sh(tb, 0, "rdma link show"), r"rxe0/1 state ACTIVE .*netdev eth0")
        self.assertIn("rxe0", self.sh(tb, 0, "ibv_devices"))

        # The scratch dir is shared both ways at the same path.
        with open(os.path.join(tb.scratch, "from-host"), "w") as f:
            f.write("hello guest\n")
        self.assertEqual(self.sh(tb, 0, f"cat {tb.scratch}/from-host"), "hello guest\n")
        self.sh(tb, 0, f"echo hello host > {tb.scratch}/from-guest")
        with open(os.path.join(tb.scratch, "from-guest")) as f:
            self.assertEqual(f.read(), "hello host\n")

        # The guest's clock runs at the host's pace (a miscalibrated TSC under
        # TCG once made it run 10x fast); bounds are loose on purpose.
        t0, u0 = time.monotonic(), float(self.sh(tb, 0, "cut -d' ' -f1 /proc/uptime"))
        time.sleep(10)
        t1, u1 = time.monotonic(), float(self.sh(tb, 0, "cut -d' ' -f1 /proc/uptime"))
        rate = (u1 - u0) / (t1 - t0)
        self.assertTrue(0.5 < rate < 2.0, f"guest clock runs at {rate:.2f}x the host's")

        # Background commands.
        h = tb.spawn(0, "sleep 1; echo late")
        self.assertEqual(self.sh(tb, 0, "echo early"), "early\n")
        self.assertEqual(tb.wait(h, timeout=60), (0, "late\n", ""))
        h = tb.spawn(0, "sleep 600")
        tb.kill(h)
        self.assertEqual(tb.wait(h, timeout=60)[0], -9)

    @unittest.skipUnless(os.path.exists(os.path.join(testbed.CPU_CGROUP_V1, "cpu.cfs_quota_us")),
                         "the host has no cgroup v1 cpu controller (cap_vcpu needs it)")
    def test_two_vcpus_one_capped(self):
        """What the MPI bench's spare core (tests/bench/mpi, Result 27) is
        made of: a guest with a second vCPU, one vCPU held to a share of a
        host core, the cap gone with the test bed."""
        tb = self.boot(1, rxe=False, vcpus={0: 2})
        self.assertEqual(self.sh(tb, 0, "nproc").strip(), "2")
        self.assertEqual(sorted(tb.vcpu_threads(0)), [0, 1])
        tb.cap_vcpu(0, 1, 0.2)
        cap = os.path.join(testbed.CPU_CGROUP_V1, f"{testbed.TEMP_PREFIX}{os.getpid()}-g0-cpu1")
        with open(os.path.join(cap, "tasks")) as f:
            self.assertEqual(f.read().split(), [str(tb.vcpu_threads(0)[1])])
        # a busy loop on vCPU 1 runs into the quota
        self.sh(tb, 0, "taskset -c 1 timeout 2 sh -c 'while :; do :; done' || [ $? = 124 ]")
        self.assertGreater(self.throttled(cap), 0)
        tb.close()
        self.assertFalse(os.path.exists(cap), "the vCPU's cgroup outlived its test bed")
        self.assertEqual(testbed.leftovers({os.getpid()}), [])

    @staticmethod
    def throttled(cap):
        with open(os.path.join(cap, "cpu.stat")) as f:
            return int(dict(line.split() for line in f)["nr_throttled"])


if __name__ == "__main__":
    main()
