#!/usr/bin/python3
"""The host integration suite (crx_host_tests) again inside a guest: there
/sys/fs/cgroup is pure cgroup2 with every controller, so the v2 cgroup
driver (and the eBPF device filter) is proven by the same tests that prove
the v1 hybrid driver on the host. tests/soak's create/start/kill/delete
cycles (crx_soak_tests) run here too, 50 of them.

Not the whole suite: the suites below never reach the cgroup driver in a
way the host run does not already prove (argument and config parsing,
namespaces, rootfs and mounts, process attributes, hooks, console, fds,
list, runc's output compared), so they are left to the host run; what
they cost here under TCG (about 40% of the suite) is the vm label's time
budget. What creates, limits, freezes, joins, updates or removes a
cgroup, the device filter, and the tests that only run where kernel TLS
exists (MigrateKernelTls, MigratePageRelay) or where CRIU can set up a
dump (StartedDump) run here."""
import os

from vmtest import VmTestCase, main


HOST_ONLY = [
    "ErrorLines.*", "GlobalFlags.*", "Spec.*", "Features.*", "Namespaces.*", "Rootfs.*",
    "Mounts.*", "Process.*", "Hooks.*", "Console.*", "Fds.*", "List.*", "RuncParity.*",
    # parsing only; the cases that create and then fail or get killed stay
    "BadInput.MalformedJson", "BadInput.MissingRequiredFieldNamesItsPath",
    "BadInput.WrongTypeNamesItsPath", "BadInput.MissingRootfs", "BadInput.UnknownCapability",
    "BadInput.UnknownNamespaceType", "BadInput.InvalidIds",
]


class HostSuiteInGuest(VmTestCase):
    def test_host_suite_passes_on_pure_cgroup_v2(self):
        build = os.environ["CRX_BUILD_DIR"]
        binaries = [os.path.join(build, "tests", "host", "crx_host_tests"),
                    os.path.join(build, "tests", "soak", "crx_soak_tests")]
        for binary in binaries:
            self.assertTrue(os.access(binary, os.X_OK), f"{binary} is not built")
        tb = self.boot(1, rxe=False, cache="none")
        self.assertIn("cgroup2", self.sh(tb, 0, "stat -f -c %T /sys/fs/cgroup"))
        for binary in binaries:
            # the soak's cycles too, fewer under TCG (the host runs more);
            # of the host suite, what reaches the cgroup driver
            soak = binary.endswith("crx_soak_tests")
            only = "" if soak else f"--gtest_filter=-{':'.join(HOST_ONLY)} "
            # a guest's modules are the test's to unload (ConntrackNetlink),
            # and CRIU can set up a dump there (StartedDump)
            env = "CRX_SOAK_CYCLES=50 CRX_TEST_UNLOAD_MODULES=1 CRX_TEST_CRIU_DUMPS=1"
            rc, out, err = tb.run(0, f"{env} {binary} --gtest_brief=1 {only}2>&1", timeout=1500)
            print(out[-6000:])
            self.assertEqual(rc, 0, f"{os.path.basename(binary)} failed in the guest (pure cgroup v2)")
            self.assertIn("PASSED", out)


if __name__ == "__main__":
    main()
