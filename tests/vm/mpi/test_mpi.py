#!/usr/bin/python3
"""Open MPI + UCX over RC on rxe, one rank per crx container on three guests
(label vm, ctest vm_mpi), and rank 0 of a running job moved to a fourth
guest and back.

The bed is the RDMA bed of tests/vm/rdma (crx's rdma_rxe from rxe-patches,
`crx rdma setup` with disjoint QPN/MR ranges per guest), in smaller guests.
Every guest runs `crx-mpi-agent serve`; mpirun on g0 launches through
`crx-mpi-agent rsh` (bundles/mpi/README.md): rank hosts r0, r1, r2 on
g0, g1, g2, each a crx container holding its orted and its rank, in its own
network namespace with its own address (routed veth from the guest). The ranks talk UCX rc_verbs (ud_verbs for
wire-up) on rxe0. Checked: mpi-probe's payloads all arrive intact, eager
and rendezvous sizes; mpi-jacobi's checksum equals the one of a run of the
same binary on the host over shared memory/TCP; every rank ran in its own
container (processor names r0..r2); the containers and addresses are gone
afterwards. What the job holds (QPs, TCP connections, GIDs) is printed for
whoever migrates it next; each rank's orted reaches mpirun from the rank's
own address (its container's network namespace), the connection that has
to move with the rank.

A fourth guest, g3, runs no rank at launch: it is where rank 0 moves
(`crx-mpi-agent move r0 --to g3`, crx migrate --tcp-established of its
container, its address and namespace re-made on g3) while mpi-jacobi runs;
the job must finish with the unmigrated checksum. Over UCX's TCP transport
(the rank's TCP connections to its peers move with its address) and over
UCX rc_v on rxe (RC QPs plus the UD QP of UCX's wire-up and its address
handles), there and back in one run."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.environ.get("CRX_VM_DIR", os.path.join(os.path.dirname(__file__), "..")))
from vmtest import VmTestCase, main  # noqa: E402
from testbed import Testbed  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("CRX_BUILD_DIR", os.path.join(ROOT, "build"))
CRX = os.path.join(BUILD, "crx")
PROGS = os.path.join(BUILD, "bundles", "mpi")
BUNDLE = os.path.join(ROOT, "bundles", "mpi")
AGENT = os.path.join(BUNDLE, "crx-mpi-agent")
KEY = "0123456789abcdef0123456789abcdef"
PORT = 7171
MEMORY_MB = int(os.environ.get("CRX_VM_MPI_MEMORY", "640"))
# Per-node rdma_rxe ranges, disjoint (as tests/vm/rdma/rdma_bed.py).
RANGES = [(0x1000, 0x1fff), (0x2000, 0x2fff), (0x3000, 0x3fff), (0x4000, 0x4fff)]
RANKS = ["r0", "r1", "r2"]
NODES = 4  # g0-g2 run the ranks, g3 is where a rank moves
MIGRATE_PORT = 7272
# Move rank 0 once the job is this far (of JACOBI_ARGS' --iters).
# Kills the receiver and its criu mid-restore (how: the script's header).
KILL_MID_RESTORE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "rdma",
                                "kill-mid-restore.sh")
MOVE_AT_ITER = int(os.environ.get("CRX_VM_MPI_MOVE_AT", "500"))
MOVE_BACK_AT_ITER = int(os.environ.get("CRX_VM_MPI_MOVE_BACK_AT", "1250"))
# The kernel: tens of seconds under TCG (about 13 ms per iteration with
# three guests on two cores), halo rows of 2 KiB (eager).
JACOBI_ARGS = os.environ.get("CRX_VM_MPI_JACOBI", "--n 256 --iters 2500 --check 10 --progress 250")
PROBE_ARGS = "--max-size 262144 --reps 4 --window 4"
MPI_MCA = ("--mca plm_rsh_no_tree_spawn 1 --mca pml ucx --mca pml_ucx_tls any "
           "--mca pml_ucx_devices any --mca btl self --mca osc ucx")
UCX_ENV = "-x UCX_TLS=rc_v,self -x UCX_NET_DEVICES=rxe0:1 -x UCX_UD_VERBS_ETH_DGID_CHECK=n"
# UCX over TCP between the ranks' own addresses (eth0 in each rank's
# namespace is its veth): every connection of the rank moves with it.
UCX_TCP_ENV = "-x UCX_TLS=tcp,self -x UCX_NET_DEVICES=eth0"


def rank_address(k):
    return f"10.77.0.{100 + k}"


def rootfs():
    """The mpi rootfs for this build dir's programs, built if missing or
    stale (bundles/mpi/make-rootfs.sh)."""
    rf = os.path.join(BUILD, "vm-mpi", "rootfs")
    stale = any(subprocess.run(["cmp", "-s", os.path.join(rf, "usr", "local", "bin", p),
                                os.path.join(PROGS, p)]).returncode != 0
                for p in ("mpi-jacobi", "mpi-probe"))
    if stale:
        subprocess.run([os.path.join(BUNDLE, "make-rootfs.sh"), "--build-dir", BUILD, rf],
                       check=True)
    return rf


def host_reference():
    """mpi-jacobi on the host, 3 ranks over shared memory/TCP (Open MPI's
    ob1 with vader and tcp): the checksum every placement must give."""
    p = subprocess.run(["mpirun", "--allow-run-as-root", "-np", "3", "--oversubscribe",
                        "--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp",
                        os.path.join(PROGS, "mpi-jacobi"), *JACOBI_ARGS.split()],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"host reference run failed ({p.returncode}):\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


class MpiTest(VmTestCase):
    tb = None

    @classmethod
    def setUpClass(cls):
        for f in (CRX, os.path.join(PROGS, "mpi-jacobi"), os.path.join(PROGS, "mpi-probe")):
            if not os.path.exists(f):
                raise unittest.SkipTest(f"{f} not built")
        for tool in ("mpirun", "ucx_info"):
            if subprocess.run(["sh", "-c", f"command -v {tool}"],
                              stdout=subprocess.DEVNULL).returncode != 0:
                raise unittest.SkipTest(f"{tool} not installed (tests/setup.sh)")
        t = time.monotonic()
        cls.reference = host_reference()
        print(f"host reference ({time.monotonic() - t:.1f} s): {json.dumps(cls.reference)}",
              flush=True)
        cls.rootfs = rootfs()
        mods = subprocess.run([os.path.join(ROOT, "rxe-patches", "build.sh")], check=True,
                              stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
        t = time.monotonic()
        cls.tb = tb = Testbed(NODES, modules_dir=mods, rxe=False, memory_mb=MEMORY_MB).start()
        print(f"booted {NODES} guests ({MEMORY_MB} MiB each) in {time.monotonic() - t:.1f} s",
              flush=True)
        try:
            cls.setup_bed(tb)
        except BaseException:
            tb.close()
            raise

    @classmethod
    def setup_bed(cls, tb):
        s = tb.scratch
        with open(os.path.join(s, "map"), "w") as f:
            for k, r in enumerate(RANKS):
                f.write(f"{r} {tb.ip(k)}:{PORT} {rank_address(k)}\n")
        with open(os.path.join(s, "hostfile"), "w") as f:
            f.write("".join(f"{r} slots=1\n" for r in RANKS))
        for k in range(NODES):
            os.makedirs(os.path.join(s, f"log-g{k}"))
            lo, hi = RANGES[k]
            cfg = (f"rdma:\n  device: rxe0\n  netdev: eth0\n"
                   f"  qpn_min: {lo:#x}\n  qpn_max: {hi:#x}\n"
                   f"  mrn_min: {lo:#x}\n  mrn_max: {hi:#x}\n"
                   f"  ahn_min: {lo:#x}\n  ahn_max: {hi:#x}\n")
            tb.run(k, f"mkdir -p /etc/crx && cat > /etc/crx/config.yaml <<'EOF'\n{cfg}EOF\n"
                      f"printf %s {KEY} > /tmp/mpi-key && chmod 600 /tmp/mpi-key", check=True)
        for k, (rc, out, err) in enumerate(tb.run_all(f"{CRX} rdma setup && {CRX} rdma status",
                                                      timeout=180)):
            if rc != 0:
                raise AssertionError(f"g{k}: crx rdma setup failed ({rc}):\n{out}\n{err}")
        cls.agents = []
        for k in range(NODES):
            cls.agents.append(tb.spawn(
                k, f"python3 {AGENT} serve --listen 0.0.0.0:{PORT} --key /tmp/mpi-key "
                   f"--crx {CRX} --bundle {BUNDLE} --rootfs {cls.rootfs} --dev eth0 "
                   f"--state-dir /run/crx-mpi --log-dir {s}/log-g{k} "
                   f"--ready-file {s}/agent-g{k}.ready 2>{s}/agent-g{k}.log"))
        deadline = time.monotonic() + 120
        for k in range(NODES):
            while not os.path.exists(os.path.join(s, f"agent-g{k}.ready")):
                if time.monotonic() > deadline or cls.agents[k].done.is_set():
                    raise AssertionError(f"g{k}: crx-mpi-agent did not start: "
                                         + cls.read(f"agent-g{k}.log"))
                time.sleep(0.5)

    @classmethod
    def tearDownClass(cls):
        if cls.tb:
            cls.tb.close()

    @classmethod
    def read(cls, name):
        try:
            with open(os.path.join(cls.tb.scratch, name)) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def logs(self):
        return "\n".join(f"--- {name}:\n{self.read(name)[-3000:]}" for k in range(NODES)
                         for name in [f"agent-g{k}.log"] + [
                             f"log-g{k}/{n}" for n in sorted(
                                 os.listdir(os.path.join(self.tb.scratch, f"log-g{k}")))])

    def mpirun(self, prog, args, tag, during=None, ucx=UCX_ENV):
        """mpirun on g0 over the three rank containers; returns the program's
        JSON summary and mpirun's seconds. during(): called while it runs.
        ucx: mpirun's -x UCX_* settings."""
        s = self.tb.scratch
        cmd = (f"cd /tmp && CRX_MPI_MAP={s}/map CRX_MPI_KEY=/tmp/mpi-key "
               f"mpirun --allow-run-as-root --hostfile {s}/hostfile "
               f"--mca plm_rsh_agent '{AGENT} rsh' {MPI_MCA} {ucx} "
               f"/usr/local/bin/{prog} {args} >{s}/{tag}.out 2>{s}/{tag}.err; "
               f"rc=$?; touch {s}/{tag}.done; exit $rc")
        t, start = time.monotonic(), time.time()
        h = self.tb.spawn(0, cmd)
        if during:
            during()
        rc, _, _ = self.tb.wait(h, timeout=1200)
        took = time.monotonic() - t
        try:
            took = os.stat(os.path.join(s, f"{tag}.done")).st_mtime - start
        except FileNotFoundError:
            pass
        out, err = self.read(f"{tag}.out"), self.read(f"{tag}.err")
        print(f"{tag}: mpirun {prog} took {took:.1f} s (rc {rc})\n{out}{err[-1500:]}", flush=True)
        self.assertEqual(rc, 0, f"mpirun {prog} failed:\n{out}\n{err}\n{self.logs()}")
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        self.assertTrue(lines, f"no summary from {prog}:\n{out}\n{err}")
        return json.loads(lines[-1]), took

    def wait_gone(self):
        """Every rank container has stopped and was deleted by the agent,
        and its namespace, veth, route and address left the guest."""
        deadline = time.monotonic() + 120
        while True:
            left = []
            for k in range(NODES):
                out = self.sh(self.tb, k, f"{CRX} list -q; ip netns list; ip -o link; "
                                          f"ip -o -4 addr; ip route")
                if any(f"mpi-{r}" in out or rank_address(j) in out
                       for j, r in enumerate(RANKS)):
                    left.append(f"g{k}: {out}")
            if not left:
                return
            if time.monotonic() > deadline:
                self.fail("rank containers or addresses left behind:\n" + "\n".join(left))
            time.sleep(1)

    def snapshot(self):
        """While mpi-jacobi runs: what the job holds on every guest, printed
        for whoever migrates a rank next; checks that every rank's OOB
        connection to mpirun starts at the rank's own address."""
        deadline = time.monotonic() + 600
        k = 0
        while k < 3:
            # a rank's QPs are named after the thread that made them: the
            # program's main thread or UCX's "async" thread (lazy wire-up)
            rc, out, _ = self.tb.run(k, "rdma resource show qp | grep -cE 'type RC.*comm (mpi-jacobi|async)'")
            if rc == 0 and int(out.strip() or 0) >= 2:
                k += 1
                continue
            if time.monotonic() > deadline or os.path.exists(
                    os.path.join(self.tb.scratch, "jacobi.done")):
                self.fail(f"g{k}: no RC QPs of mpi-jacobi seen while it ran")
            time.sleep(1)
        for k in range(3):
            t = time.monotonic()
            ns = f"crx-mpi-{RANKS[k]}"
            rc, out, err = self.tb.run(
                k, f"echo '# QPs'; rdma resource show qp | grep -v GSI; "
                   f"echo '# TCP in {ns}'; ip netns exec {ns} ss -tnpH; "
                   f"echo '# listening'; ip netns exec {ns} ss -tlnpH; "
                   "echo '# GIDs'; for g in 0 1 2 3; do echo $g $(cat "
                   "/sys/class/infiniband/rxe0/ports/1/gids/$g); done; "
                   "echo '# threads'; for p in $(pgrep mpi-jacobi) $(pgrep orted); do "
                   "echo $p $(cat /proc/$p/comm): $(cat /proc/$p/task/*/comm | tr '\\n' ' '); done; "
                   "echo '# memory'; free -m | sed -n 2p", timeout=120)
            print(f"g{k} during mpi-jacobi ({time.monotonic() - t:.1f} s):\n{out}{err}", flush=True)
            oob = [ln for ln in out.splitlines() if ln.startswith("ESTAB") and '"orted"' in ln
                   and f" {self.tb.ip(0)}:" in ln]
            self.assertTrue(oob, f"g{k}: no OOB connection from the orted to mpirun:\n{out}")
            for ln in oob:
                self.assertEqual(ln.split()[3].rsplit(":", 1)[0], rank_address(k),
                                 f"g{k}: the orted's connection must start at the rank's address")

    def test_1_probe_eager_and_rendezvous(self):
        res, took = self.mpirun("mpi-probe", PROBE_ARGS, "probe")
        self.assertTrue(res["ok"], res)
        self.assertEqual(res["errors"], 0)
        self.assertEqual(res["hosts"], RANKS, "one rank in each rank container")
        self.assertEqual([p["peer"] for p in res["pairs"]], [1, 2])
        for p in res["pairs"]:
            sizes = [x["size"] for x in p["sizes"]]
            # eager (small) and rendezvous (UCX_RNDV_THRESH is a few KiB on rc_verbs)
            self.assertEqual(sizes[0], 1)
            self.assertEqual(sizes[-1], 262144)
        self.wait_gone()

    def test_2_jacobi_checksum_equals_host_run(self):
        res, took = self.mpirun("mpi-jacobi", JACOBI_ARGS, "jacobi", during=self.snapshot)
        self.assertTrue(res["ok"], res)
        self.assertTrue(res["verified"])
        self.assertEqual(res["mismatches"], 0)
        self.assertEqual(res["hosts"], RANKS, "one rank in each rank container")
        self.assertEqual((res["n"], res["iters"], res["ranks"]),
                         (self.reference["n"], self.reference["iters"], 3))
        self.assertEqual(res["checksum"], self.reference["checksum"],
                         "UCX/rxe in containers must give the host run's grid bit for bit")
        self.assertIn('"progress"', self.read("jacobi.err"))
        self.wait_gone()

    # -- rank 0 moves mid-run ----------------------------------------------------
    def wait_iter(self, tag, at):
        """Blocks until the job's rank 0 reported iteration `at` (stderr
        progress lines); fails if the job ends first."""
        deadline = time.monotonic() + 600
        while True:
            it = 0
            for ln in self.read(f"{tag}.err").splitlines():
                try:
                    it = max(it, json.loads(ln)["progress"]["iter"])
                except (ValueError, KeyError, TypeError):
                    continue
            if it >= at:
                return it
            if os.path.exists(os.path.join(self.tb.scratch, f"{tag}.done")) or \
                    time.monotonic() > deadline:
                self.fail(f"{tag}: never reached iteration {at}:\n{self.read(tag + '.err')[-2000:]}")
            time.sleep(0.5)

    def move(self, host, src, dst):
        """crx-mpi-agent move from g0 (any node would do): (rc, report or
        None, stderr, seconds)."""
        t = time.monotonic()
        rc, out, err = self.tb.run(
            0, f"python3 {AGENT} move {host} --from {self.tb.ip(src)}:{PORT} "
               f"--to {self.tb.ip(dst)}:{PORT} --key /tmp/mpi-key "
               f"--migrate-port {MIGRATE_PORT}", timeout=900)
        took = time.monotonic() - t
        report = None
        if rc == 0:
            report = json.loads(out.strip().splitlines()[-1])
        return rc, report, err, took

    def where(self, cid):
        """{guest: state} of the container on every guest that has it."""
        found = {}
        for k in range(NODES):
            rc, out, _ = self.tb.run(k, f"{CRX} state {cid}", timeout=120)
            if rc == 0:
                found[k] = json.loads(out)["status"]
        return found

    def qps(self, k):
        """The rank's QPs on guest k as (type, lqpn) pairs."""
        out = self.sh(self.tb, k, "rdma -j resource show qp")
        return sorted((q.get("type"), q.get("lqpn")) for q in json.loads(out or "[]")
                      if q.get("comm") in ("mpi-jacobi", "async"))

    def jacobi_with_move(self, tag, ucx, back=False):
        """mpi-jacobi over the three ranks; rank 0 moves g0 -> g3 once the
        job passed MOVE_AT_ITER, and with `back` g3 -> g0 again once it
        passed MOVE_BACK_AT_ITER. Returns (summary, mpirun seconds, move:
        the first move's record, the second's under "back")."""
        move = {}

        def one(rec, at, src, dst):
            rec["at"] = self.wait_iter(tag, at)
            rec["qps_before"] = self.qps(src)
            rec["rc"], rec["report"], rec["err"], rec["took"] = self.move("r0", src, dst)
            rec["where"] = self.where("mpi-r0")
            rec["ns_dst"] = self.tb.run(dst, "ip netns exec crx-mpi-r0 ss -tnpH; ip route; "
                                             "rdma resource show qp | grep -v GSI")[1]
            print(f"{tag}: moved r0 g{src} -> g{dst} at iteration {rec['at']} (rc {rec['rc']}, "
                  f"{rec['took']:.1f} s): {rec['err'].strip()}\nreport: "
                  f"{json.dumps(rec['report'], indent=1)}\nQPs of rank 0 on g{src} before: "
                  f"{rec['qps_before']}\nr0 now: {rec['where']}\ng{dst}:\n{rec['ns_dst']}",
                  flush=True)

        def during():
            one(move, MOVE_AT_ITER, 0, 3)
            if back and move["rc"] == 0:
                move["back"] = {}
                one(move["back"], MOVE_BACK_AT_ITER, 3, 0)

        res, took = self.mpirun("mpi-jacobi", JACOBI_ARGS, tag, during=during, ucx=ucx)
        return res, took, move

    def assert_moved(self, move, dst):
        self.assertEqual(move["rc"], 0, f"crx-mpi-agent move failed: {move['err']}\n{self.logs()}")
        self.assertEqual(move["report"]["outcome"], "migrated", move["report"])
        self.assertEqual(move["where"], {dst: "running"}, f"rank 0's container runs on g{dst} only")
        self.assertIn(rank_address(0), move["ns_dst"], f"rank 0's address moved to g{dst}")

    def assert_moved_run(self, res, move):
        self.assert_moved(move, 3)
        if "back" in move:
            self.assert_moved(move["back"], 0)
        self.assertTrue(res["ok"], res)
        self.assertEqual(res["mismatches"], 0)
        self.assertEqual(res["hosts"], RANKS, "one rank in each rank container")
        self.assertEqual(res["checksum"], self.reference["checksum"],
                         "a migrated run must give the unmigrated run's grid bit for bit")

    def test_3_jacobi_over_tcp_rank0_moves_to_g3(self):
        """UCX over TCP between the ranks' own addresses: rank 0's container
        (orted, rank, its TCP connections to mpirun and to both peers) moves
        g0 -> g3 mid-run with its address; the job finishes right."""
        ref, ref_took = self.mpirun("mpi-jacobi", JACOBI_ARGS, "jacobi-tcp", ucx=UCX_TCP_ENV)
        self.assertEqual(ref["checksum"], self.reference["checksum"])
        self.wait_gone()
        res, took, move = self.jacobi_with_move("jacobi-tcp-moved", UCX_TCP_ENV)
        self.assert_moved_run(res, move)
        rep = move["report"]
        print(f"jacobi over tcp: unmigrated {ref_took:.1f} s, migrated {took:.1f} s "
              f"(delay {took - ref_took:+.1f} s), downtime "
              f"{rep.get('downtime_seconds', 0):.2f} s, move {move['took']:.1f} s", flush=True)
        self.wait_gone()

    def test_4_jacobi_over_rc_rank0_moves_to_g3_and_back(self):
        """UCX rc_v on rxe (test_2's job): rank 0 moves g0 -> g3 mid-run
        and later g3 -> g0, each time with its RC QPs, the UD QP of UCX's
        wire-up and its address handles; the job finishes with the
        unmigrated checksum and no rank reports an error."""
        res, took, move = self.jacobi_with_move("jacobi-rc-moved", UCX_ENV, back=True)
        self.assert_moved_run(res, move)
        for m in (move, move["back"]):
            objects = m["report"]["verbs"]["objects"]
            self.assertGreaterEqual(objects.get("ah", 0), 1, "UCX's UD wire-up AHs moved")
            self.assertIn("UD", [t for t, _ in m["qps_before"]])
        reps = [move["report"], move["back"]["report"]]
        print(f"jacobi over rc: migrated twice in {took:.1f} s, downtime "
              + ", ".join(f"{r.get('downtime_seconds', 0):.2f} s" for r in reps)
              + f", moves {move['took']:.1f} s and {move['back']['took']:.1f} s", flush=True)
        self.wait_gone()

    def test_5_rank_keeps_running_when_the_destination_dies_mid_restore(self):
        """The receiver on g3 and its criu are killed while they restore
        rank 0 (tests/vm/rdma/kill-mid-restore.sh): the move fails, rank 0
        runs on at g0 with its QPs resumed, and the job finishes right."""
        killer = self.tb.spawn(3, f"sh {KILL_MID_RESTORE}")
        try:
            res, took, move = self.jacobi_with_move("jacobi-rc-killed", UCX_ENV)
        finally:
            krc, kout, kerr = self.tb.wait(killer, timeout=900)
        print(f"in g3 ({krc}): {kout}{kerr}", flush=True)
        self.assertEqual(krc, 0, f"the receiver was not killed mid-restore: {kerr}")
        self.assertNotEqual(move["rc"], 0, f"the move must fail: {move['report']}")
        self.assertEqual(move["where"], {0: "running"}, "rank 0 runs on at g0 only")
        self.assertTrue(res["ok"], res)
        self.assertEqual(res["mismatches"], 0)
        self.assertEqual(res["checksum"], self.reference["checksum"])
        self.wait_gone()


if __name__ == "__main__":
    main()
