#!/usr/bin/python3
"""`crx receive` against bad input on its port: garbage before the
handshake, oversized, unknown-type, corrupt and truncated frames before and
after authentication (frame_client.py speaks the framing of
runtime/migrate/frame.hpp; clear text, so the receiver runs with
--insecure-plaintext, except for the cases against a TLS receiver).  Each
is refused with one clear line, the
listener serves on, and nothing is left behind: no image dir, no CRIU, no
container; a --once receiver exits non-zero and unmounts its RAM dir."""
import json
import os
import sys

sys.path.insert(0, os.environ.get("CRX_VM_DIR", os.path.join(os.path.dirname(__file__), "..")))
from vmtest import VmTestCase, main, wait_listening, wait_until  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BUILD = os.environ.get("CRX_BUILD_DIR", os.path.join(ROOT, "build"))
CRX = os.path.join(BUILD, "crx")
CLIENT = os.path.join(HERE, "frame_client.py")
KEY = "0123456789abcdef0123456789abcdef"
PORT = 7070
# Not on a tmpfs already, so that the receiver mounts its own RAM dir there.
IMAGES = "/var/lib/crx-bad-input"
LOG = "/tmp/receive.err"

# case -> what the receiver's error must say
CASES = {
    "garbage_before_auth": "bad magic",
    "oversized_before_auth": "oversized frame",
    "unknown_type_before_auth": "unknown type 99",
    "truncated_before_auth": "in the middle of a frame",
    "manifest_before_auth": "unexpected manifest frame",
    "oversized_after_auth": "oversized frame",
    "unknown_type_after_auth": "unknown type 77",
    "corrupt_after_auth": "checksum mismatch",
    "truncated_after_auth": "in the middle of a frame",
    "image_outside_round_after_auth": "unexpected image-data frame",
}
# Against a receiver with TLS (the default): refused as early.
TLS_CASES = {
    "garbage_before_auth": "bad magic",
    "clear_text_hello": "this receiver requires TLS",
}


class BadInputTest(VmTestCase):
    def setUp(self):
        self.tb = self.boot(1, rxe=False)
        self.sh(self.tb, 0, f"printf %s {KEY} > /tmp/key && chmod 600 /tmp/key")

    def start_receiver(self, extra="--insecure-plaintext"):
        h = self.tb.spawn(0, f"exec {CRX} receive --listen 0.0.0.0:{PORT} --key /tmp/key "
                             f"--image-dir {IMAGES} --timeout 20 {extra} 2>{LOG}")
        wait_listening(self.tb, 0, PORT, "crx receive", h)
        return h

    def send_case(self, case):
        out = self.sh(self.tb, 0, f"python3 {CLIENT} {case} 127.0.0.1 {PORT} /tmp/key",
                      timeout=180)
        return json.loads(out.strip().splitlines()[-1])

    def error_lines(self):
        log = self.sh(self.tb, 0, f"cat {LOG}")
        return [line for line in log.splitlines() if " error: receive: " in line]

    def assert_nothing_left(self):
        self.assertEqual(self.sh(self.tb, 0, f"ls -A {IMAGES} 2>/dev/null | wc -l").strip(), "0",
                         "the receiver left images behind")
        self.assertEqual(self.tb.run(0, "pgrep -x criu")[0], 1, "a criu process was left behind")
        rc, out, err = self.tb.run(0, f"{CRX} state bad-input")
        self.assertNotEqual(rc, 0, "a container was created from bad input")

    def test_listener_refuses_each_bad_input_and_serves_on(self):
        rh = self.start_receiver()
        self.assertEqual(self.tb.run(0, f"grep -q ' {IMAGES} tmpfs ' /proc/mounts")[0], 0,
                         "the receiver keeps its images in a tmpfs of its own")
        for n, (case, expect) in enumerate(CASES.items(), start=1):
            with self.subTest(case=case):
                reply = self.send_case(case)
                print(case, "->", reply, flush=True)
                self.assertTrue(reply["closed"], f"{case}: the receiver kept the connection")
                if reply["error"] is not None:
                    self.assertIn(expect, reply["error"])
                # One line per refused connection, naming what was wrong.
                lines = wait_until(
                    lambda: (lambda ls: ls if len(ls) >= n else None)(self.error_lines()), 30,
                    lambda: f"{n} error lines: {self.error_lines()}", interval=0.3)
                self.assertEqual(len(lines), n, f"{case}: expected {n} error lines:\n" +
                                 "\n".join(lines))
                self.assertIn(expect, lines[-1])
                self.assertFalse(rh.done.is_set(), f"the listener died on {case}: {rh.result}")
                self.assert_nothing_left()
        self.tb.kill(rh, 15)
        rc, _, _ = self.tb.wait(rh, timeout=60)
        self.assertEqual(self.tb.run(0, f"grep -q ' {IMAGES} ' /proc/mounts")[0], 1,
                         "the RAM dir stayed mounted after SIGTERM")

    def test_once_receiver_exits_non_zero_and_cleans_up(self):
        for case, extra, expect in (
                ("oversized_after_auth", "--insecure-plaintext", CASES["oversized_after_auth"]),
                ("garbage_before_auth", "", TLS_CASES["garbage_before_auth"]),
                ("clear_text_hello", "", TLS_CASES["clear_text_hello"])):
            with self.subTest(case=case):
                rh = self.start_receiver("--once " + extra)
                self.send_case(case)
                rc, out, err = self.tb.wait(rh, timeout=120)
                self.assertNotEqual(rc, 0, f"{case}: receive --once must fail")
                errors = [line for line in self.sh(self.tb, 0, f"cat {LOG}").splitlines()
                          if "error" in line or line.startswith("crx: ")]
                self.assertEqual(len(errors), 1, f"{case}: one error line expected:\n{errors}")
                self.assertIn(expect, errors[0])
                self.assert_nothing_left()
                self.assertEqual(self.tb.run(0, f"grep -q ' {IMAGES} ' /proc/mounts")[0], 1,
                                 "the RAM dir stayed mounted")
                self.assertEqual(self.tb.run(0, "pgrep -f 'crx [r]eceive'")[0], 1)


if __name__ == "__main__":
    main()
