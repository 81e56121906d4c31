#!/usr/bin/python3
"""crx checkpoint/restore in one guest and crx migrate between two guests.

The container is a busybox shell that appends a counter to /out/count.log;
/out is a bind mount of the test bed's scratch dir (an external mount for
CRIU), so the host and every guest see the same file and a migrated
container writes on where it stopped."""
import json
import shutil
import os
import subprocess
import sys
import time

sys.path.insert(0, os.environ.get("CRX_VM_DIR", os.path.join(os.path.dirname(__file__), "..")))
from vmtest import (VmTestCase, boot_shared, loopback_tcp_cmd, main, report_line, wait_for_count,  # noqa: E402
                    remove_every_container_cmd, wait_listening, wait_until,
                    warm_for_migration)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("CRX_BUILD_DIR", os.path.join(ROOT, "build"))
CRX = os.path.join(BUILD, "crx")
KEY = "0123456789abcdef0123456789abcdef"
PORT = 7070
RELAY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tamper_relay.py")
DIRTIER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dirtier.c")


COUNTER = "i=0; while :; do echo $i >> /out/count.log; i=$((i+1)); sleep 0.2; done"
PIPELINE_AND_ZOMBIES = (
    "i=0; (while :; do echo $i; i=$((i+1)); sleep 0.2; done) | cat | "
    "while read n; do echo $n >> /out/count.log; done & sleep 0 & sleep 0 & exec sleep 1000000")
# Half a MiB of random base64 that the counter's shell holds: pages the page
# channel's LZ4 frames cannot shrink, so that over a slow link a round (or
# the final dump) stays on the wire for tens of seconds (512 KiB at 96
# kbit/s: ~45 s), however long the host takes to notice the phase.
BALLAST = "b=$(head -c 393216 /dev/urandom | base64 -w 0); "


def make_bundle(scratch, name="bundle", script=COUNTER, own_netns=True):
    """A busybox bundle in the scratch dir; guests copy it to /tmp/bundle."""
    b = os.path.join(scratch, name)
    os.makedirs(os.path.join(b, "rootfs"), exist_ok=True)
    subprocess.run([os.path.join(ROOT, "bundles", "busybox", "make-rootfs.sh"),
                    os.path.join(b, "rootfs")], check=True)
    subprocess.run([CRX, "spec", "--bundle", b], check=True)
    with open(os.path.join(b, "config.json")) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = [
        "sh", "-c",
        # stdio from the container's own /dev/null: the host's /dev/null that
        # `crx run -d` hands over lives in a mount CRIU cannot see from inside.
        "exec </dev/null >/dev/null 2>&1; " + script]
    if not own_netns:
        spec["linux"]["namespaces"] = [ns for ns in spec["linux"]["namespaces"]
                                       if ns["type"] != "network"]
    spec["root"]["readonly"] = False
    out = os.path.join(scratch, "out")
    os.makedirs(out, exist_ok=True)
    spec["mounts"].append({"destination": "/out", "type": "bind", "source": out,
                           "options": ["rbind", "rw"]})
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(spec, f, indent=2)
    return b


CA_CNF = """[ca]
default_ca = c
[c]
dir = .
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = p
copy_extensions = copy
unique_subject = no
[p]
commonName = supplied
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
[v3_host]
basicConstraints = CA:FALSE
"""


