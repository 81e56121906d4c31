#!/usr/bin/python3
"""Three guests on one segment: ibv_rc_pingpong and ib_send_bw pass between
every pair (rxe on each guest's own NIC).

The guests run the rdma_rxe crx ships (rxe-patches/, built and cached by
its build.sh), not Debian's: stock 6.1 rxe has the bug rxe-patches 0001
fixes, an ack racing a retry that makes the responder NAK every packet
that follows as an invalid request. On a loaded host it failed this test
as `ib_send_bw g2 -> g1 ... Failed status 9` (clean-clone run of
2026-11-28, the test sharing the host's cores with another test bed).
tests/bench/rdma compares against stock rxe; this test is about the
test bed's links."""
import itertools

from vmtest import VmTestCase, main, patched_rxe_modules

# Index of the RoCEv2 GID that carries the guest's IPv4 address.
GID_INDEX = ("for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do "
             "case $(cat $f) in 0000:0000:0000:0000:0000:ffff:*) basename $f; exit 0;; esac; "
             "done; exit 1")
WAIT_LISTEN = "for i in $(seq 600); do ss -Hltn 'sport = :{port}' | grep -q . && exit 0; " \
              "sleep 0.1; done; exit 1"


class RdmaTest(VmTestCase):
    def pair(self, tb, server, client, tool, port):
        """Run tool as server in guest `server` and as client in `client`."""
        gs = self.gid[server]
        gc = self.gid[client]
        h = tb.spawn(server, tool.format(gid=gs, port=port, peer=""))
        try:
            self.sh(tb, server, WAIT_LISTEN.format(port=port), timeout=120)
            rc, out, err = tb.run(client, tool.format(gid=gc, port=port, peer=tb.ip(server)),
                                  timeout=300)
        except BaseException:
            tb.kill(h)
            raise
        if rc != 0:
            tb.kill(h)  # it would wait for a client forever
        src, sout, serr = tb.wait(h, timeout=120)
        what = f"{tool.split()[0]} {tb.name(client)} -> {tb.name(server)}"
        self.assertEqual(rc, 0, f"{what}: client failed\n{out}\n{err}")
        self.assertEqual(src, 0, f"{what}: server failed\n{sout}\n{serr}")
        return out + err

    def test_every_pair(self):
        tb = self.boot(3, modules_dir=patched_rxe_modules())
        for k in range(3):  # crx's rdma_rxe (it has the QPN range parameters), not Debian's
            self.sh(tb, k, "test -e /sys/module/rdma_rxe/parameters/qpn_min")
        self.gid = [int(self.sh(tb, k, GID_INDEX)) for k in range(3)]
        for a, b in itertools.combinations(range(3), 2):
            self.sh(tb, a, f"busybox ping -c 1 -W 10 {tb.name(b)}", timeout=60)
        for server, client in itertools.combinations(range(3), 2):
            out = self.pair(tb, server, client,
                            "ibv_rc_pingpong -d rxe0 -g {gid} -p {port} -n 20 -s 4096 {peer}",
                            18515)
            self.assertRegex(out, r"\d+ iters in [\d.]+ seconds")
            print(f"ibv_rc_pingpong {tb.name(client)} -> {tb.name(server)}: " +
                  next(l for l in out.splitlines() if "iters in" in l), flush=True)
        for server, client in itertools.combinations(range(3), 2):
            out = self.pair(tb, server, client,
                            "ib_send_bw -d rxe0 -x {gid} -p {port} -s 65536 -n 100 -F {peer}",
                            18516)
            line = [l for l in out.splitlines() if l.strip().startswith("65536")]
            self.assertTrue(line, f"no result line in ib_send_bw output:\n{out}")
            print(f"ib_send_bw {tb.name(client)} -> {tb.name(server)}: {line[-1].strip()}",
                  flush=True)


if __name__ == "__main__":
    main()
