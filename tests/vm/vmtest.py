"""Shared bits of the tests/vm tests (unittest, stdlib only)."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testbed  # noqa: E402
from testbed import Testbed  # noqa: E402,F401


class VmTestCase(unittest.TestCase):
    maxDiff = None

    def sh(self, tb, k, cmd, timeout=120):
        """Run cmd in guest k, fail the test (with its output) unless it succeeds."""
        rc, out, err = tb.run(k, cmd, timeout=timeout)
        self.assertEqual(rc, 0, f"{tb.name(k)}: `{cmd}` exited with {rc}\n"
                                f"--- stdout:\n{out}\n--- stderr:\n{err}")
        return out

    def boot(self, n, **kw):
        t = time.monotonic()
        tb = Testbed(n, **kw).start()
        self.addCleanup(tb.close)
        print(f"booted {n} guest(s) in {time.monotonic() - t:.1f} s: " + ", ".join(
            f"{tb.name(k)} {tb.boot_seconds[k]:.1f} s" for k in range(n)), flush=True)
        return tb


def main():
    unittest.main(verbosity=2)
