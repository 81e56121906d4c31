#!/usr/bin/python3
"""The rdma_rxe that DKMS built from crx-rxe-dkms (dkms-build.sh) in a
guest running Debian's 6.1 kernel: it is the module the guest loads, it is
crx's patched one, and the rxe device comes up on it.

  dkms-guest.py <output dir of build-deb.sh>     (root; a qemu guest)

Each check fails on Debian's stock rdma_rxe: it has no module version, no
qpn_min parameter, another srcversion, and lives in kernel/, not
updates/dkms.
"""
import os
import sys

sys.path.insert(0, os.environ.get("CRX_VM_DIR") or
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm"))
from vmtest import VmTestCase  # noqa: E402
import unittest  # noqa: E402

OUT = sys.argv.pop(1) if len(sys.argv) > 1 else ""


def read(name):
    with open(os.path.join(OUT, "dkms", name)) as f:
        return f.read().strip()


class DkmsGuestTest(VmTestCase):
    def test_dkms_rdma_rxe_loads_and_brings_up_rxe0(self):
        modules = os.path.join(OUT, "dkms", "modules")
        if not os.path.isdir(modules):
            self.fail(f"{modules} missing: did package_dkms_build pass?")
        version, srcversion = read("version"), read("srcversion")
        # rxe=True: the guest's init insmods the rdma_rxe that modules.dep
        # names, and stage 2 creates rxe0 on eth0.
        tb = self.boot(1, modules_dir=modules)
        self.assertEqual(self.sh(tb, 0, "cat /sys/module/rdma_rxe/version").strip(), version)
        self.assertEqual(self.sh(tb, 0, "cat /sys/module/rdma_rxe/srcversion").strip(),
                         srcversion, "the loaded rdma_rxe is not the .ko DKMS installed")
        path = self.sh(tb, 0, "modinfo -n rdma_rxe").strip()
        self.assertTrue(path.endswith("/updates/dkms/rdma_rxe.ko"), path)
        self.sh(tb, 0, "test -e /sys/module/rdma_rxe/parameters/qpn_min")
        link = self.sh(tb, 0, "rdma link show rxe0/1")
        self.assertIn("state ACTIVE", link)
        self.assertIn("netdev eth0", link)
        dev = self.sh(tb, 0, "ibv_devinfo -d rxe0")
        self.assertIn("PORT_ACTIVE", dev)
        log = self.sh(tb, 0, "dmesg")
        for bad in ("BUG:", "WARNING:", "Oops", "Unknown symbol", "disagrees about version"):
            self.assertNotIn(bad, log)


if __name__ == "__main__":
    if not OUT:
        sys.exit("usage: dkms-guest.py <output dir of build-deb.sh>")
    unittest.main(verbosity=2)
