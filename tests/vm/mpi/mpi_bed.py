"""The MPI test bed shared by tests/vm/mpi (the ctest vm_mpi) and
tests/bench/mpi (the MPI benchmark): four small guests with crx's rdma_rxe
(`crx rdma setup`, disjoint QPN/MR/AH ranges per guest) and a
crx-mpi-agent serving on each; rank hosts r0, r1, r2 start on g0, g1, g2,
g3 is where a rank moves. Failures raise AssertionError with what was
seen, so both a unittest case and a benchmark script can use it."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.environ.get("CRX_VM_DIR", os.path.join(os.path.dirname(__file__), "..")))
from vmtest import patched_rxe_modules, rdma_setup, wait_until  # noqa: E402
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
MPI_MCA = ("--mca plm_rsh_no_tree_spawn 1 --mca pml ucx --mca pml_ucx_tls any "
           "--mca pml_ucx_devices any --mca btl self --mca osc ucx")
UCX_ENV = "-x UCX_TLS=rc_v,self -x UCX_NET_DEVICES=rxe0:1 -x UCX_UD_VERBS_ETH_DGID_CHECK=n"
# UCX over TCP between the ranks' own addresses (eth0 in each rank's
# namespace is its veth): every connection of the rank moves with it.
UCX_TCP_ENV = "-x UCX_TLS=tcp,self -x UCX_NET_DEVICES=eth0"


def rank_address(k):
    return f"10.77.0.{100 + k}"


def missing():
    """Why the bed cannot run here (a file not built, a tool not
    installed), or None."""
    for f in (CRX, os.path.join(PROGS, "mpi-jacobi"), os.path.join(PROGS, "mpi-probe")):
        if not os.path.exists(f):
            return f"{f} not built"
    for tool in ("mpirun", "ucx_info"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"],
                          stdout=subprocess.DEVNULL).returncode != 0:
            return f"{tool} not installed (tests/setup.sh)"
    return None


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


def host_reference(jacobi_args):
    """mpi-jacobi on the host, 3 ranks over shared memory/TCP (Open MPI's
    ob1 with vader and tcp): the checksum every placement must give."""
    p = subprocess.run(["mpirun", "--allow-run-as-root", "-np", "3", "--oversubscribe",
                        "--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp",
                        os.path.join(PROGS, "mpi-jacobi"), *jacobi_args.split()],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"host reference run failed ({p.returncode}):\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


class MpiBed:
    """The four guests and their agents; close() ends them."""

    def __init__(self, memory_mb=MEMORY_MB, spare_core=None):
        """spare_core: a share of a host core (e.g. 0.45). The ranks' nodes
        then have a core for the system beside the rank's, as the paper's
        had: g0 and g3 (where the moving rank is and goes) get a second
        vCPU, which runs the agent and so crx and CRIU; every rank runs in
        cpuset 0; and each guest's vCPU 0 is capped on the host at that
        share, so that the three ranks' vCPUs leave the host's other
        cores' worth to the move (tests/bench/mpi/README.md, Result 27)."""
        self.rootfs = rootfs()
        self.spare_core = spare_core
        mods = patched_rxe_modules()
        t = time.monotonic()
        self.tb = Testbed(NODES, modules_dir=mods, rxe=False, memory_mb=memory_mb,
                          vcpus={0: 2, 3: 2} if spare_core else None).start()
        print(f"booted {NODES} guests ({memory_mb} MiB each) in {time.monotonic() - t:.1f} s",
              flush=True)
        try:
            if spare_core:
                for k in range(NODES):
                    self.tb.cap_vcpu(k, 0, spare_core)
                    if self.tb.vcpus.get(k) == 2:
                        self._nic_interrupts_on_cpu0(k)
            self._setup()
        except BaseException:
            self.tb.close()
            raise

    def _setup(self):
        tb, s = self.tb, self.tb.scratch
        with open(os.path.join(s, "map"), "w") as f:
            for k, r in enumerate(RANKS):
                f.write(f"{r} {tb.ip(k)}:{PORT} {rank_address(k)}\n")
        with open(os.path.join(s, "hostfile"), "w") as f:
            f.write("".join(f"{r} slots=1\n" for r in RANKS))
        for k in range(NODES):
            os.makedirs(os.path.join(s, f"log-g{k}"))
        rdma_setup(tb, CRX, RANGES, KEY, "/tmp/mpi-key")
        self.agents = []
        for k in range(NODES):
            # with a spare core: the agent and all it starts (crx, CRIU) on
            # vCPU 1, where there is one; the ranks in cpuset 0
            pin = "taskset -c 1 " if self.spare_core and tb.vcpus.get(k) == 2 else ""
            cpus = "--cpus 0 " if self.spare_core else ""
            self.agents.append(tb.spawn(
                k, f"{pin}python3 {AGENT} serve {cpus}--listen 0.0.0.0:{PORT} --key /tmp/mpi-key "
                   f"--crx {CRX} --bundle {BUNDLE} --rootfs {self.rootfs} --dev eth0 "
                   f"--state-dir /run/crx-mpi --log-dir {s}/log-g{k} "
                   f"--ready-file {s}/agent-g{k}.ready 2>{s}/agent-g{k}.log"))

        def ready(k):
            if self.agents[k].done.is_set():
                raise AssertionError(f"g{k}: crx-mpi-agent exited: "
                                     + self.read(f"agent-g{k}.log"))
            return os.path.exists(os.path.join(s, f"agent-g{k}.ready"))
        for k in range(NODES):
            wait_until(lambda: ready(k), 120,
                       lambda: f"g{k}'s crx-mpi-agent: {self.read(f'agent-g{k}.log')}")

    def _nic_interrupts_on_cpu0(self, k):
        """eth0's queue interrupts to vCPU 0, the rank's: rdma_rxe does
        the rank's packets in their softirq, which on vCPU 1 would wait
        behind the move (the guest spreads them over both vCPUs, RX on 1)."""
        self.tb.run(k, "d=$(basename $(readlink /sys/class/net/eth0/device)); "
                       "irqs=$(awk -F: \"/ $d-(input|output)/ {print \\$1}\" /proc/interrupts); "
                       "[ -n \"$irqs\" ] || { echo no queue interrupts of $d >&2; exit 1; }; "
                       "for i in $irqs; do echo 0 > /proc/irq/$i/smp_affinity_list || exit 1; done",
                    timeout=60, check=True)

    def close(self):
        self.tb.close()

    def read(self, name):
        try:
            with open(os.path.join(self.tb.scratch, name)) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def logs(self):
        """The agents' and ranks' logs (their last 3000 bytes each)."""
        return "\n".join(f"--- {name}:\n{self.read(name)[-3000:]}" for k in range(NODES)
                         for name in [f"agent-g{k}.log"] + [
                             f"log-g{k}/{n}" for n in sorted(
                                 os.listdir(os.path.join(self.tb.scratch, f"log-g{k}")))])

    # -- jobs ------------------------------------------------------------------
    def mpirun(self, prog, args, tag, during=None, ucx=UCX_ENV, node=0):
        """mpirun on g<node> over the three rank containers. during(): called
        while it runs. ucx: mpirun's -x UCX_* settings. Returns (exit code,
        the program's JSON summary or None, mpirun's seconds); stdout and
        stderr are in the scratch dir as <tag>.out and <tag>.err."""
        s = self.tb.scratch
        cmd = (f"cd /tmp && CRX_MPI_MAP={s}/map CRX_MPI_KEY=/tmp/mpi-key "
               f"mpirun --allow-run-as-root --hostfile {s}/hostfile "
               f"--mca plm_rsh_agent '{AGENT} rsh' {MPI_MCA} {ucx} "
               f"/usr/local/bin/{prog} {args} >{s}/{tag}.out 2>{s}/{tag}.err; "
               f"rc=$?; touch {s}/{tag}.done; exit $rc")
        t, start = time.monotonic(), time.time()
        h = self.tb.spawn(node, cmd)
        if during:
            during()
        rc, _, _ = self.tb.wait(h, timeout=1200)
        took = time.monotonic() - t
        try:
            took = os.stat(os.path.join(s, f"{tag}.done")).st_mtime - start
        except FileNotFoundError:
            pass
        lines = [ln for ln in self.read(f"{tag}.out").splitlines() if ln.startswith("{")]
        return rc, (json.loads(lines[-1]) if lines else None), took

    def wait_iter(self, tag, at):
        """Blocks until the job's rank 0 reported iteration `at` (stderr
        progress lines); fails if the job ends first."""
        def reached():
            it = 0
            for ln in self.read(f"{tag}.err").splitlines():
                try:
                    it = max(it, json.loads(ln)["progress"]["iter"])
                except (ValueError, KeyError, TypeError):
                    continue
            if it < at and os.path.exists(os.path.join(self.tb.scratch, f"{tag}.done")):
                raise AssertionError(f"{tag} ended before iteration {at}:\n"
                                     f"{self.read(tag + '.err')[-2000:]}")
            return it if it >= at else None
        return wait_until(reached, 600, lambda: f"{tag} to reach iteration {at}:\n"
                                                f"{self.read(tag + '.err')[-2000:]}")

    def move(self, host, src, dst, pre_copy=0, way="live", plaintext=False, no_page_dedup=False,
             tls_cipher=None, no_page_compression=False, pre_dump_mode=None):
        """crx-mpi-agent move, run on the destination g<dst> (any node would
        do; not the source, whose vCPU the moving rank needs: the client's
        python costs a TCG guest ~0.5 s of CPU): (rc, report or None,
        stderr, seconds). way "checkpoint": the runc way; plaintext:
        crx migrate --insecure-plaintext; no_page_dedup: --no-page-dedup;
        no_page_compression: --no-page-compression;
        tls_cipher: --tls-cipher; pre_dump_mode: --pre-dump-mode."""
        t = time.monotonic()
        rc, out, err = self.tb.run(
            dst, f"python3 {AGENT} move {host} --from {self.tb.ip(src)}:{PORT} "
               f"--to {self.tb.ip(dst)}:{PORT} --key /tmp/mpi-key "
               f"--migrate-port {MIGRATE_PORT} --pre-copy {pre_copy} --way {way}"
               + (" --insecure-plaintext" if plaintext else "")
               + (" --no-page-dedup" if no_page_dedup else "")
               + (" --no-page-compression" if no_page_compression else "")
               + (f" --tls-cipher {tls_cipher}" if tls_cipher else "")
               + (f" --pre-dump-mode {pre_dump_mode}" if pre_dump_mode else ""), timeout=900)
        took = time.monotonic() - t
        report = json.loads(out.strip().splitlines()[-1]) if rc == 0 else None
        return rc, report, err, took

    def where(self, cid):
        """{guest: state} of the container on every guest that has it."""
        found = {}
        for k in range(NODES):
            rc, out, _ = self.tb.run(k, f"{CRX} state {cid}", timeout=120)
            if rc == 0:
                found[k] = json.loads(out)["status"]
        return found

    def release_hold(self, cid, path):
        """Creates `path` inside container `cid` wherever it runs (through
        /proc/<its pid>/root): what a rank started with --hold waits for.
        Nothing to release if the container runs nowhere."""
        for k, state in self.where(cid).items():
            if state != "running":
                continue
            rc, out, _ = self.tb.run(k, f"{CRX} state {cid}", timeout=120)
            pid = json.loads(out)["pid"] if rc == 0 else 0
            if pid > 0:
                self.tb.run(k, f"touch /proc/{pid}/root{path}", timeout=60, check=True)

    def qps(self, k):
        """The rank's QPs on guest k as (type, lqpn) pairs."""
        rc, out, err = self.tb.run(k, "rdma -j resource show qp")
        if rc != 0:
            raise AssertionError(f"g{k}: rdma resource show qp: {err}")
        return sorted((q.get("type"), q.get("lqpn")) for q in json.loads(out or "[]")
                      if q.get("comm") in ("mpi-jacobi", "async"))

    def leftovers(self):
        """What the job left on the guests: rank containers, namespaces,
        links, addresses or routes of the ranks (empty: nothing)."""
        left = []
        for k in range(NODES):
            rc, out, err = self.tb.run(k, f"{CRX} list -q; ip netns list; ip -o link; "
                                          f"ip -o -4 addr; ip route")
            if rc != 0:
                raise AssertionError(f"g{k}: listing what is left failed: {err}")
            if any(f"mpi-{r}" in out or rank_address(j) in out for j, r in enumerate(RANKS)):
                left.append(f"g{k}: {out}")
        return left

    def wait_gone(self):
        """Every rank container has stopped and was deleted by the agent,
        and its namespace, veth, route and address left the guest."""
        wait_until(lambda: not self.leftovers(), 120,
                   lambda: "the rank containers and addresses to go:\n"
                           + "\n".join(self.leftovers()), interval=1)

    def rndv_threshold(self, k=0):
        """The message size from which UCX's tag sends over rc_v on rxe0 use
        the rendezvous protocol (ucx_info's tag_send line, guest k)."""
        # the endpoint is a loopback one over rxe0 (wire-up over UD, whose
        # GID check refuses it as it does the ranks': UCX_ENV)
        rc, out, err = self.tb.run(k, "UCX_TLS=rc_v UCX_NET_DEVICES=rxe0:1 "
                                      "UCX_UD_VERBS_ETH_DGID_CHECK=n "
                                      "ucx_info -e -u t -D net", timeout=120)
        for ln in out.splitlines():
            if "tag_send:" in ln and "<rndv>" in ln:
                return int(ln.split("<rndv>")[0].rstrip(".").rsplit("..", 1)[-1])
        raise AssertionError(f"g{k}: no rendezvous threshold in ucx_info ({rc}):\n{out}{err}")
