#!/usr/bin/python3
"""In a guest: `criu check` passes; a counting process dumped with `criu dump`
and brought back with `criu restore` continues from where it stopped."""
import time

from vmtest import VmTestCase, main, wait_for_count

COUNTER = ("setsid bash -c 'i=0; while :; do echo $i >> /tmp/count.log; i=$((i+1)); "
           "sleep 0.2; done' </dev/null >/dev/null 2>&1 & echo $!")


class CriuTest(VmTestCase):
    def counts(self, tb):
        return [int(x) for x in self.sh(tb, 0, "cat /tmp/count.log 2>/dev/null || true").split()]

    def wait_for_count(self, tb, above, timeout=120):
        return wait_for_count(lambda: self.counts(tb), above, timeout)

    def test_dump_and_restore_a_counter(self):
        tb = self.boot(1, rxe=False)
        self.assertIn("Looks good", self.sh(tb, 0, "criu check 2>&1", timeout=300))

        pid = int(self.sh(tb, 0, COUNTER).strip())
        self.wait_for_count(tb, 3)
        self.sh(tb, 0, f"mkdir -p /tmp/img && criu dump -t {pid} -D /tmp/img -o dump.log "
                       "|| { cat /tmp/img/dump.log; exit 1; }", timeout=300)
        self.assertNotEqual(tb.run(0, f"kill -0 {pid}")[0], 0, "dumped process still runs")
        stopped = self.counts(tb)
        time.sleep(1)
        self.assertEqual(self.counts(tb), stopped, "counter went on after the dump")

        self.sh(tb, 0, "criu restore -d -D /tmp/img -o restore.log "
                       "|| { cat /tmp/img/restore.log; exit 1; }", timeout=300)
        self.sh(tb, 0, f"kill -0 {pid}")  # same pid again
        after = self.wait_for_count(tb, stopped[-1] + 2)
        self.assertEqual(after, list(range(len(after))),
                         "the count must go on from where it stopped, without gaps or restart")
        self.sh(tb, 0, f"kill {pid}")


if __name__ == "__main__":
    main()