def make_certs(d, hosts):
    """A throwaway CA (d/ca.crt) and per host name a key and certificate
    (d/<name>.key, d/<name>.crt) carrying the given subjectAltName, made
    with the openssl CLI. Valid from a day ago (a guest's clock may lag
    the host's) for two days."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write(CA_CNF)
    open(os.path.join(d, "index.txt"), "w").close()
    with open(os.path.join(d, "serial"), "w") as f:
        f.write("01\n")
    now = time.time()
    dates = ["-startdate", time.strftime("%Y%m%d%H%M%SZ", time.gmtime(now - 86400)),
             "-enddate", time.strftime("%Y%m%d%H%M%SZ", time.gmtime(now + 2 * 86400))]

    def ossl(*args):
        r = subprocess.run(["openssl", *args], cwd=d, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(args)}: {r.stderr}")

    newkey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    ossl("req", "-new", *newkey, "-keyout", "ca.key", "-out", "ca.csr",
         "-subj", "/CN=crx test migration CA")
    ossl("ca", "-batch", "-config", "ca.cnf", "-selfsign", "-keyfile", "ca.key", "-in", "ca.csr",
         "-out", "ca.crt", "-extensions", "v3_ca", *dates)
    for name, san in hosts.items():
        ossl("req", "-new", *newkey, "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={name}", "-addext", f"subjectAltName={san}")
        ossl("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.crt", "-keyfile", "ca.key",
             "-in", f"{name}.csr", "-out", f"{name}.crt", "-extensions", "v3_host", *dates)
    return d


class Base(VmTestCase):
    """Cases of a class share its guests (setUpClass: boot_shared, the vm
    label's time budget); setUp puts every guest back as a fresh boot has
    it, whatever the case before left: no container, receiver, criu or
    relay, no bundle, image, key or TLS files, eth0 up without a qdisc,
    no namespace ctr, nothing in the scratch dir's out/."""
    tb = None
    guests = 0

    @classmethod
    def setUpClass(cls):
        cls.tb = boot_shared(cls.guests, cls.prepare, rxe=False)

    @classmethod
    def prepare(cls, tb):
        cls.bundle = make_bundle(tb.scratch)
        cls.ballast_bundle = make_bundle(tb.scratch, "bundle-ballast", BALLAST + COUNTER)
        warm_for_migration(tb, CRX)

    @classmethod
    def tearDownClass(cls):
        if cls.tb:
            cls.tb.close()

    def setUp(self):
        for k in range(self.tb.n):
            self.tb.run(k, "pkill -9 -f 'crx [r]eceive|crx [m]igrate|[t]amper_relay'; "
                           "pkill -9 -x criu; "
                           f"{remove_every_container_cmd(CRX)}; "
                           "rm -rf /tmp/bundle* /tmp/img* /tmp/key /tmp/tls /tmp/*.log; "
                           "tc qdisc del dev eth0 root 2>/dev/null; "
                           "ip link set eth0 up; ip netns del ctr 2>/dev/null; true",
                        timeout=120)
        out = os.path.join(self.tb.scratch, "out")
        for f in os.listdir(out):
            os.unlink(os.path.join(out, f))

    def setup_guest(self, tb, k, bundle, key=KEY):
        self.sh(tb, k, f"cp -a {bundle} /tmp/bundle && "
                       f"printf %s {key} > /tmp/key && chmod 600 /tmp/key")

    def counts(self, tb, k=0):
        out = self.sh(tb, k, f"cat {tb.scratch}/out/count.log 2>/dev/null || true")
        return [int(x) for x in out.split()]

    def wait_for_count(self, tb, above, timeout=180):
        return wait_for_count(lambda: self.counts(tb), above, timeout)

    def assert_counts_continuously(self, c):
        self.assertEqual(c, list(range(len(c))),
                         "the count must go on from where it stopped, without gaps or restart")

    def run_counter(self, tb, k=0, cid="c1"):
        self.sh(tb, k, f"{CRX} run -d -b /tmp/bundle {cid} </dev/null >/dev/null 2>&1", timeout=300)
        self.wait_for_count(tb, 3)

    def state(self, tb, k, cid="c1"):
        rc, out, err = tb.run(k, f"{CRX} state {cid}", timeout=120)
        return (json.loads(out)["status"] if rc == 0 else None), err

    def received(self, tb, rh, migrated, timeout=300, k=1, must_end=False, log=None):
        """The receiver's (rc, out, err) once `crx migrate` returned
        `migrated` (its rc, out, err): VmTestCase.wait_receiver, which
        names what the receiver was doing if it hangs. A receiver left
        waiting by a failed migrate is killed after a minute, unless
        must_end (a case where it should have ended on its own)."""
        rc, out, err = migrated
        return self.wait_receiver(tb, rh, k, f"crx migrate ({rc}):\n{out}{err}",
                                  0 if must_end else rc, timeout, log)


class CheckpointTest(Base):
    guests = 1

    def test_checkpoint_then_restore_continues_counting(self):
        tb = self.tb
        self.setup_guest(tb, 0, self.bundle)
        self.run_counter(tb)
        self.sh(tb, 0, f"{CRX} checkpoint --image-path /tmp/img c1 "
                       "|| { cat /tmp/img/dump.log | tail -30; exit 1; }", timeout=600)
        st, err = self.state(tb, 0)
        self.assertIsNone(st, "checkpoint without --leave-running removes the container")
        self.assertIn("does not exist", err)
        stopped = self.counts(tb)
        time.sleep(1)
        self.assertEqual(self.counts(tb), stopped, "counter went on after the checkpoint")
        self.sh(tb, 0, f"{CRX} restore -d --image-path /tmp/img -b /tmp/bundle c1 "
                       "|| { tail -30 /tmp/img/restore.log; exit 1; }", timeout=600)
        self.assertEqual(self.state(tb, 0)[0], "running")
        after = self.wait_for_count(tb, stopped[-1] + 2)
        self.assert_counts_continuously(after)
        self.sh(tb, 0, f"{CRX} kill c1 KILL && sleep 1 && {CRX} delete c1", timeout=120)

    def test_pre_dump_parent_path_and_leave_running(self):
        tb = self.tb
        self.setup_guest(tb, 0, self.bundle)
        self.run_counter(tb)
        self.sh(tb, 0, f"{CRX} checkpoint --pre-dump --image-path /tmp/img/1 c1 "
                       "|| { tail -30 /tmp/img/1/pre-dump.log; exit 1; }", timeout=600)
        self.assertEqual(self.state(tb, 0)[0], "running")
        self.sh(tb, 0, f"{CRX} checkpoint --leave-running --parent-path ../1 "
                       "--image-path /tmp/img/2 c1 "
                       "|| { tail -30 /tmp/img/2/dump.log; exit 1; }", timeout=600)
        self.assertEqual(self.state(tb, 0)[0], "running")
        self.assertEqual(self.sh(tb, 0, "readlink /tmp/img/2/parent").strip(), "../1")
        c = self.counts(tb)
        self.wait_for_count(tb, c[-1] + 2)  # still counting after --leave-running
        self.sh(tb, 0, f"{CRX} kill c1 KILL && sleep 1 && {CRX} delete c1", timeout=120)


class Receiving:
    """crx receive --once on g1, crx migrate c1 from g0."""
    def start_receiver(self, tb, prefix="", flags=""):
        h = tb.spawn(1, f"{prefix}{CRX} receive --listen 0.0.0.0:{PORT} --key /tmp/key --once "
                        f"--image-dir /run/crx-migrate --format json {flags}")
        wait_listening(tb, 1, PORT, "crx receive", h)
        return h

    def migrate(self, tb, extra=""):
        return tb.run(0, f"{CRX} migrate c1 --to {tb.ip(1)}:{PORT} --key /tmp/key "
                         f"--format json {extra}", timeout=900)

    RECEIVER_LOG = "/tmp/receiver.log"

    def slow_link_migration(self, tb, rate, burst, flags=""):
        """g0's link slowed to `rate` (tc tbf), a receiver on g1 logging to
        RECEIVER_LOG and `crx migrate c1 <flags>` started: both handles.
        Run c1 from ballast_bundle (two_guests(bundle=...)): the counter's
        own pages compress to a second's worth of the link."""
        self.sh(tb, 0, "modprobe sch_tbf 2>/dev/null; "
                       f"tc qdisc add dev eth0 root tbf rate {rate} burst {burst} latency 5s")
        rh = tb.spawn(1, f"{CRX} receive --listen 0.0.0.0:{PORT} --key /tmp/key --once "
                         f"--timeout 20 --image-dir /run/crx-migrate > {self.RECEIVER_LOG} 2>&1")
        wait_listening(tb, 1, PORT, "crx receive", rh)
        mh = tb.spawn(0, f"{CRX} migrate c1 --to {tb.ip(1)}:{PORT} --key /tmp/key {flags} "
                         "--timeout 20 --format json")
        return rh, mh

    def wait_for_receiver_phase(self, tb, rh_log, phase, timeout=300):
        wait_until(lambda: tb.run(1, f"grep -q '{phase}' {rh_log}")[0] == 0, timeout,
                   f"the receiver to reach {phase}", interval=0.3)


class TwoGuests:
    """g0 the source and g1 the destination, each with the counter's bundle
    and a key: what MigrateTest and MigrateRollbackTest share (a mixin,
    not a TestCase, so that neither class runs the other's cases)."""
    guests = 2

    def two_guests(self, key1=KEY, bundle=None):
        tb = self.tb
        self.setup_guest(tb, 0, bundle or self.bundle)
        self.setup_guest(tb, 1, bundle or self.bundle, key=key1)
        return tb


class MigrateTest(TwoGuests, Receiving, Base):
    """Migrations that succeed. Their pages go over at the link's full
    speed, and the pre-copy cases judge how fast pages get dirtied against
    the link (the counter's rounds, --pre-copy auto's stop): this class
    has both cores to itself (tests/vm/migrate/CMakeLists.txt)."""

    def test_counter_moves_and_keeps_counting(self):
        tb = self.two_guests()
        self.run_counter(tb)
        # Two sysctls of its namespace changed (as config.json's
        # linux.sysctl would): the namespace still moves as a new one, and
        # crx carries the sysctls, which CRIU would not (fresh_netns.hpp).
        pid = json.loads(self.sh(tb, 0, f"{CRX} state c1"))["pid"]
        self.sh(tb, 0, f"nsenter -t {pid} -n sysctl -qw net.ipv4.ip_unprivileged_port_start=80 "
                       "net.ipv4.conf.lo.forwarding=1")
        # Its UTS and IPC namespaces hold a name and a sysctl of their own
        # and no SysV object: they are made anew at the destination with
        # those (checkpoint/uts_ipc_anew.hpp).
        self.sh(tb, 0, f"nsenter -t {pid} -u -i sh -c 'hostname crx-moved && "
                       "sysctl -qw kernel.shmmax=12345678'")
        # The guests' cgroup2 options (guest/init): CRIU's own cgroup2
        # mounts reset them host-wide; crx puts them back after every CRIU
        # run (cgroup/root_options.hpp).
        cgroup_options = "grep ' /sys/fs/cgroup ' /proc/self/mountinfo | sed 's/.* - //'"
        options_before = [self.sh(tb, k, cgroup_options).strip() for k in (0, 1)]
        for o in options_before:
            self.assertIn("nsdelegate,favordynmods", o)
        rh = self.start_receiver(tb)
        rc, out, err = self.migrate(tb, "--pre-copy 2 --pre-dump-mode read")
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err))
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
        report = json.loads(out.strip().splitlines()[-1])
        self.assertEqual(report["outcome"], "migrated")
        self.assertGreater(report["downtime_seconds"], 0)
        # TLS by default, the pages in kernel TLS (CRIU's fd) on both ends.
        self.assertEqual(report["security"], "tls+ktls")
        self.assertEqual(json.loads(rout.strip().splitlines()[-1])["security"], "tls+ktls")
        # The suite auto measured fastest on the sender (ChaCha20 in these
        # guests, but a loaded host may tip it): both ends name the same.
        self.assertIn(report["tls_cipher"],
                      ("TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"))
        self.assertEqual(json.loads(rout.strip().splitlines()[-1])["tls_cipher"],
                         report["tls_cipher"])
        # Pre-copy pays off: the idle shell's memory went over before the
        # freeze, and the final (frozen) dump leaves it out as unchanged.
        # (Not "the final round is smaller than the first": the shell's
        # anonymous memory is ~18 pages, as much as the fresh `sleep` child
        # the final dump may find, whose pages are all new.)
        rounds = report["rounds"]
        self.assertTrue(rounds[-1]["final"] and not rounds[0]["final"], rounds)
        self.assertGreater(rounds[0]["page_bytes"], 0, rounds)
        self.assertGreater(rounds[-1].get("unchanged_page_bytes", 0), 0, rounds)
        # The pre-dumps read the pages while the shell ran (CRIU's read
        # mode, which over a stream page channel made this shell segfault
        # after the move); the final dump, frozen, has no such mode.
        self.assertEqual([bool(r.get("pre_dump_read")) for r in rounds], [True, True, False],
                         rounds)
        # CRIU's own account of every round (stats-dump) and of the restore
        # (stats-restore, from the destination): frozen in the final dump,
        # pages scanned in every round, the task tree forked on restore.
        for r in rounds:
            self.assertGreater(r["criu"]["pages_scanned"], 0, r)
        # Its network namespace is as crx made it: it moves as a new one,
        # without CRIU's network tools (checkpoint/fresh_netns.hpp).
        self.assertTrue(rounds[-1].get("network_namespace_moved_empty"), rounds[-1])
        self.assertEqual(rounds[-1].get("network_sysctls_carried"), 2, rounds[-1])
        # Read while the container ran; nothing changed before the freeze,
        # so only its sysctls were read in the window (NetnsWatch).
        self.assertTrue(rounds[-1].get("network_namespace_read_before_freeze"), rounds[-1])
        # Its sysctls (the two above among them) read once the images were
        # sent, while the destination restored (LateState).
        self.assertTrue(rounds[-1].get("network_sysctls_read_after_images"), rounds[-1])
        self.assertTrue(rounds[-1].get("uts_ipc_namespaces_made_anew"), rounds[-1])
        # The final dump's request went before the freeze, and the frozen
        # container's (the mounts made again, /dev, the namespaces anew,
        # no plugin) was the same, so CRIU went on with it.
        self.assertTrue(rounds[-1].get("dump_request_ahead"), rounds[-1])
        # The destination made the cgroup at the same path and the container
        # made none below it: CRIU neither mounted cgroup2 nor walked it in
        # the window (CriuSource::cgroup_left_to_destination).
        self.assertTrue(rounds[-1].get("cgroup_left_to_destination"), rounds[-1])
        final_criu = rounds[-1]["criu"]
        self.assertGreater(final_criu["frozen_seconds"], 0, final_criu)
        self.assertLessEqual(final_criu["memdump_seconds"], final_criu["frozen_seconds"], final_criu)
        self.assertGreater(report["criu_restore"]["forking_seconds"], 0, report["criu_restore"])
        self.assertGreaterEqual(report["criu_restore"]["restore_seconds"],
                                report["criu_restore"]["forking_seconds"], report["criu_restore"])
        print("sender report:", report_line(report), flush=True)
        print("CRIU: final dump", final_criu, "restore", report["criu_restore"], flush=True)
        self.assertEqual(rrc, 0, rerr)
        self.assertEqual([self.sh(tb, k, cgroup_options).strip() for k in (0, 1)],
                         options_before, "the guests' cgroup2 options after the move")
        # Exactly one copy: gone on g0, running on g1 under the same id.
        self.assertIsNone(self.state(tb, 0)[0])
        self.assertEqual(self.state(tb, 1)[0], "running")
        c = self.counts(tb)
        after = self.wait_for_count(tb, c[-1] + 2)
        self.assert_counts_continuously(after)
        pid = json.loads(self.sh(tb, 1, f"{CRX} state c1"))["pid"]
        got = self.sh(tb, 1, f"nsenter -t {pid} -n sysctl -n net.ipv4.ip_unprivileged_port_start "
                             "net.ipv4.conf.lo.forwarding").split()
        self.assertEqual(got, ["80", "1"], "the carried sysctls at the destination")
        # CRIU dumped from inside that namespace (criu_sides.cpp): the
        # images hold none, and the destination gave the tasks a new one,
        # not CRIU's (the host's), whose sysctls kept their values.
        ns = self.sh(tb, 1, f"readlink /proc/{pid}/ns/net /proc/1/ns/net").split()
        self.assertNotEqual(ns[0], ns[1], "the restored container is in the host's namespace")
        self.assertEqual(self.sh(tb, 1, "sysctl -n net.ipv4.ip_unprivileged_port_start").strip(),
                         "1024")
        # The same for its UTS and IPC namespaces: new ones, not the host's,
        # holding the name and the sysctl crx carried.
        got = self.sh(tb, 1, f"nsenter -t {pid} -u -i sh -c 'hostname; sysctl -n kernel.shmmax'")
        self.assertEqual(got.split(), ["crx-moved", "12345678"], "the carried UTS and IPC content")
        for ns_type in ("uts", "ipc"):
            ns = self.sh(tb, 1, f"readlink /proc/{pid}/ns/{ns_type} /proc/1/ns/{ns_type}").split()
            self.assertNotEqual(ns[0], ns[1], f"the restored container is in the host's {ns_type}")
        self.assertNotEqual(self.sh(tb, 1, "hostname").strip(), "crx-moved")
        # Its init in the container's cgroup (`crx ps` lists the cgroup's
        # processes).
        self.assertIn(pid, json.loads(self.sh(tb, 1, f"{CRX} ps --format json c1")))
        # The mounts crx made again at the destination instead of CRIU
        # (runtime/checkpoint/recreated_*): masked dirs empty and read-only,
        # /dev/shm writable, /dev with its devices.
        for d in ("/proc/acpi", "/sys/firmware"):
            self.assertEqual(self.sh(tb, 1, f"{CRX} exec c1 ls -A {d}").strip(), "", d)
            rc, out, err = tb.run(1, f"{CRX} exec c1 touch {d}/x", timeout=120)
            self.assertNotEqual(rc, 0, f"{d} must stay read-only")
            self.assertIn("Read-only", out + err)
        self.assertEqual(self.sh(tb, 1, f"{CRX} exec c1 sh -c 'echo w > /dev/shm/f; cat /dev/shm/f; "
                                        "echo z > /dev/null; head -c 4 /dev/zero | wc -c'").split(),
                         ["w", "4"])
        # Its own network namespace carries traffic: CRIU's nftables lock
        # did not come along (runtime/checkpoint/nft_lock_tables.hpp).
        pid = json.loads(self.sh(tb, 1, f"{CRX} state c1"))["pid"]
        self.assertEqual(self.sh(tb, 1, loopback_tcp_cmd(pid)).strip(), "ok")
        self.sh(tb, 1, f"{CRX} kill c1 KILL && sleep 1 && {CRX} delete c1", timeout=120)

    def test_configured_network_namespace_moves_with_its_configuration(self):
        """A container's own network namespace that someone configured (as a
        CNI plugin would: lo up, an address, a route, an iptables rule) is
        not as a new one: CRIU saves and restores it with its tools, and
        the destination's copy has all of it."""
        tb = self.two_guests()
        self.run_counter(tb)
        pid = json.loads(self.sh(tb, 0, f"{CRX} state c1"))["pid"]
        # And a sysctl CRIU does not save (it saves devices' conf entries
        # only): crx carries it.
        self.sh(tb, 0, f"nsenter -t {pid} -n sh -c 'ip link set lo up && "
                       "ip addr add 10.78.0.5/32 dev lo && ip route add 10.78.1.0/24 dev lo && "
                       "iptables -w -A INPUT -s 10.78.0.9 -j DROP && "
                       "sysctl -qw net.ipv4.tcp_keepalive_time=1234'")
        # And its IPC namespace holds a SysV segment: CRIU dumps the UTS and
        # IPC namespaces too, the segment with its contents. Made once the
        # container is frozen (--on-freeze runs then), after the final
        # dump's request went: that request had the namespaces made anew,
        # so the frozen container's is another, which CRIU is given instead.
        # And a cgroup of its own below the container's: only CRIU's walk
        # of the cgroup records it, so the final dump keeps the walk.
        cgroup_dir = "/sys/fs/cgroup" + self.sh(tb, 0, f"sed -n 's/^0:://p' /proc/{pid}/cgroup").strip()
        self.sh(tb, 0, f"mkdir {cgroup_dir}/inner")
        rh = self.start_receiver(tb)
        rc, out, err = self.migrate(
            tb, f"--pre-copy 1 --on-freeze 'nsenter -t {pid} -i ipcmk --shmem 8192 >&2'")
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err))
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
        self.assertEqual(rrc, 0, rerr)
        self.assertIn("Shared memory id", err, "the --on-freeze hook did not run")
        report = json.loads(out.strip().splitlines()[-1])
        print("sender report:", report_line(report), flush=True)
        self.assertNotIn("dump_request_ahead", report["rounds"][-1])
        self.assertNotIn("network_namespace_moved_empty", report["rounds"][-1])
        self.assertEqual(report["rounds"][-1].get("network_sysctls_carried"), 1, report["rounds"][-1])
        self.assertTrue(report["rounds"][-1].get("network_namespace_read_before_freeze"),
                        report["rounds"][-1])
        # Saved by CRIU, whose dump adds sysctls (nf_conntrack's): read at
        # the freeze, not after the images.
        self.assertNotIn("network_sysctls_read_after_images", report["rounds"][-1])
        self.assertNotIn("uts_ipc_namespaces_made_anew", report["rounds"][-1])
        self.assertNotIn("cgroup_left_to_destination", report["rounds"][-1])
        self.sh(tb, 1, f"test -d {cgroup_dir}/inner")  # made again by CRIU's restore
        pid = json.loads(self.sh(tb, 1, f"{CRX} state c1"))["pid"]
        self.assertIn("8192", self.sh(tb, 1, f"nsenter -t {pid} -i ipcs -m"),
                      "the SysV segment did not come along")
        ns = self.sh(tb, 1, f"nsenter -t {pid} -n sh -c 'ip addr show lo; ip route show; "
                            "iptables -w -S INPUT; sysctl net.ipv4.tcp_keepalive_time'")
        for what in ("LOOPBACK,UP", "10.78.0.5/32", "10.78.1.0/24 dev lo", "-s 10.78.0.9/32 -j DROP",
                     "net.ipv4.tcp_keepalive_time = 1234"):
            self.assertIn(what, ns, f"the destination's namespace lacks {what!r}:\n{ns}")
        c = self.counts(tb)
        self.assert_counts_continuously(self.wait_for_count(tb, c[-1] + 2))
        self.sh(tb, 1, f"{CRX} kill c1 KILL && sleep 1 && {CRX} delete c1", timeout=120)

    def test_pre_copy_auto_stops_early_for_a_hot_container_and_soon_for_an_idle_one(self):
        """--pre-copy auto (runtime/migrate/precopy.hpp): dirtier.c rewrites
        all of its 32 MiB every 50 ms ("hot"), far faster than the link
        moves it, so round 2 carries round 1 again and auto stops there; an
        idle one ("idle") dirties almost nothing after round 1, so round 2
        predicts a negligible final round. Both check every page's contents
        after the move (a stale page logs BAD and exits). The hot one moves
        with --no-page-compression: its pages hold one word each and LZ4
        makes any link outrun them (32 MiB at 122 MiB/s), while this case
        is about a set the link cannot outrun; the idle one moves with
        crx's default."""
        tb = self.tb
        for name in ("hot", "idle"):
            b = make_bundle(tb.scratch, name=f"bundle-{name}",
                            script=f"exec /dirtier {name} 32 /out/{name}.log")
            subprocess.run(["cc", "-O2", "-static", "-o", os.path.join(b, "rootfs", "dirtier"),
                            DIRTIER], check=True)
            for k in (0, 1):
                self.sh(tb, k, f"cp -a {b} /tmp/bundle-{name}")
        for k in (0, 1):
            self.sh(tb, k, f"printf %s {KEY} > /tmp/key && chmod 600 /tmp/key")

        def log(name):
            out = self.sh(tb, 0, f"cat {tb.scratch}/out/{name}.log 2>/dev/null || true")
            self.assertNotIn("BAD", out, f"{name}: the memory is not what it wrote")
            return [int(x) for x in out.split()]

        reports = {}
        for name in ("hot", "idle"):
            self.sh(tb, 0, f"{CRX} run -d -b /tmp/bundle-{name} {name} </dev/null >/dev/null 2>&1",
                    timeout=300)
            wait_for_count(lambda: log(name), 3)
        for name in ("hot", "idle"):
            rh = self.start_receiver(tb)
            rc, out, err = tb.run(0, f"{CRX} migrate {name} --to {tb.ip(1)}:{PORT} --key /tmp/key "
                                     f"--pre-copy auto --format json"
                                     + (" --no-page-compression" if name == "hot" else ""),
                                  timeout=900)
            rrc, rout, rerr = self.received(tb, rh, (rc, out, err))
            self.assertEqual(rc, 0, f"{name}: migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
            self.assertEqual(rrc, 0, rerr)
            report = json.loads(out.strip().splitlines()[-1])
            print(f"{name}: sender report:", report_line(report), flush=True)
            reports[name] = report
            self.assertEqual(report["outcome"], "migrated")
            self.assertEqual(report["pre_copy"]["mode"], "auto")
            rounds = report["rounds"]
            self.assertTrue(rounds[-1]["final"] and not any(r["final"] for r in rounds[:-1]), rounds)
            for r in rounds[:-1]:
                self.assertGreater(r["bandwidth_bytes_per_second"], 0, r)
            self.assertIn("predicted_final_bytes", rounds[-2])
            self.assertIn("actual_downtime_seconds", report["pre_copy"])
            # Data intact: it counts on where it stopped, its pages checked.
            self.assertIsNone(self.state(tb, 0, name)[0])
            self.assertEqual(self.state(tb, 1, name)[0], "running")
            c = log(name)
            after = wait_for_count(lambda: log(name), c[-1] + 3)
            self.assertEqual(after, list(range(len(after))), f"{name}: the count restarted or skipped")
        hot, idle = reports["hot"], reports["idle"]
        # Hot: round 2 measured the dirty rate, and it was hopeless.
        self.assertEqual(hot["pre_copy"]["rounds"], 2, hot["pre_copy"])
        self.assertRegex(hot["pre_copy"]["stop"],
                         r"rounds cannot converge$|^dirty set stopped shrinking: ")
        self.assertGreaterEqual(hot["rounds"][1]["page_bytes"], 32 << 20)
        self.assertGreaterEqual(hot["rounds"][2]["page_bytes"], 32 << 20,
                                "the final round carries the whole hot set")
        self.assertGreaterEqual(hot["pre_copy"]["predicted_final_bytes"], 32 << 20,
                                "round 2 found the set dirty again: so will the final round")
        # Idle: round 2 found almost nothing dirty; the final round is small.
        self.assertEqual(idle["pre_copy"]["rounds"], 2, idle["pre_copy"])
        self.assertRegex(idle["pre_copy"]["stop"],
                         r"^predicted final round .* under 10% of the fixed downtime|^nothing dirty$")
        self.assertLess(idle["rounds"][2]["page_bytes"], idle["rounds"][0]["page_bytes"] // 8)
        for name in ("hot", "idle"):
            self.sh(tb, 1, f"{CRX} kill {name} KILL && sleep 1 && {CRX} delete {name}", timeout=120)

    def test_counter_in_a_netns_joined_by_path_moves(self):
        """The containerd/CNI case: config.json joins /var/run/netns/ctr,
        which each guest made itself (its own address inside). The
        namespace is external to CRIU: the container lands in g1's ctr."""
        tb = self.tb
        b = make_bundle(tb.scratch, name="bundle-netns")
        cfg = os.path.join(b, "config.json")
        with open(cfg) as f:
            spec = json.load(f)
        for n in spec["linux"]["namespaces"]:
            if n["type"] == "network":
                n["path"] = "/var/run/netns/ctr"
        with open(cfg, "w") as f:
            json.dump(spec, f)
        for k in (0, 1):
            self.setup_guest(tb, k, b)
            self.sh(tb, k, f"ip netns add ctr && ip -n ctr link set lo up && "
                           f"ip -n ctr addr add 10.79.0.{k + 1}/24 dev lo")
        self.run_counter(tb)
        rh = self.start_receiver(tb)
        rc, out, err = self.migrate(tb)
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err))
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
        self.assertEqual(rrc, 0, rerr)
        self.assertIsNone(self.state(tb, 0)[0])
        self.assertEqual(self.state(tb, 1)[0], "running")
        self.assert_counts_continuously(self.wait_for_count(tb, self.counts(tb)[-1] + 2))
        pid = json.loads(self.sh(tb, 1, f"{CRX} state c1"))["pid"]
        self.assertEqual(self.sh(tb, 1, f"readlink /proc/{pid}/ns/net"),
                         self.sh(tb, 1, "ip netns exec ctr readlink /proc/self/ns/net"))
        self.assertIn("10.79.0.2", self.sh(tb, 1, f"{CRX} exec c1 ip addr show lo"),
                      "the destination's namespace, with the destination's address")
        self.sh(tb, 1, f"{CRX} kill c1 KILL && sleep 1 && {CRX} delete c1", timeout=120)

    def test_counter_moves_with_certificates(self):
        """X.509 instead of the shared key: each guest has its own
        certificate from one throwaway CA; the receiver takes only the
        sender's name, the sender checks the receiver's IP address. Both
        connections run TLS with them, the pages in kernel TLS. Its
        pre-copy round splices the pages with the shell stopped (crx's
        default, CRIU's too), where test_counter_moves_and_keeps_counting
        reads them while it runs."""
        tb = self.two_guests()
        tls = make_certs(os.path.join(tb.scratch, "tls"), {
            "sender.crx.test": "DNS:sender.crx.test",
            "receiver.crx.test": f"DNS:receiver.crx.test,IP:{tb.ip(1)}"})
        names = {0: "sender.crx.test", 1: "receiver.crx.test"}
        for k, name in names.items():
            self.sh(tb, k, f"mkdir -p /tmp/tls && cp {tls}/ca.crt {tls}/{name}.crt {tls}/{name}.key "
                           f"/tmp/tls/ && chmod 600 /tmp/tls/{name}.key")

        def flags(k):  # and a named cipher on both ends (--tls-cipher's path)
            return (f"--tls-cert /tmp/tls/{names[k]}.crt --tls-key /tmp/tls/{names[k]}.key "
                    "--tls-ca /tmp/tls/ca.crt --tls-cipher chacha20-poly1305")
        self.run_counter(tb)
        rh = tb.spawn(1, f"{CRX} receive --listen 0.0.0.0:{PORT} {flags(1)} "
                         f"--tls-peer-name sender.crx.test --once --image-dir /run/crx-migrate "
                         "--format json")
        wait_listening(tb, 1, PORT, "crx receive", rh)
        rc, out, err = tb.run(0, f"{CRX} migrate c1 --to {tb.ip(1)}:{PORT} {flags(0)} "
                                 f"--tls-peer-name {tb.ip(1)} --pre-copy 1 --format json",
                              timeout=900)
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err))
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
        self.assertEqual(rrc, 0, rerr)
        self.assertEqual(json.loads(out.strip().splitlines()[-1])["security"], "tls-cert+ktls")
        self.assertEqual(json.loads(rout.strip().splitlines()[-1])["security"], "tls-cert+ktls")
        for r in (out, rout):
            self.assertEqual(json.loads(r.strip().splitlines()[-1])["tls_cipher"],
                             "TLS_CHACHA20_POLY1305_SHA256")
        rounds = json.loads(out.strip().splitlines()[-1])["rounds"]
        self.assertEqual([bool(r.get("pre_dump_read")) for r in rounds], [False, False], rounds)
        self.assertIsNone(self.state(tb, 0)[0])
        self.assertEqual(self.state(tb, 1)[0], "running")
        self.assert_counts_continuously(self.wait_for_count(tb, self.counts(tb)[-1] + 2))
        self.sh(tb, 1, f"{CRX} kill c1 KILL && sleep 1 && {CRX} delete c1", timeout=120)


