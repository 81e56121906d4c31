#!/usr/bin/env python3
"""Writes the seed corpora under tests/fuzz/corpus/<target>/ (small,
hand-made inputs of each format; run again after a format changes).
Frame seeds use the structured encoding of fuzz_common.hpp (byte 0 odd:
records {type u8, length u16 BE, payload}); one raw seed per frame target
carries real frame bytes (magic, version, CRC) for the raw mode."""
import json, os, shutil, struct, sys, zlib

top = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(top))
corpus = os.path.join(top, "corpus")

def put(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def js(v):
    return json.dumps(v, separators=(",", ":"))

# ---- config.json
for b in ("busybox", "rdma-seq", "perftest", "mpi"):
    p = os.path.join(repo, "bundles", b, "config.json")
    if os.path.exists(p):
        put("fuzz_spec", b + ".json", open(p, "rb").read())
put("fuzz_spec", "full.json", js({
    "ociVersion": "1.1.0",
    "root": {"path": "rootfs", "readonly": True},
    "process": {"terminal": False, "user": {"uid": 0, "gid": 0, "additionalGids": [1]},
                "args": ["sh"], "env": ["PATH=/bin"], "cwd": "/",
                "capabilities": {"bounding": ["CAP_KILL"], "effective": ["CAP_KILL"],
                                 "permitted": ["CAP_KILL"]},
                "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
                "noNewPrivileges": True, "oomScoreAdj": 100,
                "consoleSize": {"height": 24, "width": 80}},
    "hostname": "c", "domainname": "d",
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
               {"destination": "/data", "type": "bind", "source": "/srv",
                "options": ["rbind", "ro", "nosuid", "rprivate"]},
               {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                "options": ["size=64k", "mode=1777", "noexec"]}],
    "hooks": {"prestart": [{"path": "/bin/true", "args": ["true"], "timeout": 5}],
              "poststop": [{"path": "/bin/true", "env": ["A=1"]}]},
    "annotations": {"a": "b"},
    "linux": {
        "namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "network", "path": "/var/run/netns/x"},
                       {"type": "user"}, {"type": "cgroup"}],
        "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
        "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
        "devices": [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229, "fileMode": 438}],
        "cgroupsPath": "/crx/c1",
        "resources": {
            "devices": [{"allow": False, "access": "rwm"},
                        {"allow": True, "type": "c", "major": 1, "minor": 3, "access": "rw"},
                        {"allow": True, "type": "b", "major": 8, "access": "r"}],
            "memory": {"limit": 67108864, "reservation": 1048576, "swap": 134217728},
            "cpu": {"shares": 512, "quota": 50000, "period": 100000, "cpus": "0-1", "mems": "0"},
            "pids": {"limit": 64},
            "blockIO": {"weight": 500, "throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 1000}]},
            "hugepageLimits": [{"pageSize": "2MB", "limit": 2097152}],
            "unified": {"memory.high": "max"}},
        "sysctl": {"net.ipv4.ip_forward": "1"},
        "seccomp": {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
                    "architectures": ["SCMP_ARCH_X86_64"], "flags": ["SECCOMP_FILTER_FLAG_LOG"],
                    "syscalls": [{"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
                                 {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
                                  "args": [{"index": 0, "value": 8, "op": "SCMP_CMP_EQ"}]}]},
        "rootfsPropagation": "rslave",
        "maskedPaths": ["/proc/kcore"], "readonlyPaths": ["/proc/sys"]}}))
put("fuzz_spec", "process.json", js({"args": ["ls"], "cwd": "/", "env": ["A=b"], "user": {"uid": 1}}))
put("fuzz_spec", "resources.json", js({"memory": {"limit": 1000000}, "cpu": {"shares": 2}, "pids": {"limit": 3}}))
put("fuzz_spec", "syntax-error.json", '{"ociVersion": "1.0.2",\n "root": {"path": "rootfs",}\n}')

