#!/usr/bin/python3
"""The host integration suite (crx_host_tests) again inside a guest: there
/sys/fs/cgroup is pure cgroup2 with every controller, so the v2 cgroup
driver (and the eBPF device filter) is proven by the same tests that prove
the v1 hybrid driver on the host."""
import os

from vmtest import VmTestCase, main


class HostSuiteInGuest(VmTestCase):
    def test_host_suite_passes_on_pure_cgroup_v2(self):
        binary = os.path.join(os.environ["CRX_BUILD_DIR"], "tests", "host", "crx_host_tests")
        self.assertTrue(os.access(binary, os.X_OK), f"{binary} is not built")
        tb = self.boot(1, rxe=False, cache="none")
        self.assertIn("cgroup2", self.sh(tb, 0, "stat -f -c %T /sys/fs/cgroup"))
        # fewer leak cycles under TCG; the 500-cycle run happens on the host
        rc, out, err = tb.run(0, f"CRX_LEAK_CYCLES=50 {binary} --gtest_brief=1 2>&1", timeout=1500)
        print(out[-6000:])
        self.assertEqual(rc, 0, "crx_host_tests failed in the guest (pure cgroup v2)")
        self.assertIn("PASSED", out)


if __name__ == "__main__":
    main()
