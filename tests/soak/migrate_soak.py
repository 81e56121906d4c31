#!/usr/bin/python3
"""Soak (labels vm, soak): one RDMA container migrated back and forth
between two guests, with nothing left behind after any move and its data
intact.

The container (bundles/rdma-seq's rootfs) runs crx-verbs-seq's receiver,
which holds a verbs context, PD, CQ with its completion channel, two MRs
(one of 1 MiB) and an RC QP on rxe0 while it listens for its sender; beside
it tests/vm/migrate/dirtier.c keeps 4 MiB of memory whose every page it
checks five times a second, and its /tmp (a tmpfs) holds 1 MiB of random
data whose SHA-256 the test knows. Each guest runs one long-lived `crx
receive` (the way crx-receive.service runs it) with its RAM dir on a path
that is not a tmpfs, so the receiver mounts one; every move into a guest is
served by that same process.

After every move, on both guests (tests/soak/guest_state.py): the initial
mount namespace's mounts and the cgroup tree are what they were before the
container existed, plus on the destination the container's cgroups; the
user-space processes are the same pids plus, on the destination only, the
container's two processes (no criu, no crx but the receiver); the
receivers' fds and the container processes' fds are what they were at the
start; rdma_rxe's PD/CQ/MR/QP/SRQ/context objects are the baseline's plus,
on the destination only, exactly the container's; the receiver's RAM dir is
empty, crx's state root holds the container's state dir on the destination
and nothing on the source, and no tmpfs grew. The data: the file's SHA-256
is unchanged and the memory checker counts on (it exits, and says BAD,
when a page is wrong). At the end a sender on the other guest connects and
sends 300 messages over the QP that moved, each must arrive exactly once
and in order; then the container stops, is deleted, the receivers are
stopped, and both guests are back to their first state.

Size: CRX_SOAK unset or "ci": 4 moves; CRX_SOAK=full: 50. Why an RDMA
container, the measured times and the full run: tests/soak/README.md."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VM_DIR = os.environ.get("CRX_VM_DIR", os.path.join(ROOT, "tests", "vm"))
sys.path.insert(0, VM_DIR)
sys.path.insert(0, os.path.join(VM_DIR, "rdma"))
from vmtest import VmTestCase, main, rdma_setup, report_line, wait_listening, wait_until  # noqa: E402
import rdma_bed  # noqa: E402

CRX, SEQ, BUILD = rdma_bed.CRX, rdma_bed.SEQ, rdma_bed.BUILD
KEY = rdma_bed.KEY
PLUGIN = os.path.join(BUILD, "criu-plugins", "crx_ibverbs.so")
DIRTIER = os.path.join(ROOT, "tests", "vm", "migrate", "dirtier.c")
GUEST_STATE = os.path.join(HERE, "guest_state.py")
CID = "soak"
MPORT = 7070
SEQ_PORT = 18650
STATE_ROOT = "/run/crx"
# Not a tmpfs in the guest (the overlay root): the receiver mounts its RAM dir.
IMAGE_DIR = "/var/lib/crx-soak-images"
# crx migrate's RAM dir (the default, on /run's tmpfs).
SEND_DIR = "/run/crx-migrate"
CONTAINER_COMMS = ("crx-verbs-seq", "dirtier")
WATCHED = ("crx-migrate",) + CONTAINER_COMMS
MESSAGES = 300


def soak_moves():
    mode = os.environ.get("CRX_SOAK", "")
    if mode == "full":
        return 50
    if mode not in ("", "ci"):
        raise SystemExit(f"CRX_SOAK must be unset, ci or full, not {mode!r}")
    return 4


class MigrateSoakTest(VmTestCase):
    def test_migrations_back_and_forth_leave_nothing_behind(self):
        moves = soak_moves()
        for f in (CRX, SEQ, PLUGIN):
            if not os.path.exists(f):
                self.skipTest(f"{f} not built")
        rootfs = rdma_bed.rootfs()
        mods = subprocess.run([os.path.join(ROOT, "rxe-patches", "build.sh")], check=True,
                              stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
        self.tb = tb = self.boot(2, modules_dir=mods, rxe=False)
        self.out = os.path.join(tb.scratch, "out")
        os.makedirs(self.out)
        rdma_setup(tb, CRX, rdma_bed.RANGES[:2], KEY, "/tmp/key")
        subprocess.run(["cc", "-O2", "-static", "-o", os.path.join(self.out, "dirtier"), DIRTIER],
                       check=True)
        data = os.urandom(1 << 20)
        with open(os.path.join(self.out, "data.bin"), "wb") as f:
            f.write(data)
        self.digest = hashlib.sha256(data).hexdigest()
        bundle = self.make_bundle(rootfs)

        before_receivers = [self.guest_state(k) for k in (0, 1)]
        receivers = [self.start_receiver(k) for k in (0, 1)]
        self.base = [self.guest_state(k) for k in (0, 1)]
        self.receiver_pid = [self.only_pid(self.base[k], "crx-migrate") for k in (0, 1)]
        for k in (0, 1):
            self.assertIn(f"{IMAGE_DIR} tmpfs crx-migrate", self.base[k]["mounts"],
                          f"g{k}: the receiver's RAM dir is a tmpfs of its own")

        self.sh(tb, 0, f"{CRX} run -d -b {bundle} {CID} </dev/null >/dev/null 2>&1", timeout=300)
        wait_listening(tb, 0, SEQ_PORT, "the container's crx-verbs-seq")
        self.wait_memory_checked(0)
        self.container = self.container_part(self.base[0], self.guest_state(0))
        print("the container adds: " + json.dumps(self.container, indent=1), flush=True)
        self.assertEqual(sorted(self.container["comms"]), sorted(CONTAINER_COMMS))
        self.assertGreater(self.container["rdma"].get("qp", 0), 0, "the container holds a QP")
        self.check_data(0)

        where, t0 = 0, time.monotonic()
        rss = {0: [], 1: []}  # each receiver's RSS after each move it served
        for i in range(1, moves + 1):
            dst = 1 - where
            checked = self.memory_checks()
            t = time.monotonic()
            rc, out, err = tb.run(where, f"{CRX} migrate {CID} --to {tb.ip(dst)}:{MPORT} "
                                         "--key /tmp/key --format json", timeout=900)
            took = time.monotonic() - t
            self.assertEqual(rc, 0, f"move {i} g{where}->g{dst} failed:\n{out}\n{err}\n"
                                    f"receiver on g{dst}:\n{self.receiver_log(dst)[-3000:]}")
            report = json.loads(out.strip().splitlines()[-1])
            self.assertEqual(report["outcome"], "migrated", report_line(report))
            where = dst
            states = [self.guest_state(k) for k in (0, 1)]
            problems = [p for k in (0, 1) for p in self.leaks(k, states[k], k == where)]
            if problems:
                self.fail(f"after move {i} (g{1 - where}->g{where}):\n" + "\n".join(problems)
                          + "\n" + self.diagnosis())
            self.check_data(where, above=checked)
            rss[where].append(states[where]["rss_kib"][str(self.receiver_pid[where])])
            print(f"move {i:2} g{1 - where}->g{where}: {took:4.1f} s, g{where}'s receiver RSS "
                  f"{rss[where][-1]} KiB, nothing left; {report_line(report)}", flush=True)
        # A receiver's memory settles after its first migrations (its
        # libraries, OpenSSL's and CRIU's RPC buffers); after that it must
        # not grow with every migration it serves.
        for k in (0, 1):
            if len(rss[k]) > 2:
                self.assertLess(rss[k][-1] - rss[k][1], 2048,
                                f"g{k}'s receiver grows: RSS after each migration {rss[k]} KiB")
        total = time.monotonic() - t0
        print(f"soak: {moves} migrations in {total:.0f} s, nothing left behind, data intact",
              flush=True)

        self.send_and_finish(where)
        for k in (0, 1):
            self.assertEqual(self.leaks(k, self.guest_state(k), False), [], f"g{k} after the delete")
        for k, h in enumerate(receivers):
            tb.kill(h, signal.SIGTERM)
            rc, _, err = tb.wait(h, timeout=60)
            self.assertEqual(rc, 0, f"g{k}: crx receive after SIGTERM:\n{err}")
            st = self.guest_state(k)
            self.assertEqual(self.diff(before_receivers[k]["mounts"], st["mounts"]), ([], []),
                             f"g{k}: mounts after the receiver stopped (gone, new)")
            self.assertEqual(sorted(st["processes"]), sorted(before_receivers[k]["processes"]),
                             f"g{k}: processes after the receiver stopped")
            self.assertEqual(st["files"][IMAGE_DIR], [], f"g{k}: files in {IMAGE_DIR}")

    # -- set-up ----------------------------------------------------------------
    def make_bundle(self, rootfs):
        b = os.path.join(self.tb.scratch, "bundle")
        os.makedirs(b)
        with open(os.path.join(ROOT, "bundles", "rdma-seq", "config.json")) as f:
            spec = json.load(f)
        spec["root"]["path"] = rootfs
        # stdio from the container's own /dev/null and /out (what `crx run -d`
        # hands over lives in a mount CRIU cannot see from inside)
        spec["process"]["args"] = [
            "sh", "-c",
            "exec </dev/null >/out/seq.json 2>/out/seq.err; cp /out/data.bin /tmp/data; "
            "/out/dirtier idle 4 /out/memory.log & "
            f"exec crx-verbs-seq recv --port {SEQ_PORT} --mr-size 1MiB --setup-timeout 86400 "
            "--stall-timeout 0"]
        spec["mounts"].append({"destination": "/out", "type": "bind", "source": self.out,
                               "options": ["rbind", "rw"]})
        with open(os.path.join(b, "config.json"), "w") as f:
            json.dump(spec, f, indent=1)
        return b

    def start_receiver(self, k):
        h = self.tb.spawn(k, f"exec {CRX} receive --listen 0.0.0.0:{MPORT} --key /tmp/key "
                             f"--image-dir {IMAGE_DIR} --format json "
                             f"2>{self.out}/receive-g{k}.log")
        wait_listening(self.tb, k, MPORT, f"g{k}'s crx receive", h)
        return h

    def receiver_log(self, k):
        with open(os.path.join(self.out, f"receive-g{k}.log")) as f:
            return f.read()

    # -- state and leaks -------------------------------------------------------
    def guest_state(self, k):
        out = self.sh(self.tb, k, f"/usr/bin/python3 {GUEST_STATE} --comm {' '.join(WATCHED)} "
                                  f"--dir {STATE_ROOT} {IMAGE_DIR} {SEND_DIR}", timeout=120)
        return json.loads(out)

    @staticmethod
    def only_pid(st, comm):
        pids = [int(p) for p, (_, c, _) in st["processes"].items() if c == comm]
        assert len(pids) == 1, f"one {comm} expected: {st['processes']}"
        return pids[0]

    @staticmethod
    def diff(before, after):
        """(gone, new) between two lists."""
        b, a = Counter(before), Counter(after)
        return sorted((b - a).elements()), sorted((a - b).elements())

    def container_part(self, base, st):
        """What the running container adds to a guest's state."""
        new_pids = [p for p in st["processes"] if p not in base["processes"]]
        rdma = {}
        for kind, owners in st["rdma"].items():
            n = owners.get("crx-verbs-seq", 0)
            if n:
                rdma[kind] = n
        fds = {st["processes"][p][1]: sorted(st["fds"][p].items()) for p in new_pids if p in st["fds"]}
        return {"comms": [st["processes"][p][1] for p in new_pids],
                "cgroups": self.diff(base["cgroups"], st["cgroups"])[1],
                "state_files": self.diff(base["files"][STATE_ROOT], st["files"][STATE_ROOT])[1],
                "rdma": rdma, "fds": fds}

    def leaks(self, k, st, has_container):
        """What is wrong on guest k (state st) against its baseline, with or
        without the container there."""
        base, c, g = self.base[k], self.container, f"g{k}"
        problems = []

        def expect(what, gone_new, allowed_new=()):
            gone, new = gone_new
            if gone or sorted(new) != sorted(allowed_new):
                problems.append(f"{g}: {what}: gone {gone}, new {new}, expected new {sorted(allowed_new)}")

        with_c = has_container
        expect("mounts", self.diff(base["mounts"], st["mounts"]))
        expect("cgroups", self.diff(base["cgroups"], st["cgroups"]), c["cgroups"] if with_c else ())
        expect("state root", self.diff(base["files"][STATE_ROOT], st["files"][STATE_ROOT]),
               c["state_files"] if with_c else ())
        for d, whose in ((IMAGE_DIR, "the receiver's"), (SEND_DIR, "crx migrate's")):
            if st["files"][d]:
                problems.append(f"{g}: {whose} RAM dir {d} holds {st['files'][d]}")
        gone = [f"{p} {base['processes'][p][1]}" for p in base["processes"] if p not in st["processes"]]
        new = [p for p in st["processes"] if p not in base["processes"]]
        new_comms = sorted(st["processes"][p][1] for p in new)
        if gone or new_comms != sorted(c["comms"] if with_c else []):
            problems.append(f"{g}: processes: gone {gone}, new "
                            f"{[(p, st['processes'][p][1:]) for p in new]}")
        rp = str(self.receiver_pid[k])
        if st["fds"].get(rp) != base["fds"][rp]:
            problems.append(f"{g}: the receiver's fds: {self.diff(sorted(base['fds'][rp].items()), sorted(st['fds'].get(rp, {}).items()))} (gone, new)")
        if with_c:
            fds = {st["processes"][p][1]: sorted(st["fds"][p].items()) for p in new if p in st["fds"]}
            if fds != c["fds"]:
                problems.append(f"{g}: the container's fds: {fds}, at the start {c['fds']}")
        for kind, owners in st["rdma"].items():
            want = dict(base["rdma"][kind])
            if with_c and kind in c["rdma"]:
                want["crx-verbs-seq"] = want.get("crx-verbs-seq", 0) + c["rdma"][kind]
            if owners != want:
                problems.append(f"{g}: rdma {kind} objects: {owners}, expected {want}")
        for point, used in st["tmpfs_used"].items():
            allowance = 64 << 10 if point == "/run" else 0
            if used > base["tmpfs_used"].get(point, 0) + allowance:
                problems.append(f"{g}: tmpfs {point} uses {used} bytes, {base['tmpfs_used'].get(point, 0)} "
                                "at the start")
        return problems

    def diagnosis(self):
        """What both guests run and hold, for a failure's message."""
        out = []
        for k in (0, 1):
            rc, text, err = self.tb.run(k, f"ps -eo pid,ppid,stat,comm,args | grep -v ' 2 .* \\[' ; "
                                           f"{CRX} list; rdma resource show; "
                                           f"grep -v ' / ' /proc/1/mountinfo | tail -n 20; "
                                           f"find {STATE_ROOT} {IMAGE_DIR} {SEND_DIR} | head -n 40", timeout=120)
            out.append(f"--- g{k}:\n{text}{err}")
        for name in ("seq.err", "memory.log", "receive-g0.log", "receive-g1.log"):
            out.append(f"--- {name}:\n{self.read(name)[-3000:]}")
        return "\n".join(out)

    # -- the container's data --------------------------------------------------
    def memory_checks(self):
        """The memory checker's last count; fails on a BAD line."""
        try:
            with open(os.path.join(self.out, "memory.log")) as f:
                text = f.read()
        except FileNotFoundError:
            return -1
        self.assertNotIn("BAD", text, "the container's memory is not what it wrote")
        nums = [int(x) for x in text.split()]
        return nums[-1] if nums else -1

    def wait_memory_checked(self, k, above=-1):
        return wait_until(lambda: self.memory_checks() > above + 2, 120,
                          lambda: f"g{k}: the memory checker to count above {above + 2} "
                                  f"(at {self.memory_checks()})")

    def check_data(self, k, above=-1):
        pid = json.loads(self.sh(self.tb, k, f"{CRX} state {CID}"))["pid"]
        digest = self.sh(self.tb, k, f"sha256sum /proc/{pid}/root/tmp/data").split()[0]
        self.assertEqual(digest, self.digest, f"g{k}: the file in the container's tmpfs changed")
        self.wait_memory_checked(k, above)

    def send_and_finish(self, where):
        """A sender on the other guest connects to the receiver that moved;
        every message must arrive once, in order; the container then stops."""
        other = 1 - where
        rc, out, err = self.tb.run(other, f"{SEQ} send --connect {self.tb.ip(where)} --port {SEQ_PORT} "
                                          f"--count {MESSAGES} --rate 100 --stall-timeout 60",
                                   timeout=300)
        self.assertEqual(rc, 0, f"sender on g{other}:\n{out}\n{err}")
        wait_until(lambda: self.read("seq.json").strip(), 120,
                   lambda: f"the receiver's summary: {self.read('seq.err')[-2000:]}", interval=1)
        summary = json.loads(self.read("seq.json").strip().splitlines()[-1])
        print(f"the receiver after {MESSAGES} messages: {json.dumps(summary)}", flush=True)
        self.assertTrue(summary["ok"], summary)
        self.assertEqual(summary["messages"], MESSAGES)
        for key in ("duplicates", "out_of_order", "missing", "unexpected", "errors"):
            self.assertEqual(summary[key], 0, summary)
        self.memory_checks()
        wait_until(lambda: self.tb.run(where, f"{CRX} state {CID} | grep -q '\"stopped\"'")[0] == 0,
                   60, "the container to stop after its receiver ended", interval=1)
        self.sh(self.tb, where, f"{CRX} delete {CID}")

    def read(self, name):
        try:
            with open(os.path.join(self.out, name)) as f:
                return f.read()
        except FileNotFoundError:
            return ""


if __name__ == "__main__":
    main()