class MigrateRollbackTest(TwoGuests, Receiving, Base):
    """Migrations that fail or are cut short: a wrong key, a tampered page
    stream, a failed restore, the receiver killed or the sender
    interrupted mid transfer, the link dropped, a fault after the prepared
    restore, an unknown container. The container stays where it was and
    counts on; the destination keeps nothing.

    Their guests mostly wait (a counter every 0.2 s, a link slowed to 96
    kbit, a refusal), so this class may run beside another such vm test
    (crx_vm_test_shares_cores): no verdict depends on how fast the guests
    run. The slow-link cases act while the final dump or pre-copy round 1
    is on a 96 kbit link, tens of seconds set by tc's rate, not by the CPU.
    The two that cut a migration at full speed (migration_under_way) act
    a poll (0.3 s) and one command after its first of three pre-copy
    rounds began, seconds before it could end: the rest of the migration
    runs in the same guests as those commands, so slower guests lengthen
    it too. The waits are for time-outs the case provokes (the receiver's
    --timeout 20 when the link drops) or budgets of 30 s or more for steps
    of seconds."""

    def test_wrong_key_leaves_the_source_running(self):
        tb = self.two_guests(key1="another-key-0123456789abcdef")
        self.run_counter(tb)
        rh = self.start_receiver(tb)
        rc, out, err = self.migrate(tb)
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err), timeout=120, must_end=True)
        self.assertNotEqual(rc, 0)
        self.assertIn("authentication failed", err)
        self.assertIn("authentication failed", rerr)
        self.assert_one_copy_on_the_source(tb)

    def test_tampered_page_stream_leaves_the_source_running(self):
        """An on-path attacker without the key (tamper_relay.py on g0, between
        crx migrate and g1) flips one bit of the page channel: g1's kernel
        refuses the TLS record, the migration rolls back, the source counts
        on and g1 keeps nothing."""
        tb = self.two_guests()
        self.run_counter(tb)
        rh = self.start_receiver(tb)
        relay = tb.spawn(0, f"exec python3 {RELAY} 7171 {tb.ip(1)} {PORT} 2 4096 "
                            "> /tmp/relay.log 2>&1")
        def relay_up():
            self.assertFalse(relay.done.is_set(), f"the relay exited: {relay.result}")
            return tb.run(0, "grep -q listening /tmp/relay.log")[0] == 0
        wait_until(relay_up, 60, "the relay to listen", interval=0.3)
        rc, out, err = tb.run(0, f"{CRX} migrate c1 --to 127.0.0.1:7171 --key /tmp/key "
                                 "--format json", timeout=900)
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err), must_end=True)
        print("sender:", out, err, "receiver:", rerr, sep="\n", flush=True)
        self.assertIn("tampered", self.sh(tb, 0, "cat /tmp/relay.log"))
        self.assertNotEqual(rc, 0)
        self.assertEqual(json.loads(out.strip().splitlines()[-1])["outcome"], "rolled back")
        self.assertNotEqual(rrc, 0, "the receiver must refuse the altered pages")
        self.assertIn("failed TLS's integrity check", rerr)
        self.assert_one_copy_on_the_source(tb)
        self.assertEqual(self.sh(tb, 1, "ls /run/crx-migrate 2>/dev/null | wc -l").strip(), "0")
        tb.kill(relay, 9)

    def test_failed_restore_resumes_the_source(self):
        tb = self.two_guests()
        self.run_counter(tb)
        # Same config.json, but the destination's rootfs lacks the shell.
        self.sh(tb, 1, "rm /tmp/bundle/rootfs/bin/busybox")
        rh = self.start_receiver(tb)
        rc, out, err = self.migrate(tb)
        self.received(tb, rh, (rc, out, err), must_end=True)
        self.assertNotEqual(rc, 0)
        self.assertIn("rolled back", err)
        self.assertEqual(self.state(tb, 0)[0], "running")
        self.assertIsNone(self.state(tb, 1)[0])
        self.assertEqual(self.sh(tb, 1, "ls /run/crx-migrate 2>/dev/null | wc -l").strip(), "0")
        c = self.counts(tb)
        self.assert_counts_continuously(self.wait_for_count(tb, c[-1] + 2))

    def migrate_in_background(self, tb):
        return tb.spawn(0, f"{CRX} migrate c1 --to {tb.ip(1)}:{PORT} --key /tmp/key --pre-copy 3")

    def migration_under_way(self, tb):
        """Starts a receiver (logging to a file) and a migration; returns both
        handles once the receiver reports the first pre-copy round."""
        log = "/tmp/receiver.log"
        rh = tb.spawn(1, f"{CRX} receive --listen 0.0.0.0:{PORT} --key /tmp/key --once "
                         f"--image-dir /run/crx-migrate > {log} 2>&1")
        wait_listening(tb, 1, PORT, "crx receive", rh)
        mh = self.migrate_in_background(tb)
        self.wait_for_receiver_phase(tb, log, "pre-copy 1")
        return rh, mh

    def assert_one_copy_on_the_source(self, tb):
        self.assertEqual(self.state(tb, 0)[0], "running")
        self.assertIsNone(self.state(tb, 1)[0])
        c = self.counts(tb)
        self.assert_counts_continuously(self.wait_for_count(tb, c[-1] + 2))

    def test_receiver_killed_mid_transfer_leaves_the_source_running(self):
        tb = self.two_guests()
        self.run_counter(tb)
        rh, mh = self.migration_under_way(tb)
        self.sh(tb, 1, "pkill -9 -f 'crx [r]eceive'; pkill -9 -f 'criu [p]age-server' || true")
        tb.wait(rh, timeout=60)
        rc, out, err = tb.wait(mh, timeout=600)
        self.assertNotEqual(rc, 0, "migrate must fail when the receiver dies")
        self.assert_one_copy_on_the_source(tb)

    def test_interrupted_sender_leaves_the_source_running(self):
        tb = self.two_guests()
        self.run_counter(tb)
        rh, mh = self.migration_under_way(tb)
        self.sh(tb, 0, "pkill -INT -f 'crx [m]igrate c1'")  # Ctrl-C
        rc, out, err = tb.wait(mh, timeout=600)
        self.received(tb, rh, (rc, out, err), must_end=True)
        self.assertNotEqual(rc, 0, "an interrupted migrate must not report success")
        self.assert_one_copy_on_the_source(tb)
        self.assertEqual(self.sh(tb, 1, "ls /run/crx-migrate 2>/dev/null | wc -l").strip(), "0")

    def test_link_dropped_mid_transfer_leaves_the_source_running(self):
        """The destination's NIC goes down while the frozen container's final
        dump is on the wire: no RST, no FIN, just silence. Both ends must
        notice by their time-outs; the source thaws and counts on."""
        tb = self.two_guests(bundle=self.ballast_bundle)
        self.run_counter(tb)
        # A slow link from the source keeps the final dump (container frozen)
        # in transfer long enough to cut the link right there.
        rh, mh = self.slow_link_migration(tb, "96kbit", "8kb")
        log = self.RECEIVER_LOG
        self.wait_for_receiver_phase(tb, log, "checkpoint+transfer")
        self.sh(tb, 1, "ip link set eth0 down")
        # Frozen: the counter stands still. (Not `crx state`: CRIU seizes
        # the frozen tasks with ptrace and thaws their cgroup while it
        # dumps, so the state reads "running" for most of the final dump.)
        before = self.counts(tb)
        time.sleep(1.5)
        frozen_at_drop = self.counts(tb) == before
        rc, out, err = tb.wait(mh, timeout=600)
        rrc, _, _ = self.received(tb, rh, (rc, out, err), timeout=600, must_end=True,
                                    log=log)
        rlog = self.sh(tb, 1, f"cat {log}")
        print("sender:", out, err, "receiver:", rlog, sep="\n", flush=True)
        self.assertTrue(frozen_at_drop,
                        "the link must drop while the source is frozen for the final dump")
        self.assertNotEqual(rc, 0, "migrate must fail when the link drops")
        self.assertEqual(json.loads(out.strip().splitlines()[-1])["outcome"], "rolled back")
        self.assertNotEqual(rrc, 0, "the receiver must give up when the link drops")
        self.assertIn("timed out", rlog)
        self.assert_one_copy_on_the_source(tb)
        self.assertEqual(self.sh(tb, 1, "ls /run/crx-migrate 2>/dev/null | wc -l").strip(), "0")
        self.assertEqual(tb.run(1, "pgrep -x criu")[0], 1, "criu left running on the destination")

    # What a prepared restore (runtime/migrate/README.md, "Prepared restore")
    # makes on the destination for c1: its state dir, cgroup, CRIU's root
    # and staged mounts under the state dir, a `criu swrk` waiting.
    PREPARED = {
        "state dir": "test -d /run/crx/c1",
        "cgroup": "test -d /sys/fs/cgroup/c1",
        "criu root mount": "grep -q ' /run/crx/c1/criu-root ' /proc/self/mountinfo",
        "waiting criu": "pgrep -f '^criu swrk' >/dev/null",
    }

    def prepared_on_the_destination(self, tb):
        return {what: tb.run(1, cmd)[0] == 0 for what, cmd in self.PREPARED.items()}

    def assert_nothing_left_on_the_destination(self, tb):
        left = {what: there for what, there in self.prepared_on_the_destination(tb).items() if there}
        self.assertEqual(left, {}, "left on the destination")
        self.assertEqual(self.sh(tb, 1, "grep -E 'crx-migrate|/run/crx/' /proc/self/mountinfo; "
                                        "pgrep -a -x criu; ls -A /run/crx-migrate; true").strip(),
                         "", "mounts, criu processes or images left on the destination")
        self.assertIsNone(self.state(tb, 1)[0])

    def prepared_then_pre_copy_under_way(self, tb):
        """A migration with --pre-copy 3 over a slow link (round 1 takes
        tens of seconds), once the receiver is in round 1: the restore is
        prepared there, the source has not frozen."""
        rh, mh = self.slow_link_migration(tb, "96kbit", "8kb", "--pre-copy 3")
        self.wait_for_receiver_phase(tb, self.RECEIVER_LOG, "pre-copy 1")
        prepared = self.prepared_on_the_destination(tb)
        self.assertEqual(prepared, {what: True for what in self.PREPARED},
                         "the restore must be prepared before the first round")
        self.assertEqual(self.state(tb, 0)[0], "running")
        return rh, mh

    def interrupt_the_sender(self, tb, rh, mh):
        """A Ctrl-C of `crx migrate c1` (mh) on g0; it and the receiver (rh,
        logging to RECEIVER_LOG) must fail. The sender's report, its stderr
        and the receiver's log."""
        self.sh(tb, 0, "pkill -INT -f 'crx [m]igrate c1'")
        rc, out, err = tb.wait(mh, timeout=600)
        rrc, _, _ = self.received(tb, rh, (rc, out, err), must_end=True, log=self.RECEIVER_LOG)
        rlog = self.sh(tb, 1, f"cat {self.RECEIVER_LOG}")
        self.assertNotEqual(rc, 0, "an interrupted migrate must not report success")
        self.assertNotEqual(rrc, 0, rlog)
        return json.loads(out.strip().splitlines()[-1]), err, rlog

    def test_fault_after_the_prepared_restore_leaves_nothing_on_the_destination(self):
        """A Ctrl-C of crx migrate after the destination prepared the
        restore and before the freeze: the receiver releases everything it
        prepared; the source never stopped."""
        tb = self.two_guests(bundle=self.ballast_bundle)
        self.run_counter(tb)
        rh, mh = self.prepared_then_pre_copy_under_way(tb)
        report, _, rlog = self.interrupt_the_sender(tb, rh, mh)
        self.assertIn("interrupted", rlog)
        self.assertNotIn("freeze", [p["name"] for p in report["phases"]],
                         "the fault must come before the freeze")
        self.assertGreater(report.get("prepare_seconds", 0), 0, report)
        self.sh(tb, 0, "tc qdisc del dev eth0 root")
        self.assert_nothing_left_on_the_destination(tb)
        self.assert_one_copy_on_the_source(tb)

    def test_ctrl_c_while_the_destination_restores_leaves_nothing_there(self):
        """A Ctrl-C of crx migrate while the destination's CRIU restores: the
        sender rolls back at the RestoreOk, after the destination saved the
        container's state ahead (while the Commit would travel), so the
        receiver must undo a restore whose state.json exists, and the
        restored copy must not run at all. A prestart hook that sleeps on
        g1 (hooks run again at CRIU's setup-namespaces) holds the restore
        long enough to interrupt it there."""
        tb = self.tb
        b = os.path.join(tb.scratch, "bundle-slow-hook")
        shutil.copytree(self.bundle, b, symlinks=True)
        marker = os.path.join(tb.scratch, "out", "restoring")
        with open(os.path.join(b, "config.json")) as f:
            spec = json.load(f)
        spec["hooks"] = {"prestart": [{"path": "/bin/sh", "args": [
            "sh", "-c", f"[ ! -e /tmp/slow-prestart ] || {{ touch {marker}; sleep 6; }}"]}]}
        # Lines as fast as the shell writes them, not one every 0.2 s: a
        # destination copy that ran at all before it was killed (CRIU 3.17
        # lets the tasks go even when its pre-resume notification fails)
        # writes lines the source writes again, which the count's check
        # below finds.
        args = spec["process"]["args"]
        self.assertIn("sleep 0.2", args[-1], "the counter's pause, to be taken out")
        args[-1] = args[-1].replace("sleep 0.2", ":")
        with open(os.path.join(b, "config.json"), "w") as f:
            json.dump(spec, f)
        try:
            self.setup_guest(tb, 0, b)
            self.setup_guest(tb, 1, b)
            self.sh(tb, 1, "touch /tmp/slow-prestart")
            self.run_counter(tb)
            rh = tb.spawn(1, f"{CRX} receive --listen 0.0.0.0:{PORT} --key /tmp/key --once "
                             f"--image-dir /run/crx-migrate > {self.RECEIVER_LOG} 2>&1")
            wait_listening(tb, 1, PORT, "crx receive", rh)
            mh = tb.spawn(0, f"{CRX} migrate c1 --to {tb.ip(1)}:{PORT} --key /tmp/key "
                             "--format json")
            wait_until(lambda: os.path.exists(marker), 300,
                       "the destination's restore to run the prestart hook", interval=0.2)
            report, err, _ = self.interrupt_the_sender(tb, rh, mh)
            self.assertIn("interrupted", err)
            self.assertIn("restore", [p["name"] for p in report["phases"]],
                          "the interrupt must come during the destination's restore")
            self.assertNotIn("commit", [p["name"] for p in report["phases"]], report)
            self.assert_nothing_left_on_the_destination(tb)
            self.assert_one_copy_on_the_source(tb)
        finally:
            shutil.rmtree(b, ignore_errors=True)
            tb.run(1, "rm -f /tmp/slow-prestart")

    def test_receiver_killed_after_the_prepared_restore_leaves_nothing_after_its_successor(self):
        """The receiver SIGKILLed after preparing: its waiting criu dies with
        it (PR_SET_PDEATHSIG); the cgroup, mounts and state dir it made are
        removed by the next crx receive (migrate/stale_sessions.hpp)."""
        tb = self.two_guests(bundle=self.ballast_bundle)
        self.run_counter(tb)
        rh, mh = self.prepared_then_pre_copy_under_way(tb)
        self.sh(tb, 1, "pkill -9 -f 'crx [r]eceive'")
        tb.wait(rh, timeout=60)
        wait_until(lambda: tb.run(1, self.PREPARED["waiting criu"])[0] != 0, 30,
                   "the waiting criu to die with the receiver", interval=0.3)
        self.sh(tb, 0, "tc qdisc del dev eth0 root")
        rc, out, err = tb.wait(mh, timeout=600)
        self.assertNotEqual(rc, 0, "migrate must fail when the receiver dies")
        self.assert_one_copy_on_the_source(tb)
        rh = self.start_receiver(tb)  # sweeps what the dead one left
        self.sh(tb, 1, "pkill -INT -f 'crx [r]eceive'")
        tb.wait(rh, timeout=120)
        self.assert_nothing_left_on_the_destination(tb)

    def test_unknown_container_and_no_receiver(self):
        tb = self.two_guests()
        rc, out, err = tb.run(0, f"{CRX} migrate nope --to {tb.ip(1)}:{PORT} --key /tmp/key")
        self.assertNotEqual(rc, 0)
        self.assertIn("does not exist", err)
        # Read mode without the page filter's copying channel: refused in
        # one line before anything runs.
        rc, out, err = tb.run(0, f"{CRX} migrate nope --to {tb.ip(1)}:{PORT} --key /tmp/key "
                                 "--pre-dump-mode read --no-page-dedup")
        self.assertNotEqual(rc, 0)
        self.assertEqual(err.strip(), "crx: --pre-dump-mode read needs crx's page filter, "
                                      "which --no-page-dedup turns off", err)
        self.run_counter(tb)
        rc, out, err = self.migrate(tb)
        self.assertNotEqual(rc, 0)
        self.assertIn("is `crx receive` listening there?", err)
        self.assertEqual(self.state(tb, 0)[0], "running")


