#!/usr/bin/python3
"""The patched rdma_rxe's uverbs methods under hostile input (label vm).

One guest with the module of rxe-patches/ (build.sh, cached):

- every saved input that once hurt the kernel (regressions/*.kfz) is
  replayed: the kernel stays untainted;
- a process without CAP_CHECKPOINT_RESTORE and CAP_SYS_ADMIN in the
  initial user namespace gets EPERM from every method, with valid and with
  garbage input, and nothing of its objects changed: root with an empty
  bounding set (setpriv), and root of a new user namespace (unshare -U -r),
  which is what an ordinary container's root is; the control: with
  CAP_CHECKPOINT_RESTORE alone the reading methods work;
- kfuzz mutates valid inputs of every method for CRX_KFUZZ_ITERS
  iterations (default 20000; seed CRX_KFUZZ_SEED, default random and
  printed);
- after each step: no WARNING/BUG/Oops/... in the kernel log, the kernel
  is not tainted W or D, `rdma res show` is back at its count before the
  step (nothing leaked); at the end the rxe link is deleted and the module
  unloads (its pools are empty, or rxe_pool_cleanup() warns).

A failing fuzz run leaves the operation in flight and the one that tainted
the kernel in the scratch dir (printed); `kfuzz replay FILE` repeats it.
"""
import os
import re
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.environ.get("CRX_VM_DIR") or
                os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from vmtest import VmTestCase, Testbed, main, patched_rxe_modules, wait_until  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
BAD_LOG = (r"Oops|BUG:|WARNING:|general protection|Call Trace|KASAN|UBSAN|"
           r"refcount_t|possible circular locking|lockdep|kernel BUG|"
           r"list_add corruption|list_del corruption")
ITERS = int(os.environ.get("CRX_KFUZZ_ITERS", "20000"))
SEED = int(os.environ.get("CRX_KFUZZ_SEED", "0")) or int.from_bytes(os.urandom(6), "little")
# taint bits 9 (W, a warning) and 7 (D, a kernel oops)
TAINT_BAD = (1 << 9) | (1 << 7)


class KfuzzTest(VmTestCase):
    tb = None

    @classmethod
    def setUpClass(cls):
        build = os.environ.get("CRX_BUILD_DIR", os.path.join(REPO, "build"))
        cls.tool = os.path.join(build, "tests", "vm", "kfuzz", "kfuzz")
        if not os.access(cls.tool, os.X_OK):
            raise unittest.SkipTest(f"{cls.tool} not built")
        cls.tb = Testbed(1, modules_dir=patched_rxe_modules()).start()
        cls.baseline = cls.res()
        print(f"rdma res before: {cls.baseline}", flush=True)

    @classmethod
    def tearDownClass(cls):
        if cls.tb:
            cls.tb.close()

    @classmethod
    def res(cls):
        rc, out, err = cls.tb.run(0, "rdma res show", timeout=60)
        assert rc == 0, err
        return out.strip()

    def check_kernel(self, what):
        rc, out, _ = self.tb.run(0, f"dmesg | grep -E '{BAD_LOG}' || true", timeout=60)
        self.assertEqual(out.strip(), "", f"after {what}, kernel log:\n{out}")
        taint = int(self.sh(self.tb, 0, "cat /proc/sys/kernel/tainted"))
        self.assertEqual(taint & TAINT_BAD, 0, f"after {what}: kernel tainted {taint}")
        # objects are freed when their uverbs file is released, which the
        # exit of the process starts: give it a moment
        wait_until(lambda: self.res() == self.baseline, 30,
                   lambda: f"rdma res after {what} back at {self.baseline!r}: {self.res()!r}")

    def test_1_regressions(self):
        cases = sorted(os.path.join(HERE, "regressions", f)
                       for f in os.listdir(os.path.join(HERE, "regressions"))
                       if f.endswith(".kfz"))
        if not cases:
            self.skipTest("no regression cases")
        out = self.sh(self.tb, 0, f"{self.tool} replay " + " ".join(cases), timeout=300)
        self.assertIn(f"OK {len(cases)} operation(s) replayed", out)
        print(out.strip(), flush=True)
        self.check_kernel("the regression cases")

    def perm(self, wrapper, expect):
        rc, out, err = self.tb.run(0, f"{wrapper} {self.tool} perm --expect {expect}",
                                   timeout=300)
        self.assertEqual(rc, 0, f"{wrapper}:\n{out}{err}")
        return out

    def test_2_eperm_without_capabilities(self):
        # root with no capability at all (the bounding set limits what
        # exec gives root)
        nocap = "setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all --"
        self.sh(self.tb, 0, f"{nocap} grep -q '^CapEff:.0000000000000000' /proc/self/status")
        out = self.perm(nocap, "eperm")
        self.assertIn("OK perm: every method refused with EPERM", out)
        print("no capabilities:\n" + out.strip(), flush=True)
        # root of its own user namespace: all capabilities there, none in
        # the initial one (an ordinary container's root)
        out = self.perm("unshare -U -r --", "eperm")
        self.assertIn("OK perm: every method refused with EPERM", out)
        print("root of a user namespace: " + out.strip().splitlines()[-1], flush=True)
        # the control: CAP_CHECKPOINT_RESTORE alone is enough
        out = self.perm("setpriv --inh-caps=-all --ambient-caps=-all "
                        "--bounding-set=-all,+checkpoint_restore --", "ok")
        self.assertIn("OK perm", out)
        print("CAP_CHECKPOINT_RESTORE only: " + out.strip().splitlines()[-1], flush=True)
        self.check_kernel("the permission checks")

    def test_3_fuzz(self):
        scratch = os.path.join(self.tb.scratch, "kfuzz")
        os.makedirs(scratch, exist_ok=True)
        print(f"kfuzz: {ITERS} iterations, seed {SEED} (CRX_KFUZZ_ITERS, CRX_KFUZZ_SEED)",
              flush=True)
        t = time.monotonic()
        rc, out, err = self.tb.run(
            0, f"{self.tool} fuzz --iters {ITERS} --seed {SEED} --crash-dir {scratch}",
            timeout=max(600, ITERS // 50))
        took = time.monotonic() - t
        if rc != 0:
            saved = os.path.join(REPO, "build", f"kfuzz-failure-{SEED}")
            self.tb.run(0, f"cp /dev/shm/kfuzz-current.kfz {scratch}/ 2>/dev/null", timeout=60)
            shutil.copytree(scratch, saved, dirs_exist_ok=True)
            self.fail(f"kfuzz seed {SEED} failed ({rc}) after {took:.0f} s; inputs kept "
                      f"in {saved}:\n{out[-6000:]}{err[-2000:]}")
        print(out.strip(), flush=True)
        self.assertRegex(out, re.compile(rf"^OK kfuzz seed {SEED}: {ITERS} iterations", re.M))
        print(f"kfuzz: {ITERS} iterations in {took:.0f} s (guest command)", flush=True)
        self.check_kernel(f"{ITERS} fuzz iterations")

    def test_4_unload(self):
        self.sh(self.tb, 0, "rdma link delete rxe0 && rmmod rdma_rxe", timeout=120)
        self.sh(self.tb, 0, "! grep -q '^rdma_rxe ' /proc/modules")
        rc, out, _ = self.tb.run(0, f"dmesg | grep -E '{BAD_LOG}' || true", timeout=60)
        self.assertEqual(out.strip(), "", f"after rmmod, kernel log:\n{out}")


if __name__ == "__main__":
    main()