# ---- state.json
state = {"id": "c1", "bundle": "/srv/b", "rootfs": "/srv/b/rootfs",
         "created": "2024-01-01T00:00:00.000000000Z", "owner": "", "pid": 1234,
         "pid_start_time": 5678, "annotations": {"k": "v"},
         "cgroup": {"layout": "v2", "path": "/crx/c1", "dirs": {"unified": "/sys/fs/cgroup/crx/c1"},
                    "created": ["/sys/fs/cgroup/crx/c1"]},
         "config": {"ociVersion": "1.1.0", "root": {"path": "rootfs"},
                    "process": {"args": ["sh"], "cwd": "/"}, "linux": {"namespaces": [{"type": "pid"}]}},
         "systemd_cgroup": False, "created_with_userns": False, "pid_file": "/run/c1.pid"}
put("fuzz_state", "state.json", js(state))
v1 = dict(state, cgroup={"layout": "hybrid", "path": "/crx/c1",
                         "dirs": {"memory": "/sys/fs/cgroup/memory/crx/c1", "unified": "/sys/fs/cgroup/unified/crx/c1"}})
put("fuzz_state", "state-hybrid.json", js(v1))
put("fuzz_state", "state-min.json", js({"id": "c2", "pid": 0}))

# ---- migration frames
T = dict(Hello=1, Challenge=2, Response=3, AuthOk=4, Manifest=10, Accept=11, RootfsData=12,
         RootfsEnd=13, RoundStart=20, PageServerReady=21, RoundDone=22, RoundAck=23, Frozen=24,
         ImageData=30, ImageClose=31, ImageSymlink=32, DumpDone=40, RestoreOk=41, Commit=42,
         CommitAck=43, Abort=44, Error=50, Progress=51)

def rec(t, payload=b""):
    if isinstance(payload, str):
        payload = payload.encode()
    return struct.pack(">BH", T[t], len(payload)) + payload

def frame(t, payload=b""):
    if isinstance(payload, str):
        payload = payload.encode()
    return struct.pack(">IBBHII", 0x4352584D, 1, T[t], 0, len(payload),
                       zlib.crc32(payload) & 0xFFFFFFFF) + payload

nonce = "ab" * 32
hello = js({"version": 1, "channel": "control", "session": "0123456789abcdef", "nonce": nonce})
response = js({"proof": "cd" * 32})
challenge = js({"nonce": nonce, "proof": "ef" * 32})
# byte 0: bit 0 structured, bit 1 client side
put("fuzz_migrate_handshake", "server-structured", b"\x01" + rec("Hello", hello) + rec("Response", response))
put("fuzz_migrate_handshake", "server-raw", b"\x00" + frame("Hello", hello) + frame("Response", response))
put("fuzz_migrate_handshake", "server-badversion", b"\x01" + rec("Hello", js({"version": 2, "channel": "pages", "session": "s", "nonce": "00"})))
put("fuzz_migrate_handshake", "client-structured", b"\x03" + rec("Challenge", challenge) + rec("AuthOk"))
put("fuzz_migrate_handshake", "client-raw", b"\x02" + frame("Challenge", challenge) + frame("AuthOk"))
put("fuzz_migrate_handshake", "client-error", b"\x03" + rec("Error", "authentication failed"))

inventory = {"processes": [{"pid": 1, "command": "sh"}], "bind_mounts": [{"destination": "/d", "source": "/s"}],
             "namespaces": [{"type": "network", "path": "/var/run/netns/x"}], "memory_bytes": 1048576, "paused": False}
rdma = {"devices": ["rxe0"], "qpns": [17, 18], "mrns": [3], "contexts": 1, "mr_bytes": 65536,
        "objects": {"pd": 1, "mr": 1, "cq": 2, "srq": 0, "qp": 2, "async_event": 1, "comp_channel": 1}}
manifest = {"protocol": 1, "id": "c1", "bundle": "/srv/b", "config_sha256": "00" * 32,
            "config_json": '{"ociVersion":"1.1.0"}', "send_rootfs": True, "pre_copy_rounds": 1,
            "criu_version": "3.17.1", "kernel": "6.1.0-18-amd64",
            "flags": {"tcp_established": True, "ext_unix_sk": False, "shell_job": False,
                      "file_locks": True, "manage_cgroups_mode": "soft"},
            "rdma": rdma, "inventory": inventory}