class ContainerStateMigrateTest(Receiving, Base):
    """Everything the container is moves, or the migration refuses before it
    freezes anything (issue 16): processes outside the init's tree (crx
    exec), the paused state, resources changed with crx update, the
    annotations, owner, pid file and cgroup path. One pair of guests for all
    cases; each case starts a fresh c1 and removes it."""
    guests = 2

    @classmethod
    def prepare(cls, tb):
        warm_for_migration(tb, CRX)
        b = make_bundle(tb.scratch)
        cfg = os.path.join(b, "config.json")
        with open(cfg) as f:
            spec = json.load(f)
        spec["annotations"] = {"org.example.owner-team": "migration", "io.crx.test": "16"}
        # Which hooks run where: each appends its name to out/hooks.log.
        log = os.path.join(tb.scratch, "out", "hooks.log")
        spec["hooks"] = {h: [{"path": "/bin/sh", "args": ["sh", "-c", f"echo {h} >> {log}"]}]
                         for h in ("prestart", "createRuntime", "poststart")}
        # A host path each guest has on its own (not the shared scratch).
        spec["mounts"].append({"destination": "/extra", "type": "bind",
                               "source": "/tmp/extra-src", "options": ["rbind", "ro"]})
        with open(cfg, "w") as f:
            json.dump(spec, f)
        # Init execs a process that never waits: the two `sleep 0` stay
        # its zombies; the count goes through a pipeline of three.
        z = make_bundle(tb.scratch, name="bundle-z", script=PIPELINE_AND_ZOMBIES)
        for k in (0, 1):
            tb.run(k, f"cp -a {b} /tmp/bundle && cp -a {z} /tmp/bundle-z && "
                      f"printf %s {KEY} > /tmp/key && "
                      "chmod 600 /tmp/key && mkdir -p /tmp/extra-src", check=True)

    def setUp(self):
        tb = self.tb
        for k in (0, 1):
            tb.run(k, f"pkill -9 -f 'crx [r]eceive'; {CRX} delete -f c1 2>/dev/null; "
                      "rm -f /run/c1.pid; mkdir -p /tmp/extra-src", timeout=120)
        for f in ("count.log", "x", "hooks.log"):
            try:
                os.unlink(os.path.join(tb.scratch, "out", f))
            except FileNotFoundError:
                pass

    def output_changes(self, k, path):
        """True when the exec'd writer still rewrites path within 3 s."""
        first = self.sh(self.tb, k, f"cat {path} 2>/dev/null || true")
        for _ in range(6):
            time.sleep(0.5)
            if self.sh(self.tb, k, f"cat {path} 2>/dev/null || true") != first:
                return True
        return False

    def test_execd_process_refused_then_left_behind_with_kill_exec(self):
        tb = self.tb
        self.run_counter(tb)
        x = f"{tb.scratch}/out/x"
        self.sh(tb, 0, f"{CRX} exec -d --pid-file /tmp/exec.pid c1 sh -c 'exec </dev/null "
                       ">/dev/null 2>&1; while :; do date +%s.%N > /out/x; sleep 0.2; done'")
        epid = int(self.sh(tb, 0, "cat /tmp/exec.pid"))
        self.assertTrue(self.output_changes(0, x), "the exec'd writer does not run")
        rh = self.start_receiver(tb)
        # Refused before anything is frozen: one line naming pid and command.
        rc, out, err = self.migrate(tb)
        print("refused:", err, flush=True)
        self.assertNotEqual(rc, 0)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        self.assertEqual(len(lines), 1, err)
        self.assertIn("outside its init's process tree", err)
        self.assertIn(f"{epid} (sh -c exec </dev/null", err)
        self.assertIn("--kill-exec", err)
        self.assertEqual(self.state(tb, 0)[0], "running")
        self.assertEqual(tb.run(0, f"kill -0 {epid}")[0], 0, "the exec'd process must live on")
        self.assertTrue(self.output_changes(0, x), "the exec'd writer stopped")
        self.assert_counts_continuously(self.wait_for_count(tb, self.counts(tb)[-1] + 2))
        # crx checkpoint refuses the same way, before it writes anything.
        rc, out, err = tb.run(0, f"{CRX} checkpoint --image-path /tmp/img-refused c1", timeout=300)
        self.assertNotEqual(rc, 0)
        self.assertIn(f"{epid} (sh -c", err)
        self.assertIn("--kill-exec", err)
        self.assertEqual(tb.run(0, "test -e /tmp/img-refused")[0], 1, "images were written")
        self.assertEqual(self.state(tb, 0)[0], "running")
        self.assertIsNone(self.state(tb, 1)[0])
        # Accepted loss: the container moves, the exec'd process is reported
        # and dies with the source.
        rc, out, err = self.migrate(tb, "--kill-exec")
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err))
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
        self.assertEqual(rrc, 0, rerr)
        report = json.loads(out.strip().splitlines()[-1])
        self.assertTrue(any(p.startswith(f"{epid} (sh -c") for p in report.get("left_out", [])),
                        report)
        moved = [p["pid"] for p in report["inventory"]["processes"]]
        self.assertNotIn(epid, moved, "the inventory lists what moves")
        self.assertIsNone(self.state(tb, 0)[0])
        self.assertEqual(self.state(tb, 1)[0], "running")
        self.assertNotEqual(tb.run(0, f"kill -0 {epid}")[0], 0, "the exec'd process must be gone")
        self.assertFalse(self.output_changes(1, x), "nobody may write x after the move")
        self.assert_counts_continuously(self.wait_for_count(tb, self.counts(tb)[-1] + 2))

    def refused_up_front(self, expect, receiver_prefix=""):
        """crx migrate of the running c1 is refused by the receiver with the
        line `expect` before the source froze; c1 counts on, on g0 only, and
        nothing is left on g1."""
        tb = self.tb
        rh = self.start_receiver(tb, receiver_prefix)
        rc, out, err = self.migrate(tb)
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err), must_end=True)
        print("refused:", err, flush=True)
        self.assertNotEqual(rc, 0)
        self.assertNotEqual(rrc, 0)
        self.assertIn(expect, err)
        report = json.loads(out.strip().splitlines()[-1])
        self.assertEqual(report["outcome"], "rolled back")
        self.assertNotIn("freeze", [p["name"] for p in report["phases"]],
                         "refused before the source froze")
        self.assertEqual(self.state(tb, 0)[0], "running")
        self.assertIsNone(self.state(tb, 1)[0])
        self.assertEqual(self.sh(tb, 1, "ls /run/crx-migrate 2>/dev/null | wc -l").strip(), "0")
        self.assert_counts_continuously(self.wait_for_count(tb, self.counts(tb)[-1] + 2))

    def test_missing_bind_source_on_the_destination_is_refused_up_front(self):
        self.run_counter(self.tb)
        self.sh(self.tb, 1, "rmdir /tmp/extra-src")
        self.refused_up_front("bind mount /extra: /tmp/extra-src does not exist on the destination")

    def test_library_that_differs_on_the_destination_is_refused_up_front(self):
        """g1's /bin/busybox, the shell c1 runs, has another build-id (a
        byte of its note flipped, the size unchanged): CRIU's restore would
        fail on it after the freeze, so the receiver refuses before, naming
        the file (migrate/elf_files.hpp). With the file as the source's
        again, the move goes, and its final dump left the build-ids to the
        check before the freeze (build_ids_checked_ahead)."""
        tb = self.tb
        busybox = "/tmp/bundle/rootfs/bin/busybox"
        build_id = f"readelf -n {busybox} | sed -n 's/.*Build ID: //p'"
        source_id = self.sh(tb, 0, build_id).strip()
        self.assertRegex(source_id, "^[0-9a-f]{16,}$", "busybox has no build-id: this proves nothing")
        self.run_counter(tb)
        try:
            self.sh(tb, 1, "python3 -c \"import sys; p, i = sys.argv[1], bytes.fromhex(sys.argv[2]); "
                           "b = bytearray(open(p, 'rb').read()); at = b.find(i); assert at > 0; "
                           f"b[at] ^= 1; open(p, 'wb').write(b)\" {busybox} {source_id}")
            other_id = self.sh(tb, 1, build_id).strip()
            self.assertNotEqual(other_id, source_id)
            self.refused_up_front(f"file /bin/busybox, which the container maps or holds open, "
                                  f"differs on the destination (build-id {other_id} here, "
                                  f"{source_id} on the source)")
        finally:
            # A new inode: a running busybox would make the file busy.
            self.sh(tb, 1, f"cp {tb.scratch}/bundle/rootfs/bin/busybox {busybox}.new && "
                           f"mv -f {busybox}.new {busybox}")
        rh = self.start_receiver(tb)
        rc, out, err = self.migrate(tb)
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err))
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
        final = json.loads(out.strip().splitlines()[-1])["rounds"][-1]
        self.assertTrue(final.get("build_ids_checked_ahead"), final)
        self.assertEqual(self.state(tb, 1)[0], "running")
        self.assert_counts_continuously(self.wait_for_count(tb, self.counts(tb)[-1] + 2))

    def test_destination_with_an_older_kernel_is_refused_up_front(self):
        """The receiver under setarch --uname-2.6 reports a 2.6 kernel, older
        than the 6.1 one the source's images were written on."""
        self.run_counter(self.tb)
        self.refused_up_front("the destination's kernel 2.6.",
                              receiver_prefix="setarch $(uname -m) --uname-2.6 ")

    def test_device_the_destination_lacks_is_refused_up_front(self):
        """A container with a device node (char 240:77, of the range for
        local use, which no driver of the guests' kernel registers): the
        destination has no such device (/sys/dev/char/240:77), so the move
        is refused. The source never opens the node; it only has it."""
        tb = self.tb
        b = os.path.join(tb.scratch, "bundle-dev")
        if not os.path.exists(b):
            shutil.copytree(os.path.join(tb.scratch, "bundle"), b, symlinks=True)
            cfg = os.path.join(b, "config.json")
            with open(cfg) as f:
                spec = json.load(f)
            spec["linux"].setdefault("devices", []).append(
                {"path": "/dev/crx-local", "type": "c", "major": 240, "minor": 77,
                 "fileMode": 0o600, "uid": 0, "gid": 0})
            with open(cfg, "w") as f:
                json.dump(spec, f)
        for k in (0, 1):
            self.sh(tb, k, f"rm -rf /tmp/bundle-dev && cp -a {b} /tmp/bundle-dev")
        self.sh(tb, 0, f"{CRX} run -d -b /tmp/bundle-dev c1 </dev/null >/dev/null 2>&1", timeout=300)
        self.wait_for_count(tb, 3)
        self.refused_up_front("device /dev/crx-local (char 240:77) does not exist on the destination")

    def processes(self, k):
        """(pid, state, ppid) of every process in c1's pid namespace, as seen
        inside it (the exec'd reader included). The pipeline's `sleep 0.2`
        comes and goes: a pid gone between the glob and its read is skipped."""
        out = self.sh(self.tb, k, f"{CRX} exec c1 sh -c "
                                  "'for f in /proc/[0-9]*/stat; do cat $f 2>/dev/null; done; true'")
        procs = []
        for line in out.splitlines():
            if ")" not in line:
                continue
            rest = line[line.rindex(")") + 2:].split()
            procs.append((int(line.split()[0]), rest[0], int(rest[1])))
        return procs

    def test_pipeline_and_zombies_of_init_migrate_intact(self):
        tb = self.tb
        self.sh(tb, 0, f"{CRX} run -d -b /tmp/bundle-z c1 </dev/null >/dev/null 2>&1", timeout=300)
        self.wait_for_count(tb, 3)

        def shape(k):
            procs = self.processes(k)
            zombies = [p for p in procs if p[1] == "Z" and p[2] == 1]
            # init (1), the pipeline's three stages (children of init)
            stages = [p for p in procs if p[1] != "Z" and p[2] == 1]
            return len(zombies), len(stages)
        before = shape(0)
        self.assertEqual(before[0], 2, "init must have its two zombies")
        self.assertGreaterEqual(before[1], 3, "the pipeline's three stages")
        rh = self.start_receiver(tb)
        rc, out, err = self.migrate(tb)
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err))
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
        self.assertEqual(rrc, 0, rerr)
        self.assertEqual(self.state(tb, 1)[0], "running")
        self.assertEqual(shape(1), before, "zombies and pipeline stages as they were")
        self.assert_counts_continuously(self.wait_for_count(tb, self.counts(tb)[-1] + 2))

    def test_paused_container_arrives_paused_and_resumes(self):
        tb = self.tb
        self.run_counter(tb)
        self.sh(tb, 0, f"{CRX} pause c1")
        self.assertEqual(self.state(tb, 0)[0], "paused")
        rh = self.start_receiver(tb)
        rc, out, err = self.migrate(tb, "--pre-copy 1")
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err))
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
        self.assertEqual(rrc, 0, rerr)
        self.assertTrue(json.loads(out.strip().splitlines()[-1]).get("paused"), out)
        self.assertIsNone(self.state(tb, 0)[0])
        self.assertEqual(self.state(tb, 1)[0], "paused")
        self.assertEqual(self.cgroup_read(1, "cgroup.freeze"), "1")
        stopped = self.counts(tb)
        time.sleep(2)
        self.assertEqual(self.counts(tb), stopped, "a paused container counted on")
        self.sh(tb, 1, f"{CRX} resume c1")
        self.assertEqual(self.state(tb, 1)[0], "running")
        self.assert_counts_continuously(self.wait_for_count(tb, stopped[-1] + 2))

    def cgroup_dir(self, k):
        pid = json.loads(self.sh(self.tb, k, f"{CRX} state c1"))["pid"]
        line = self.sh(self.tb, k, f"cat /proc/{pid}/cgroup").strip().splitlines()
        v2 = [ln.split(":", 2)[2] for ln in line if ln.startswith("0::")]
        self.assertTrue(v2, f"the guests are expected to run cgroup v2: {line}")
        return v2[0]

    def cgroup_read(self, k, name):
        return self.sh(self.tb, k, f"cat /sys/fs/cgroup{self.cgroup_dir(k)}/{name}").strip()

    def container_view(self, k):
        st = json.loads(self.sh(self.tb, k, f"{CRX} state c1"))
        view = {"cgroup": self.cgroup_dir(k),
                "annotations": st.get("annotations"),
                "owner": st.get("owner"),
                "pid file": self.sh(self.tb, k, "cat /run/c1.pid").strip() == str(st["pid"])}
        for f in ("memory.max", "pids.max", "cpu.max", "cpu.weight"):
            view[f] = self.cgroup_read(k, f)
        return view

    def test_updated_resources_and_state_survive(self):
        tb = self.tb
        self.sh(tb, 0, f"{CRX} run -d --pid-file /run/c1.pid -b /tmp/bundle c1 "
                       "</dev/null >/dev/null 2>&1", timeout=300)
        self.wait_for_count(tb, 3)
        self.sh(tb, 0, f"{CRX} update --memory 96m --pids-limit 77 --cpu-quota 30000 "
                       "--cpu-period 100000 --cpu-shares 512 c1")
        before = self.container_view(0)
        init = json.loads(self.sh(tb, 0, f"{CRX} state c1"))["pid"]
        print("source:", before, flush=True)
        self.assertEqual(before["memory.max"], str(96 << 20))
        self.assertEqual(before["pids.max"], "77")
        self.assertEqual(before["cpu.max"], "30000 100000")
        self.assertEqual(before["annotations"]["io.crx.test"], "16")
        self.assertTrue(before["pid file"])
        hooks = f"cat {tb.scratch}/out/hooks.log"
        self.assertEqual(self.sh(tb, 0, hooks).split(), ["prestart", "createRuntime", "poststart"])
        rh = self.start_receiver(tb)
        rc, out, err = self.migrate(tb)
        rrc, rout, rerr = self.received(tb, rh, (rc, out, err))
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rout}\n{rerr}")
        self.assertEqual(rrc, 0, rerr)
        after = self.container_view(1)
        print("destination:", after, flush=True)
        # The manifest's inventory, as the report shows it.
        inv = json.loads(out.strip().splitlines()[-1])["inventory"]
        self.assertIn(init, [p["pid"] for p in inv["processes"]])
        self.assertEqual(sorted(m["destination"] for m in inv["bind_mounts"]), ["/extra", "/out"])
        self.assertGreater(inv["memory_bytes"], 0)
        self.assertEqual(after, before)
        self.assertEqual(self.state(tb, 1)[0], "running")
        # As runc restores: prestart and createRuntime again, not poststart.
        self.assertEqual(self.sh(tb, 1, hooks).split(),
                         ["prestart", "createRuntime", "poststart", "prestart", "createRuntime"])
        self.assert_counts_continuously(self.wait_for_count(tb, self.counts(tb)[-1] + 2))


