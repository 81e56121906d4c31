#!/usr/bin/python3
"""crx checkpoint / crx restore in one guest, one test per runc flag.

All tests share one guest (a boot costs ~15 s under TCG); each test uses its
own container id, bundle (/tmp/b/<id>, a busybox rootfs) and images dir, and
removes its container at the end. Every test is built so that it fails when
the flag has no effect: the container holds what CRIU refuses to dump without
the flag, or the test looks at where the flag sends things.

The containers count: `echo $i >> /out/count.log` every 0.2 s, /out being a
bind mount (a CRIU external mount) of /tmp/b/<id>/out in the guest."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.environ.get("CRX_VM_DIR", os.path.join(os.path.dirname(__file__), "..")))
from vmtest import (VmTestCase, boot_shared, loopback_tcp_cmd, main, wait_for_count,  # noqa: E402
                    wait_listening, wait_until)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("CRX_BUILD_DIR", os.path.join(ROOT, "build"))
CRX = os.path.join(BUILD, "crx")

COUNTER = "i=0; while :; do echo $i >> /out/count.log; i=$((i+1)); sleep 0.2; done"
QUIET = "exec </dev/null >/dev/null 2>&1; "

# Programs the guest runs (with the host's python3), next to this file.
HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoint_flags")


class CheckpointFlagsTest(VmTestCase):
    tb = None

    @classmethod
    def setUpClass(cls):
        cls.tb = boot_shared(1, cls.prepare, rxe=False)

    @classmethod
    def prepare(cls, tb):
        s = tb.scratch
        os.makedirs(os.path.join(s, "rootfs"), exist_ok=True)
        subprocess.run([os.path.join(ROOT, "bundles", "busybox", "make-rootfs.sh"),
                        os.path.join(s, "rootfs")], check=True)
        subprocess.run([CRX, "spec", "--bundle", s], check=True)
        with open(os.path.join(s, "config.json")) as f:
            cls.base_spec = json.load(f)
        subprocess.run(["cc", "-static", "-O2", "-o", os.path.join(s, "usk_client"),
                        os.path.join(HELPERS, "usk_client.c")], check=True)

    @classmethod
    def tearDownClass(cls):
        if cls.tb:
            cls.tb.close()

    # ---- helpers -----------------------------------------------------------

    def g(self, cmd, timeout=300):
        """Runs cmd in the guest; fails the test unless it exits 0."""
        return self.sh(self.tb, 0, cmd, timeout=timeout)

    def try_g(self, cmd, timeout=300):
        return self.tb.run(0, cmd, timeout=timeout)

    def bundle(self, cid, script, terminal=False, netns=True, with_flock=False, binds=()):
        """A busybox bundle at /tmp/b/<cid> running `sh -c script`, with /out
        and each guest dir of binds at the same path."""
        spec = json.loads(json.dumps(self.base_spec))
        spec["process"]["terminal"] = terminal
        spec["process"]["args"] = ["sh", "-c", script]
        spec["root"] = {"path": "rootfs", "readonly": False}
        if not netns:
            spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"]
                                           if n["type"] != "network"]
        b = f"/tmp/b/{cid}"
        spec["mounts"].append({"destination": "/out", "type": "bind", "source": f"{b}/out",
                               "options": ["rbind", "rw"]})
        for d in binds:
            spec["mounts"].append({"destination": d, "type": "bind", "source": d,
                                   "options": ["rbind", "rw"]})
        host_cfg = os.path.join(self.tb.scratch, f"{cid}.json")
        with open(host_cfg, "w") as f:
            json.dump(spec, f, indent=2)
        self.g(f"rm -rf {b} && mkdir -p {b}/out && cp -a {self.tb.scratch}/rootfs {b}/rootfs "
               f"&& cp {host_cfg} {b}/config.json")
        if with_flock:
            # util-linux's flock and the libraries it needs (busybox has none).
            self.g(f"cp /usr/bin/flock {b}/rootfs/bin/flock && "
                   f"for l in $(ldd /usr/bin/flock | grep -o '/[^ ]*'); do "
                   f"mkdir -p {b}/rootfs$(dirname $l) && cp -L $l {b}/rootfs$l; done")
        self.addCleanup(self.remove, cid)
        return b

    def remove(self, cid):
        self.try_g(f"{CRX} kill {cid} KILL >/dev/null 2>&1; sleep 0.5; "
                   f"{CRX} delete -f {cid} >/dev/null 2>&1", timeout=120)

    def run_container(self, cid, extra=""):
        self.g(f"{CRX} run -d {extra} -b /tmp/b/{cid} {cid} </dev/null >/dev/null 2>&1")

    def counts(self, cid):
        out = self.g(f"cat /tmp/b/{cid}/out/count.log 2>/dev/null || true")
        return [int(x) for x in out.split()]

    def wait_for_count(self, cid, above):
        return wait_for_count(lambda: self.counts(cid), above)

    def assert_counts_continuously(self, c):
        self.assertEqual(c, list(range(len(c))),
                         "the count must go on from where it stopped, without gaps or restart")

    def state(self, cid):
        rc, out, err = self.try_g(f"{CRX} state {cid}")
        return json.loads(out) if rc == 0 else None

    def status(self, cid):
        st = self.state(cid)
        return st["status"] if st else None

    def checkpoint(self, cid, args, check=True):
        cmd = f"{CRX} checkpoint {args} {cid}"
        return self.g(cmd) if check else self.try_g(cmd)

    def restore(self, cid, args, check=True):
        cmd = f"{CRX} restore {args} -b /tmp/b/{cid} {cid}"
        return self.g(cmd) if check else self.try_g(cmd)

    def assert_counts_on(self, cid, stopped):
        """The container counts on from where `stopped` (its counts when it
        was dumped) ended: no gap, no repeat."""
        self.assert_counts_continuously(self.wait_for_count(cid, stopped[-1] + 2))

    def assert_connection_carried_on(self, cid, b, stopped, peer):
        """The restored container counts on through the one TCP connection
        the peer (echo_peer.py, logging to <b>/peer.log) accepted; then the
        container goes and the peer ends."""
        self.assert_counts_continuously(self.wait_for_count(cid, stopped[-1] + 3))
        sent = [int(x) for x in self.g(f"cat {b}/peer.log").split()]
        self.assert_counts_continuously(sent)
        self.remove(cid)
        self.tb.wait(peer, timeout=60)

    def assert_fails_naming(self, rc_out_err, *words):
        rc, out, err = rc_out_err
        self.assertNotEqual(rc, 0, f"expected a failure, got:\n{out}\n{err}")
        for w in words:
            self.assertIn(w, err)
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        self.assertEqual(len(lines), 1, f"one clear line expected, got:\n{err}")

    def files(self, d):
        return set(self.g(f"ls -A {d} 2>/dev/null || true").split())

    def assert_nothing_left(self, cid):
        self.assertIsNone(self.state(cid))
        self.assertEqual(self.g(f"ls /run/crx/{cid} 2>&1 >/dev/null | wc -l; "
                                f"find /sys/fs/cgroup -name '*{cid}*' | wc -l").split(),
                         ["1", "0"], "a state dir or cgroup was left behind")

    # ---- checkpoint flags --------------------------------------------------

    def test_image_path_and_work_path(self):
        cid = "paths"
        self.bundle(cid, QUIET + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.checkpoint(cid, "--image-path /tmp/paths/img --work-path /tmp/paths/work")
        self.assertIsNone(self.state(cid), "checkpoint without --leave-running removes it")
        img, work = self.files("/tmp/paths/img"), self.files("/tmp/paths/work")
        self.assertIn("dump.log", work)
        self.assertNotIn("dump.log", img)
        self.assertIn("inventory.img", img)
        self.assertTrue(any(f.startswith("pages-") for f in img), img)
        stopped = self.counts(cid)
        self.restore(cid, "-d --image-path /tmp/paths/img --work-path /tmp/paths/work2")
        self.assertIn("restore.log", self.files("/tmp/paths/work2"))
        self.assertNotIn("restore.log", self.files("/tmp/paths/img"))
        # CRIU loads crx's verbs plugin for a checkpoint, but a restore of
        # images without verbs contexts goes without (it costs 0.15 s).
        plugin = 'Plugin "crx_ibverbs"'
        self.assertIn(plugin, self.g("cat /tmp/paths/work/dump.log"))
        self.assertNotIn(plugin, self.g("cat /tmp/paths/work2/restore.log"))
        self.assertEqual(self.status(cid), "running")
        self.assert_counts_on(cid, stopped)

    def test_leave_running(self):
        cid = "leave"
        self.bundle(cid, QUIET + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.checkpoint(cid, "--leave-running --image-path /tmp/leave")
        self.assertEqual(self.status(cid), "running")
        at_dump = self.counts(cid)[-1]
        self.wait_for_count(cid, at_dump + 3)
        # The images are complete: replace the running container by them and
        # the count goes back to where the dump was taken.
        self.remove(cid)
        before = self.counts(cid)
        self.restore(cid, "-d --image-path /tmp/leave")
        after = self.wait_for_count(cid, 0)
        wait_until(lambda: len(self.counts(cid)) > len(before) + 1,
                   180, "the restored container to write")
        resumed = self.counts(cid)[len(before)]
        self.assertLessEqual(resumed, at_dump + 2, "restored from the dump, not a new start")
        self.assertGreater(resumed, 0)
        del after

    def test_tcp_established(self):
        """An established TCP connection to a peer outside the container (same
        guest, the container in the guest's network namespace) survives."""
        cid, port = "tcp", 7101
        b = self.bundle(cid, QUIET + f"{COUNTER.replace('>> /out/count.log', '')} | "
                             f"nc 127.0.0.1 {port} >> /out/count.log", netns=False)
        peer = self.tb.spawn(0, f"python3 {HELPERS}/echo_peer.py {port} {b}/peer.log")
        wait_listening(self.tb, 0, port, "the peer", timeout=180)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.assert_fails_naming(
            self.checkpoint(cid, "--image-path /tmp/tcp0", check=False), "tcp-established")
        self.assertEqual(self.status(cid), "running", "a failed checkpoint resumes the container")
        self.checkpoint(cid, "--tcp-established --image-path /tmp/tcp")
        stopped = self.counts(cid)
        self.restore(cid, "-d --tcp-established --image-path /tmp/tcp")
        # The numbers come back through the one connection the peer accepted.
        self.assert_connection_carried_on(cid, b, stopped, peer)

    def netns_by_path(self, ns, subnet):
        """A network namespace at /var/run/netns/<ns> as CNI makes one: a veth
        to the guest, <subnet>.1 on the guest's end, <subnet>.2 inside."""
        self.g(f"ip netns del {ns} 2>/dev/null; ip link del vh{ns} 2>/dev/null; ip netns add {ns} && "
               f"ip link add vh{ns} type veth peer name eth0 netns {ns} && "
               f"ip addr add {subnet}.1/24 dev vh{ns} && ip link set vh{ns} up && "
               f"ip -n {ns} addr add {subnet}.2/24 dev eth0 && ip -n {ns} link set eth0 up && "
               f"ip -n {ns} link set lo up")
        self.addCleanup(self.try_g, f"ip netns del {ns}; ip link del vh{ns} 2>/dev/null")

    def join_netns_by_path(self, cid, b, ns):
        with open(os.path.join(self.tb.scratch, f"{cid}.json")) as f:
            spec = json.load(f)
        for n in spec["linux"]["namespaces"]:
            if n["type"] == "network":
                n["path"] = f"/var/run/netns/{ns}"
        with open(os.path.join(self.tb.scratch, f"{cid}.json"), "w") as f:
            json.dump(spec, f, indent=2)
        self.g(f"cp {self.tb.scratch}/{cid}.json {b}/config.json")

    def assert_in_netns(self, cid, ns):
        self.assertEqual(self.g(f"readlink /proc/{self.state(cid)['pid']}/ns/net"),
                         self.g(f"ip netns exec {ns} readlink /proc/self/ns/net"),
                         "the restored container is in the namespace config.json names")

    def test_network_namespace_joined_by_path(self):
        """Without TCP connections: checkpoint and restore of a container in
        a namespace made outside leave that namespace as it was (no lock
        left in it, traffic flows) and say nothing on stderr."""
        cid, ns = "joinns", "crxjoinns"
        self.netns_by_path(ns, "10.79.0")
        b = self.bundle(cid, QUIET + COUNTER)
        self.join_netns_by_path(cid, b, ns)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        rc, out, err = self.checkpoint(cid, "--image-path /tmp/joinns", check=False)
        self.assertEqual((rc, err), (0, ""), out)
        stopped = self.counts(cid)
        rc, out, err = self.restore(cid, "-d --image-path /tmp/joinns", check=False)
        self.assertEqual((rc, err), (0, ""), out)
        self.assert_in_netns(cid, ns)
        self.assert_counts_on(cid, stopped)
        # traffic flows (no lock left): a closed port answers with a refusal, not silence
        self.g(f"ip netns exec {ns} python3 -c \"import socket; socket.create_connection(('10.79.0.1', 9), 5)\" "
               f"2>&1 | grep -q refused")

    def separate_guest_tcp_established_in_a_network_namespace_joined_by_path(self):
        """The container joins a network namespace made outside (as CNI does:
        /var/run/netns/<name>, a veth to the guest) and holds a TCP
        connection to a peer in the guest: the dump marks the namespace
        external, the restore joins the one config.json names, and the
        connection survives. Without that CRIU dumps the namespace's veth and
        the checkpoint fails.

        Run in a guest of its own (ctest vm_checkpoint_tcp_joined_netns; not
        a test_ method, so the shared-guest run skips it): after the other
        tests of this class its container's first connect to the peer never
        got through (no iptables rule, listener up, route fine; cause not
        found yet), alone or after test_tcp_established it passes."""
        cid, port, ns = "tcpns", 7102, "crxtcpns"
        self.netns_by_path(ns, "10.78.0")
        b = self.bundle(cid, QUIET + f"{COUNTER.replace('>> /out/count.log', '')} | "
                             f"nc 10.78.0.1 {port} >> /out/count.log")
        self.join_netns_by_path(cid, b, ns)
        peer = self.tb.spawn(0, f"python3 {HELPERS}/echo_peer.py {port} {b}/peer.log 10.78.0.1")
        wait_listening(self.tb, 0, port, "the peer", timeout=180)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.checkpoint(cid, "--tcp-established --image-path /tmp/tcpns")
        stopped = self.counts(cid)
        self.restore(cid, "-d --tcp-established --image-path /tmp/tcpns")
        self.assert_in_netns(cid, ns)
        self.assert_connection_carried_on(cid, b, stopped, peer)

    def test_file_locks(self):
        cid = "locks"
        b = self.bundle(cid, QUIET + "exec 9>>/out/lock; flock -x 9; " + COUNTER,
                        with_flock=True)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        held = f"flock -n {b}/out/lock true"
        self.assertNotEqual(self.try_g(held)[0], 0, "the container holds the lock")
        self.assert_fails_naming(
            self.checkpoint(cid, "--image-path /tmp/locks0", check=False), "file-locks")
        self.checkpoint(cid, "--file-locks --image-path /tmp/locks")
        self.assertEqual(self.try_g(held)[0], 0, "the lock is free while the container is gone")
        stopped = self.counts(cid)
        self.restore(cid, "-d --file-locks --image-path /tmp/locks")
        self.assertNotEqual(self.try_g(held)[0], 0, "the restored container holds the lock again")
        self.assert_counts_on(cid, stopped)

    def usk_container(self, cid, kind):
        """A container whose only job is a unix socket of kind connected to a
        peer in the guest, outside the container: the peer binds
        /tmp/usk-<cid>/peer.sock, a dir bound into the container at the same
        path (CRIU reconnects an external peer by the name it was bound to).
        In the guest's network namespace: CRIU finds a socket's peer through
        sock_diag of the namespaces it dumps (a network namespace of the
        container's own was not tried)."""
        d = f"/tmp/usk-{cid}"
        b = self.bundle(cid, QUIET + f"exec /bin/usk_client {kind} {d}/peer.sock",
                        netns=False, binds=(d,))
        self.g(f"rm -rf {d} && mkdir -p {d} && cp {self.tb.scratch}/usk_client {b}/rootfs/bin/")
        peer = self.tb.spawn(0, f"python3 {HELPERS}/usk_peer.py {kind} {d}/peer.sock "
                                f"{b}/peer.log")
        wait_until(lambda: self.try_g(f"test -S {d}/peer.sock")[0] == 0, 180, "the peer to bind")
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.assert_fails_naming(
            self.checkpoint(cid, f"--image-path /tmp/{cid}0", check=False), "ext-unix-sk")
        self.assertEqual(self.status(cid), "running", "a failed checkpoint resumes the container")
        self.wait_for_count(cid, self.counts(cid)[-1] + 2)
        return b, peer

    def assert_migrate_refused(self, cid, flags, *words):
        """crx migrate refuses before it freezes anything or connects (no
        receiver listens on port 9): one line naming the socket."""
        self.g("printf %s 0123456789abcdef0123456789abcdef > /tmp/mkey && chmod 600 /tmp/mkey")
        self.assert_fails_naming(
            self.try_g(f"{CRX} migrate {cid} --to 127.0.0.1:9 --key /tmp/mkey {flags}"),
            "unix sockets connected to processes outside it", *words)
        self.assertEqual(self.status(cid), "running")
        self.assert_counts_continuously(self.wait_for_count(cid, self.counts(cid)[-1] + 2))

    def test_ext_unix_sk_dgram(self):
        """A datagram socket connected to a bound socket outside (syslog's
        /dev/log is the usual one): --ext-unix-sk dumps it, and on restore
        CRIU connects it to the peer's name again (the peer must be there).
        Restored with --ext-unix-sk as runc users do; CRIU 3.17.1 also
        restores these images without it (seen once, not asserted: the
        dump is where the flag matters)."""
        cid = "uskd"
        b, peer = self.usk_container(cid, "dgram")
        # crx migrate says so up front, naming the way out
        self.assert_migrate_refused(cid, "", "(datagram", "--ext-unix-sk")
        self.checkpoint(cid, "--ext-unix-sk --image-path /tmp/uskd")
        stopped = self.counts(cid)
        self.restore(cid, "-d --ext-unix-sk --image-path /tmp/uskd")
        self.assert_counts_continuously(self.wait_for_count(cid, stopped[-1] + 3))
        self.assertEqual(self.g(f"cat {b}/out/err.log 2>/dev/null || true"), "")
        # Every number went through the restored socket to the same peer.
        received = [int(x) for x in self.g(f"cat {b}/peer.log").split()]
        self.assert_counts_continuously(received)
        self.assertGreater(received[-1], stopped[-1], "nothing arrived after the restore")
        self.remove(cid)
        self.tb.kill(peer)

    def test_ext_unix_sk_stream(self):
        """A stream socket connected to a listener outside. Debian's CRIU
        3.17.1 dumps only datagram sockets with --ext-unix-sk; for a stream
        it stops with "Can't dump half of stream unix connection" (its
        sk-unix.c: the outside half cannot be put back). The failed
        checkpoint leaves the container running, its connection intact."""
        cid = "usks"
        b, peer = self.usk_container(cid, "stream")
        # crx migrate refuses it up front, --ext-unix-sk or not (issue 16)
        self.assert_migrate_refused(cid, "--ext-unix-sk", "(stream")
        self.assert_fails_naming(
            self.checkpoint(cid, "--ext-unix-sk --image-path /tmp/usks", check=False),
            "Can't dump half of stream unix connection")
        self.assertEqual(self.status(cid), "running", "a failed checkpoint resumes the container")
        self.assert_counts_continuously(self.wait_for_count(cid, self.counts(cid)[-1] + 2))
        self.assertEqual(self.g(f"cat {b}/out/err.log 2>/dev/null || true"), "")
        sent = self.counts(cid)
        wait_until(lambda: len(self.g(f"cat {b}/peer.log").split()) >= len(sent),
                   180, "the peer to receive what was sent before")
        self.assert_counts_continuously([int(x) for x in self.g(f"cat {b}/peer.log").split()])
        self.remove(cid)
        self.tb.kill(peer)

    def test_page_server(self):
        cid, port = "pages", 7102
        self.bundle(cid, QUIET + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.g("mkdir -p /tmp/ps-pages")
        server = self.tb.spawn(0, f"criu page-server -D /tmp/ps-pages --port {port} "
                                  "-o /tmp/ps-pages/page-server.log -v4")
        wait_listening(self.tb, 0, port, "the page server", timeout=180)
        self.checkpoint(cid, f"--page-server 127.0.0.1:{port} --image-path /tmp/ps-img")
        rc, out, err = self.tb.wait(server, timeout=120)
        self.assertEqual(rc, 0, err)
        served = self.files("/tmp/ps-pages")
        self.assertTrue(any(f.startswith("pages-") for f in served), served)
        self.assertFalse(any(f.startswith("pages-") for f in self.files("/tmp/ps-img")),
                         "the pages went to the page server, not the images dir")
        # Pages and the rest together restore the container.
        stopped = self.counts(cid)
        self.g("cp /tmp/ps-pages/pages-*.img /tmp/ps-pages/pagemap-*.img /tmp/ps-img/ 2>/dev/null;"
               " cp -n /tmp/ps-pages/*.img /tmp/ps-img/")
        self.restore(cid, "-d --image-path /tmp/ps-img")
        self.assert_counts_on(cid, stopped)

    def test_lazy_pages_with_status_fd(self):
        """checkpoint --lazy-pages keeps the memory in a page server of its own
        and writes a byte to --status-fd once that server is ready; `criu
        lazy-pages` feeds the restored container from it on demand."""
        cid, port = "lazy", 7103
        self.bundle(cid, QUIET + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.g("mkdir -p /tmp/lazy && : > /tmp/lazy-status")
        dump = self.tb.spawn(0, f"{CRX} checkpoint --lazy-pages --page-server 127.0.0.1:{port} "
                                f"--status-fd 3 --image-path /tmp/lazy {cid} 3>/tmp/lazy-status")
        wait_until(lambda: self.g("stat -c %s /tmp/lazy-status").strip() == "1",
                   180, "the status byte")
        self.assertEqual(self.g("od -An -tx1 /tmp/lazy-status").strip(), "00")
        stopped = self.counts(cid)
        lazy = self.tb.spawn(0, f"criu lazy-pages --page-server --address 127.0.0.1 "
                                f"--port {port} -D /tmp/lazy -o lazy-pages.log -v4")
        wait_until(lambda: self.try_g("test -S /tmp/lazy/lazy-pages.socket")[0] == 0,
                   180, "the lazy-pages socket")
        # Under another id: the checkpointed container's state stays until
        # its page server is done (then crx removes it, as after any dump).
        self.addCleanup(self.remove, "lazy-r")
        self.g(f"{CRX} restore -d --lazy-pages --image-path /tmp/lazy -b /tmp/b/{cid} lazy-r")
        try:
            self.assert_counts_on(cid, stopped)
        except AssertionError as e:
            raise AssertionError(f"{e}\n--- what the guest shows:\n" + self.try_g(
                f"ls -l /tmp/lazy; for f in /tmp/lazy/*.log; do echo == $f; tail -n 15 $f; done; "
                f"{CRX} list; ps -eo pid,stat,wchan:20,args | grep -v ' \\[' ; "
                f"tail -n 3 /tmp/b/{cid}/out/count.log; echo == cgroups in restore.log; "
                "grep -i cg /tmp/lazy/restore.log | tail -n 25",
                timeout=120)[1]) from None
        st = self.state("lazy-r")
        cg = self.g(f"cat /proc/{st['pid']}/cgroup") if st and st["pid"] else "?"
        rc, out, err = self.tb.wait(dump, timeout=300)
        self.assertEqual(rc, 0, f"the lazy checkpoint ends once its pages are served\n{err}")
        self.tb.wait(lazy, timeout=120)
        # Removing the checkpointed container must not touch the restored one.
        time.sleep(2)
        self.assertEqual(self.status("lazy-r"), "running",
                         f"the restored container died when the dump ended; its cgroup: {cg}")

    def test_auto_dedup(self):
        cid = "dedup"
        self.bundle(cid, QUIET + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.checkpoint(cid, "--pre-dump --image-path /tmp/dedup/1")
        used = "du -B1 /tmp/dedup/1/pages-1.img | cut -f1"
        before = int(self.g(used))
        self.assertGreater(before, 0)
        # A single pre-dump: CRIU does not wait for (and miss) a next request.
        self.assertNotIn("Can't recv request", self.g("cat /tmp/dedup/1/pre-dump.log"))
        self.checkpoint(cid, "--leave-running --parent-path ../1 --auto-dedup "
                             "--image-path /tmp/dedup/2")
        after = int(self.g(used))
        # Pages the final dump found unchanged are punched out of the parent.
        self.assertLess(after, before, "--auto-dedup freed no block of the parent's pages")

    def test_manage_cgroups_mode(self):
        cid = "cgmode"
        self.bundle(cid, QUIET + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        for mode in ("soft", "full", "strict", "ignore"):
            self.checkpoint(cid, f"--leave-running --manage-cgroups-mode {mode} "
                                 f"--image-path /tmp/cg-{mode}")
            self.assertIn("inventory.img", self.files(f"/tmp/cg-{mode}"))
        self.assert_fails_naming(
            self.checkpoint(cid, "--manage-cgroups-mode sometimes --image-path /tmp/cg-x",
                            check=False), "sometimes", "soft")
        self.assertEqual(self.status(cid), "running")
        # The mode reaches CRIU on restore as well.
        self.remove(cid)
        self.restore(cid, "-d --manage-cgroups-mode ignore --image-path /tmp/cg-ignore")
        self.assertEqual(self.status(cid), "running")

    def test_empty_ns_network(self):
        cid = "emptyns"
        self.bundle(cid, QUIET + "ip link set lo up; " + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        def netdev_images(d):
            return [f for f in self.files(d) if f.startswith("netdev-")]
        self.checkpoint(cid, "--leave-running --image-path /tmp/emptyns0")
        self.assertTrue(netdev_images("/tmp/emptyns0"), "a plain dump saves the network ns")
        self.checkpoint(cid, "--empty-ns network --image-path /tmp/emptyns")
        self.assertEqual(netdev_images("/tmp/emptyns"), [],
                         "--empty-ns network: the namespace's content was dumped")
        stopped = self.counts(cid)
        self.restore(cid, "-d --image-path /tmp/emptyns")
        self.assertEqual(self.status(cid), "running")
        self.assert_counts_on(cid, stopped)

    def netns_run(self, cid, cmd):
        return self.try_g(f"nsenter -t {self.state(cid)['pid']} -n {cmd}")

    def test_own_network_namespace_carries_traffic_after_restore(self):
        """A container in a network namespace of its own (the default
        spec's), dumped with it: CRIU's nftables lock is in the dumped
        ruleset under the old pid's name, and its unlock on restore looks
        for the new pid's, so the restored namespace dropped every packet,
        loopback too (nft_lock_tables.hpp). Tried from the guest inside the
        namespace: TCP over lo, and a rule of the container's own kept."""
        cid = "ownnet"
        self.bundle(cid, QUIET + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        rule = "-A INPUT -p tcp -m tcp --dport 9 -j DROP"
        self.assertEqual(self.netns_run(cid, f"iptables {rule}")[0], 0)
        self.assertEqual(self.g(loopback_tcp_cmd(self.state(cid)["pid"])).strip(), "ok",
                         "loopback before the dump")
        self.checkpoint(cid, "--image-path /tmp/ownnet")
        self.assertIn("CRIU-", self.g("cat /tmp/ownnet/nftables-*.img"),
                      "the premise: CRIU's lock table is in the ruleset image")
        stopped = self.counts(cid)
        self.restore(cid, "-d --image-path /tmp/ownnet")
        self.assert_counts_on(cid, stopped)
        rc, out, err = self.try_g(loopback_tcp_cmd(self.state(cid)["pid"]))
        self.assertEqual((rc, out.strip()), (0, "ok"), f"loopback after the restore: {err}")
        rules = self.netns_run(cid, "iptables -S INPUT")[1]
        self.assertEqual(rules.count(rule), 1, f"the container's own rule, once:\n{rules}")
        self.assertNotIn("CRIU", self.netns_run(cid, "iptables -S")[1])

    # ---- restore flags -----------------------------------------------------

    def test_restore_pid_file_bundle_no_subreaper_foreground(self):
        cid = "fg"
        self.bundle(cid, QUIET + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.checkpoint(cid, "--image-path /tmp/fg")
        stopped = self.counts(cid)
        # Not detached: crx restore waits for the container and returns its
        # status. From another cwd, so only --bundle names the bundle.
        h = self.tb.spawn(0, f"cd /tmp && {CRX} restore --no-subreaper --pid-file /tmp/fg.pid "
                             f"--image-path /tmp/fg --bundle /tmp/b/{cid} {cid}")
        wait_until(lambda: self.status(cid) == "running", 180, "the restored container")
        self.assertEqual(int(self.g("cat /tmp/fg.pid")), self.state(cid)["pid"])
        self.assertEqual(self.state(cid)["bundle"], f"/tmp/b/{cid}")
        self.assert_counts_on(cid, stopped)
        self.g(f"{CRX} kill {cid} KILL")
        rc, out, err = self.tb.wait(h, timeout=120)
        self.assertEqual(rc, 137, f"crx restore returns the container's status\n{err}")

    def until_answered(self, b, name, words, answer, what):
        """Has console_peer.py (files <b>/<name>.cmd|.out) send `echo words`
        to the shell until its output shows answer. Input written to the
        master while the slave's termios are being set can be flushed with
        it: by CRIU restoring them (seen once, in a full run under load),
        or by the container's own `stty -echo` at its start (seen once, on
        2026-11-28, the same way). So the command goes again each 2 s."""
        polls = [0]

        def answered():
            if answer in self.g(f"cat {b}/{name}.out"):
                return True
            if polls[0] % 4 == 0:
                self.g(f"[ -e {b}/{name}.cmd ] || echo 'echo {words}' > {b}/{name}.cmd")
            polls[0] += 1
            return False
        wait_until(answered, 180, what)

    def test_restore_console_socket(self):
        cid = "console"
        b = self.bundle(cid, "stty -echo; i=0; while :; do i=$((i+1)); sleep 0.2; done & "
                             "exec sh", terminal=True)
        peer = f"python3 {HELPERS}/console_peer.py"
        p1 = self.tb.spawn(0, f"{peer} {b}/c1.sock {b}/c1.cmd {b}/c1.out")
        wait_until(lambda: self.try_g(f"test -S {b}/c1.sock")[0] == 0, 180, "the console socket")
        self.run_container(cid, f"--console-socket {b}/c1.sock")
        self.until_answered(b, "c1", "one-$((40+2))", "one-42", "the shell's answer")
        # crx checkpoint + restore hand the console over; a migration cannot
        # (nobody at the other end): refused before anything froze
        self.g("printf %s 0123456789abcdef0123456789abcdef > /tmp/mkey && chmod 600 /tmp/mkey")
        self.assert_fails_naming(
            self.try_g(f"{CRX} migrate {cid} --to 127.0.0.1:9 --key /tmp/mkey"),
            "has a terminal (process.terminal)")
        self.assertEqual(self.status(cid), "running")
        self.checkpoint(cid, "--image-path /tmp/console")
        self.tb.wait(p1, timeout=60)  # the pty's slave side is gone
        p2 = self.tb.spawn(0, f"{peer} {b}/c2.sock {b}/c2.cmd {b}/c2.out")
        wait_until(lambda: self.try_g(f"test -S {b}/c2.sock")[0] == 0, 180, "the console socket")
        self.restore(cid, f"-d --console-socket {b}/c2.sock --image-path /tmp/console")
        wait_until(lambda: "[pty " in self.g(f"cat {b}/c2.out"), 180, "the pty master")
        self.until_answered(b, "c2", "two-$((40+3))", "two-43", "the restored shell's answer")
        self.remove(cid)
        self.tb.wait(p2, timeout=60)

    def test_shell_job(self):
        """A container that inherits its caller's terminal (process.terminal
        false, stdio a pty from outside). Debian's CRIU 3.17.1 cannot dump it,
        with or without --shell-job: it looks the pty up as a file on one of
        the container's mounts. crx says so in one line naming the flag, and
        the container runs on."""
        cid = "shelljob"
        b = self.bundle(cid, "i=0; while :; do echo tick-$i; echo $i >> /out/count.log; "
                             "i=$((i+1)); sleep 0.2; done")
        pty_run = f"python3 {HELPERS}/pty_run.py"
        p1 = self.tb.spawn(0, f"{pty_run} {b}/t1.out {CRX} run -d -b {b} {cid}")
        self.wait_for_count(cid, 3)
        self.assertIn("tick-", self.g(f"cat {b}/t1.out"))
        self.assert_fails_naming(
            self.checkpoint(cid, "--image-path /tmp/shelljob0", check=False), "/dev/pts/")
        self.assert_fails_naming(
            self.checkpoint(cid, "--shell-job --image-path /tmp/shelljob", check=False),
            "--shell-job", "outside its mount namespace")
        self.assertEqual(self.status(cid), "running")
        self.wait_for_count(cid, self.counts(cid)[-1] + 2)
        self.remove(cid)
        self.tb.wait(p1, timeout=60)

    # ---- bad input ---------------------------------------------------------

    # ---- tmpfs mounts crx makes again (runtime/checkpoint/recreated_mounts) --

    TMPFS = ("/proc/acpi", "/sys/firmware", "/dev/shm")

    def tmpfs_mounts(self, cid):
        """{mount point: (mount options, fs type, source, super options)} of
        the tmpfs mounts in TMPFS, as the container's mountinfo shows them."""
        out = self.g(f"{CRX} exec {cid} cat /proc/self/mountinfo")
        found = {}
        for line in out.splitlines():
            f = line.split()
            if len(f) > 6 and f[4] in self.TMPFS:
                dash = f.index("-")
                self.assertNotIn(f[4], found, f"two mounts at {f[4]}:\n{out}")
                found[f[4]] = (f[5], f[dash + 1], f[dash + 2], f[dash + 3])
        return found

    def assert_masked_dirs_empty_and_read_only(self, cid):
        for d in self.TMPFS[:2]:
            self.assertEqual(self.g(f"{CRX} exec {cid} ls -A {d}").strip(), "", d)
            rc, out, err = self.try_g(f"{CRX} exec {cid} touch {d}/x")
            self.assertNotEqual(rc, 0, f"{d} must stay read-only")
            self.assertIn("Read-only", out + err)

    def dumped_as_external(self, log):
        text = self.g(f"cat {log}")
        return {d for d in self.TMPFS + ("/dev",) if f"crx-tmpfs:{d} " in text}

    def dev_listing(self, cid):
        """Every entry of the container's /dev mount: name, type+mode, owner,
        device number, link target (no times)."""
        return self.g(f"{CRX} exec {cid} find /dev -xdev -exec stat -c '%n %f %u %g %t %T %N' "
                      "{} +").splitlines()

    def test_empty_tmpfs_mounts_are_made_again_on_restore(self):
        """Masked directories, an empty /dev/shm and a /dev as crx made it
        are no part of the dump (CRIU external mounts, no tar); crx mounts
        them again on restore: the same mounts (options, type, source,
        size), /dev with the same entries, the masked ones empty and
        read-only, /dev/shm writable. Nothing of crx's staging is left."""
        cid = "tmpfs"
        self.bundle(cid, QUIET + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        before = self.tmpfs_mounts(cid)
        self.assertEqual(set(before), set(self.TMPFS), "the spec's masked dirs and /dev/shm")
        dev = self.dev_listing(cid)
        self.assertTrue(any(ln.startswith("/dev/null 21b6 0 0 1 3") for ln in dev), dev)
        self.checkpoint(cid, "--image-path /tmp/tmpfs")
        self.assertEqual(self.dumped_as_external("/tmp/tmpfs/dump.log"),
                         set(self.TMPFS) | {"/dev"})
        stopped = self.counts(cid)
        self.restore(cid, "-d --image-path /tmp/tmpfs")
        self.assert_counts_on(cid, stopped)
        self.assertEqual(self.tmpfs_mounts(cid), before)
        self.assertEqual(self.dev_listing(cid), dev, "/dev is made again as it was")
        self.assert_masked_dirs_empty_and_read_only(cid)
        self.assertEqual(self.g(f"{CRX} exec {cid} sh -c 'echo w > /dev/shm/f && cat /dev/shm/f'"
                                ).strip(), "w", "/dev/shm is writable after the restore")
        self.assertEqual(self.g("grep -c criu-tmpfs /proc/self/mountinfo || true").strip(), "0",
                         "crx's staging mounts are detached")
        self.assertEqual(self.g(f"ls /run/crx/{cid}/criu-tmpfs 2>&1 >/dev/null | wc -l").strip(),
                         "1", "crx's staging dir is removed")
        # The same with --leave-running: the container runs on after the dump.
        self.checkpoint(cid, "--leave-running --image-path /tmp/tmpfs2")
        self.assertEqual(self.status(cid), "running")
        self.wait_for_count(cid, self.counts(cid)[-1] + 2)

    def test_dev_shm_with_data_is_carried_by_crx_and_dev_by_criu(self):
        """Files in /dev/shm at checkpoint time: crx packs them itself
        (runtime/checkpoint/carried_tmpfs: an archive in the images dir,
        /dev/shm an external mount, no tar of CRIU's) and they are there
        after the restore with their modes, a directory and a symlink. A
        file added to /dev leaves /dev to CRIU's tar. A hard link in
        /dev/shm leaves it to CRIU too, and both names come back as one
        file."""
        cid = "shmdata"
        self.bundle(cid, QUIET + "echo kept > /dev/shm/data; chmod 604 /dev/shm/data; "
                              "mkdir -m 710 /dev/shm/sub; echo inner > /dev/shm/sub/f; "
                              "ln -s data /dev/shm/link; echo dev > /dev/appfile; " + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        before = self.tmpfs_mounts(cid)
        listing = f"{CRX} exec {cid} sh -c 'cd /dev/shm && stat -c \"%n %f %u %g %s\" * sub/*'"
        files = self.g(listing)
        self.checkpoint(cid, "--image-path /tmp/shmdata")
        self.assertEqual(self.dumped_as_external("/tmp/shmdata/dump.log"), set(self.TMPFS))
        self.assertEqual(self.g("ls /tmp/shmdata | grep crx-tmpfs").split(),
                         ["crx-tmpfs-%2Fdev%2Fshm.tar"])
        stopped = self.counts(cid)
        self.restore(cid, "-d --image-path /tmp/shmdata")
        self.assert_counts_on(cid, stopped)
        self.assertEqual(self.g(listing), files, "names, modes, owners and sizes")
        self.assertEqual(self.g(f"{CRX} exec {cid} cat /dev/shm/link /dev/shm/sub/f").split(),
                         ["kept", "inner"])
        self.assertEqual(self.g(f"{CRX} exec {cid} cat /dev/appfile").strip(), "dev")
        self.assertEqual(self.tmpfs_mounts(cid), before)
        self.assert_masked_dirs_empty_and_read_only(cid)
        # A hard link: CRIU's tar, which keeps it one file.
        self.g(f"{CRX} exec {cid} ln /dev/shm/data /dev/shm/hard")
        self.checkpoint(cid, "--image-path /tmp/shmhard")
        self.assertEqual(self.dumped_as_external("/tmp/shmhard/dump.log"), set(self.TMPFS[:2]))
        self.assertEqual(self.g("ls /tmp/shmhard | grep -c crx-tmpfs || true").strip(), "0")
        self.restore(cid, "-d --image-path /tmp/shmhard")
        self.assertEqual(self.g(f"{CRX} exec {cid} stat -c %h /dev/shm/hard").strip(), "2")
        self.assertEqual(self.g(f"{CRX} exec {cid} cat /dev/shm/hard").strip(), "kept")

    def test_mount_engine_follows_propagation(self):
        """CRIU's mount engine for the restore (runtime/checkpoint/README.md,
        "CRIU's mount engine"): a tree of private mounts is restored with
        the compat engine, as crx's debug log says, with the same mount
        points; a slave bind mount of a shared guest dir keeps CRIU's
        default engine and is a slave again after the restore: a mount made
        in the guest dir afterwards shows up in the container."""
        def mounts(cid):  # mount points, options and sources
            return self.g(f"cut -d' ' -f5- /proc/{self.state(cid)['pid']}/mountinfo")

        def shared():  # the slave bind's line
            return next(ln for ln in mounts("mntslave").splitlines() if ln.startswith("/shared "))

        cid = "mntpriv"
        self.bundle(cid, QUIET + COUNTER)
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        before = mounts(cid)
        self.assertNotIn("master:", before)
        self.assertNotIn("shared:", before)
        self.checkpoint(cid, "--image-path /tmp/mntpriv")
        self.g(f"{CRX} --debug --log /tmp/mntpriv.log restore -d --image-path /tmp/mntpriv "
               f"-b /tmp/b/{cid} {cid}")
        self.assertIn("CRIU's mount engine compat", self.g("cat /tmp/mntpriv.log"))
        self.assertEqual(sorted(ln.split()[0] for ln in mounts(cid).splitlines()),
                         sorted(ln.split()[0] for ln in before.splitlines()),
                         "the same mount points")

        cid = "mntslave"
        self.g("mkdir -p /tmp/mntshared && mount -t tmpfs mntshared /tmp/mntshared && "
               "mount --make-shared /tmp/mntshared")
        self.addCleanup(self.try_g, "umount -R /tmp/mntshared")
        b = self.bundle(cid, QUIET + COUNTER)
        self.g(f"python3 - <<'E'\nimport json\np='{b}/config.json'\ns=json.load(open(p))\n"
               "s['mounts'].append({'destination': '/shared', 'type': 'bind', "
               "'source': '/tmp/mntshared', 'options': ['rbind', 'rw', 'rslave']})\n"
               "json.dump(s, open(p, 'w'))\nE")
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.assertRegex(shared(), r" master:\d+ ")
        self.checkpoint(cid, "--image-path /tmp/mntslave")
        stopped = self.counts(cid)
        self.g(f"{CRX} --debug --log /tmp/mntslave.log restore -d --image-path /tmp/mntslave "
               f"-b /tmp/b/{cid} {cid}")
        self.assertIn("CRIU's mount engine CRIU's default", self.g("cat /tmp/mntslave.log"))
        self.assert_counts_on(cid, stopped)
        self.assertRegex(shared(), r" master:\d+ ")
        self.g("mkdir -p /tmp/mntshared/sub && mount -t tmpfs sub /tmp/mntshared/sub")
        self.assertIn("/shared/sub", [ln.split()[0] for ln in mounts(cid).splitlines()],
                      "a mount in the guest dir propagates into the restored container")

    def test_bad_input_leaves_nothing_behind(self):
        cid = "bad"
        self.bundle(cid, QUIET + COUNTER)
        self.assert_fails_naming(self.checkpoint("nosuch", "--image-path /tmp/bad0",
                                                 check=False), "nosuch")
        self.assertEqual(self.files("/tmp/bad0"), set(), "nothing written for an unknown id")
        self.assert_fails_naming(self.restore(cid, "-d --image-path /tmp/nosuch-dir",
                                              check=False), "/tmp/nosuch-dir")
        self.assert_nothing_left(cid)
        self.g("mkdir -p /tmp/not-images && echo hello > /tmp/not-images/inventory.img")
        self.assert_fails_naming(self.restore(cid, "-d --image-path /tmp/not-images",
                                              check=False), "criu restore failed")
        self.assert_nothing_left(cid)
        self.g("mkdir -p /tmp/empty-images")
        self.assert_fails_naming(self.restore(cid, "-d --image-path /tmp/empty-images",
                                              check=False), "criu restore failed")
        self.assert_nothing_left(cid)
        # Restore onto a running container's id: refused, the container untouched.
        self.run_container(cid)
        self.wait_for_count(cid, 3)
        self.checkpoint(cid, "--leave-running --image-path /tmp/bad1")
        pid = self.state(cid)["pid"]
        self.assert_fails_naming(self.restore(cid, "-d --image-path /tmp/bad1", check=False),
                                 cid, "exists")
        self.assertEqual(self.state(cid)["pid"], pid)
        self.assertEqual(self.status(cid), "running")
        self.assertEqual(self.g("pgrep -c -x criu || true").strip(), "0", "a criu is left")


if __name__ == "__main__":
    main()