m = js(manifest)
put("fuzz_migrate_manifest", "manifest.json", m)
put("fuzz_migrate_manifest", "manifest-min.json", js({"protocol": 1, "id": "c", "bundle": "/b", "config_sha256": ""}))
put("fuzz_migrate_manifest", "accept.json", js({"bundle": "/srv/b", "need_rootfs": True,
                                                 "final_round_ahead": True}))
put("fuzz_migrate_manifest", "round-start.json", js({"round": 2, "final": True, "parent": "../1"}))
put("fuzz_migrate_manifest", "round-done.json", js({"image_bytes": 123456, "criu_seconds": 0.25}))
put("fuzz_migrate_manifest", "round-ack.json", js({"page_bytes": 4096}))
put("fuzz_migrate_manifest", "restore-ok.json", js({"restore_seconds": 1.5, "pid": 42}))
put("fuzz_migrate_manifest", "commit-ack.json", js({"verbs_restore": {"ok": True, "objects": {"qp": 2}}, "verbs_resume": {"ok": True}}))

def image_data(name, off, data):
    return struct.pack(">H", len(name)) + name.encode() + struct.pack(">Q", off) + data

def image_close(name, size):
    return struct.pack(">H", len(name)) + name.encode() + struct.pack(">Q", size)

def image_symlink(name, target):
    return struct.pack(">H", len(name)) + name.encode() + target.encode()

session = [("Manifest", m),
           ("RoundStart", js({"round": 1, "final": False, "parent": ""})),
           ("ImageData", image_data("1/inventory.img", 0, b"\x01\x02\x03\x04" * 8)),
           ("ImageData", image_data("1/inventory.img", 32, b"tail")),
           ("ImageClose", image_close("1/inventory.img", 36)),
           ("ImageClose", image_close("1/empty.img", 0)),
           ("RoundDone", js({"image_bytes": 36, "criu_seconds": 0.1})),
           ("RoundStart", js({"round": 2, "final": True, "parent": "../1", "ahead": True})),
           ("Frozen", ""),
           ("ImageSymlink", image_symlink("2/parent", "../1")),
           ("ImageData", image_data("2/core-1.img", 0, b"core")),
           ("ImageClose", image_close("2/core-1.img", 4)),
           ("RoundDone", js({"image_bytes": 4})),
           ("DumpDone", ""),
           ("Commit", "")]
put("fuzz_migrate_session", "session-structured", b"\x01" + b"".join(rec(t, p) for t, p in session))
put("fuzz_migrate_session", "session-raw", b"\x00" + b"".join(frame(t, p) for t, p in session[:6]))
put("fuzz_migrate_session", "sender-side", b"\x01" + rec("Manifest", m) + rec("Accept", js({"bundle": "/b", "need_rootfs": False}))
    + rec("RoundAck", js({"page_bytes": 1})) + rec("RestoreOk", js({"pid": 7})) + rec("CommitAck", js({"verbs_restore": {"ok": True}})))
put("fuzz_migrate_session", "abort", b"\x01" + rec("Manifest", m) + rec("Abort", "stop"))

# ---- the page channel's frames (migrate/zero_runs.hpp; fuzz_migrate_page_frames)
def pframe(kind, length, payload=b""):
    return struct.pack("<2I", kind, length) + payload

put("fuzz_migrate_page_frames", "bytes-zeros.bin",
    b"\0" + pframe(1, 7, b"header!") + pframe(2, 8192) + pframe(1, 4, b"tail"))
put("fuzz_migrate_page_frames", "lz4-short.bin", b"\0" + pframe(3, 4, b"\0\0\0\0"))
# odd: sparse pages, a zero page, a page of the input, sealed every 3 pages
put("fuzz_migrate_page_frames", "pages.bin", b"\x01\x02hd" + bytes([1, 2, 0, 0, 200, 0xff, 7, 7, 7]))

# ---- verbs dumps (rxe_migr_abi.h, version 6, little endian)
MAGIC, VERSION = 0x474D5852, 6
PD, MR, CQ, SRQ, QP, ASYNC, CHAN, AH = 1, 2, 3, 4, 5, 6, 7, 8

def queue(num, esize, data_len, producer=0, consumer=0):
    return struct.pack("<6I", num, esize, producer, consumer, producer, data_len)