class TcpMigrateTest(Base):
    """A counting container that holds an established TCP connection moves
    from g0 to g2 with --tcp-established; its peer runs on g1 outside any
    container (tcp_peer.py) and checks the stream both ways.

    Who does what: CRIU (driven by crx) moves the connection's state; crx
    closes the source's copy of the socket silently (tcp_hush.hpp) so the
    peer sees no FIN/RST; the container runs in the guest's network
    namespace, so the service address it is reached at belongs to the host,
    and moving that address is the network's job, done here by the test: the
    address leaves g0 before the move; g2 has it already (CRIU restores the
    socket bound and connected to it, which needs a local address) but drops
    what comes in for it until the move is done, so that nothing meets g2's
    kernel before the restored socket exists (it would answer with RST)."""
    guests = 3
    SERVICE_IP = "10.77.0.200"
    TCP_PORT = 9000

    def peer_status(self, tb):
        out = self.sh(tb, 1, f"cat {tb.scratch}/peer.json 2>/dev/null || echo null")
        return json.loads(out) or {}

    def wait_peer(self, tb, what, cond, timeout=300):
        def reached():
            st = self.peer_status(tb)
            return st if st and cond(st) else None
        return wait_until(reached, timeout, lambda: f"the peer: {what}: {self.peer_status(tb)}")

    def pings_received(self, tb):
        out = self.sh(tb, 0, f"cat {tb.scratch}/out/from_peer.log 2>/dev/null || true")
        return out.splitlines()

    def test_counter_with_established_tcp_moves_to_guest_2(self):
        tb = self.tb
        script = (f"{COUNTER.replace('>> /out/count.log;', '>> /out/count.log; echo $i;')}"
                  f" | nc -l -p {self.TCP_PORT} > /out/from_peer.log")
        b = make_bundle(tb.scratch, name="bundle-tcp", script=script, own_netns=False)
        for k in (0, 2):
            self.setup_guest(tb, k, b)
        self.sh(tb, 0, f"ip addr add {self.SERVICE_IP}/32 dev eth0")
        self.run_counter(tb)
        peer = tb.spawn(1, f"python3 {os.path.dirname(os.path.abspath(__file__))}/tcp_peer.py "
                           f"{self.SERVICE_IP} {self.TCP_PORT} {tb.scratch}/peer.json "
                           f"{tb.scratch}/peer.stop")
        before = self.wait_peer(tb, "no numbers before the move", lambda s: s["numbers"] > 5)
        rh = tb.spawn(2, f"{CRX} receive --listen 0.0.0.0:{PORT} --key /tmp/key --once "
                         f"--image-dir /run/crx-migrate > /tmp/receiver.log 2>&1")
        wait_listening(tb, 2, PORT, "crx receive", rh)
        # The network takes the address away from g0 for the move; g2 has it
        # from now on but drops what comes in for it until the move is done.
        self.sh(tb, 0, f"ip addr del {self.SERVICE_IP}/32 dev eth0")
        hold = f"INPUT -d {self.SERVICE_IP} -j DROP"
        self.sh(tb, 2, f"ip addr add {self.SERVICE_IP}/32 dev eth0 && iptables -w -I {hold}")
        rc, out, err = tb.run(0, f"{CRX} migrate c1 --to {tb.ip(2)}:{PORT} --key /tmp/key "
                                 "--tcp-established --format json", timeout=900)
        rrc, _, _ = self.received(tb, rh, (rc, out, err), k=2, log="/tmp/receiver.log")
        rlog = self.sh(tb, 2, "cat /tmp/receiver.log")
        self.assertEqual(rc, 0, f"migrate failed:\n{out}\n{err}\nreceiver:\n{rlog}")
        self.assertEqual(rrc, 0, rlog)
        # ... and lets it through on g2; g1 forgets where it was.
        self.sh(tb, 2, f"iptables -w -D {hold}")
        self.sh(tb, 1, f"ip neigh flush to {self.SERVICE_IP}")
        self.assertIsNone(self.state(tb, 0)[0])
        self.assertEqual(self.state(tb, 2)[0], "running")
        moved_at = self.peer_status(tb)
        pings_then = moved_at["pings_sent"]
        after = self.wait_peer(tb, "the stream did not go on after the move",
                               lambda s: s["numbers"] > moved_at["numbers"] + 10 or s["closed"])
        wait_until(lambda: len(self.pings_received(tb)) >= pings_then + 4, 120,
                   lambda: f"pings sent after the move to reach the container: "
                           f"{self.pings_received(tb)[-5:]}")
        # The counter went on where it stopped (checked while the peer is
        # still there: when it hangs up, nc ends and so does the pipeline).
        c = self.counts(tb)
        self.assert_counts_continuously(self.wait_for_count(tb, c[-1] + 2))
        self.sh(tb, 1, f"touch {tb.scratch}/peer.stop")
        prc, pout, perr = tb.wait(peer, timeout=120)
        final = json.loads(pout.strip().splitlines()[-1])
        print("peer before:", before, "\nafter:", after, "\nfinal:", final, flush=True)
        self.assertIsNone(final["closed"], "the connection must survive the move")
        self.assertEqual(final["errors"], [], "the counter stream had gaps or repeats")
        self.assertGreater(final["numbers"], moved_at["numbers"] + 10)
        pings = self.pings_received(tb)
        self.assertEqual(pings, [f"ping {n}" for n in range(len(pings))],
                         "the container must get every ping once, in order")
        self.assertGreaterEqual(len(pings), pings_then + 4,
                                "pings sent after the move must reach the container")
        self.sh(tb, 2, f"{CRX} kill c1 KILL 2>/dev/null; sleep 1; {CRX} delete c1", timeout=120)


if __name__ == "__main__":
    main()