def record(t, handle, body, ring=b"", user_handle=0):
    raw = body + ring
    raw += b"\0" * (-(24 + len(raw)) % 8)
    return struct.pack("<4IQ", t, 24 + len(raw), handle, 0, user_handle) + raw

def qp_body(sq_len, rq_len, resp_res=0):
    # struct rxe_migr_qp is 920 bytes: resp_res_count, head, tail and cur
    # at 856, its sq queue at 872, rq at 896
    b = bytearray(920)
    struct.pack_into("<6I", b, 0, 17, 2, 1, 1, 1, 0xFFFFFFFF)
    struct.pack_into("<3Ii", b, 856, resp_res, resp_res % 16, 0, -1)
    b[872:896] = queue(8, 64, sq_len)
    b[896:920] = queue(8, 32, rq_len)
    return bytes(b)

def read_res(slot, psn):
    # struct rxe_migr_resp_res (64 bytes): a READ of 4 KiB, reply not begun
    return struct.pack("<8I2Q2IQ", slot, 1, 1, 0, psn, psn + 3, psn, 0x301,
                       0x7f0000001000, 0x7f0000001000, 4096, 4096, 0)

def dump(records):
    body = b"".join(records)
    return struct.pack("<4I", MAGIC, VERSION, len(records), 16 + len(body)) + body

recs = [record(ASYNC, 0x1234, struct.pack("<2I", 1, 0)),
        record(CHAN, 0x5678, struct.pack("<2I", 0, 1)),
        record(PD, 1, b""),
        # struct rxe_migr_ah: pd, ahn, port, sgid index, hop limit, tclass,
        # flow label, dgid, dmac, network type, reserved (40 bytes)
        record(AH, 2, struct.pack("<2I4BI16s6s2B", 1, 0x1001, 1, 1, 64, 0, 0,
                                  bytes(10) + b"\xff\xff" + bytes([10, 77, 0, 11]),
                                  bytes(6), 1, 0)),
        record(MR, 1, struct.pack("<6I3Q", 1, 3, 0x301, 0x301, 7, 0, 0x7f0000001000, 0x7f0000001000, 4096)),
        # in a plugin image a CQ carries its window only: 2 entries of 32 bytes
        record(CQ, 1, struct.pack("<6I", 16, 0x5678, 0, 0, 0, 0) + queue(16, 32, 64, 3, 1), b"\xaa" * 64, user_handle=99),
        record(SRQ, 1, struct.pack("<6I", 1, 5, 16, 1, 0, 0) + queue(16, 64, 0), user_handle=100),
        record(QP, 1, qp_body(512, 256), b"\x11" * 512 + b"\x22" * 256, user_handle=101),
        # a READ responder: two READs it accepted after its rings
        record(QP, 2, qp_body(512, 256, 2), b"\x11" * 512 + b"\x22" * 256
               + read_res(0, 100) + read_res(1, 104), user_handle=102)]
put("fuzz_verbs_dump", "objects.dump", dump(recs))
put("fuzz_verbs_dump", "pd-only.dump", dump([record(PD, 7, b"")]))
put("fuzz_verbs_dump", "empty.dump", dump([]))
put("fuzz_verbs_dump", "bad-count.dump", dump([record(PD, 1, b"")])[:8] + struct.pack("<2I", 5, 40) + record(PD, 1, b""))

def image(kind, ctx_id, evt_type, evt_handle, device, cdev, queues, dumpb):
    h = b"CRXV" + struct.pack("<7I", 2, kind, ctx_id, evt_type, evt_handle, len(queues), len(dumpb))
    h += device.encode().ljust(64, b"\0") + cdev.encode().ljust(64, b"\0")
    for q in queues:
        h += struct.pack("<IIQQ", *q)
    return h + dumpb

put("fuzz_verbs_image", "context.img", image(1, 33, 0, 0, "rxe0", "/dev/infiniband/uverbs0",
                                               [(3, 1, 0x3000, 0x1000), (1, 1, 0x1000, 0x2000)], dump(recs)))
put("fuzz_verbs_image", "event-async.img", image(2, 33, ASYNC, 0x1234, "", "", [], b""))
put("fuzz_verbs_image", "event-channel.img", image(2, 33, CHAN, 0x5678, "", "", [], b""))
