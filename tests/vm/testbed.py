#!/usr/bin/python3
"""crx's qemu test bed: guests running Debian's bookworm kernel (6.1) under TCG.

Every checkpoint, migration and RDMA test runs on these guests.  Each guest
sees the host's root read-only (9p) under a tmpfs overlay, so binaries built
on the host run in it unchanged; its kernel modules come from a second share
(the stock tree of the resolved ABI, or a replacement tree); a scratch dir of
the host is shared read-write into every guest at the same path.  All guests
sit on one private L2 segment: a bridge with one tap per guest inside a
network namespace that only the test bed sees.  A small agent (PID 1 of the
guest, tests/vm/guest/agent.py) runs commands on request over virtio-serial.

Set-up: tests/vm/setup.sh (once; cached under ${CRX_CACHE:-~/.cache/crx}/vm).

API (stdlib only; run with Debian's /usr/bin/python3):

    import sys; sys.path.insert(0, "<repo>/tests/vm")
    from testbed import Testbed, TestbedError, GuestTimeout, GuestDied

    with Testbed(3) as tb:                      # boots g0, g1, g2 in parallel
        rc, out, err = tb.run(0, "uname -r", timeout=60)
        h = tb.spawn(1, "ibv_rc_pingpong -g 1")  # background
        tb.run(2, f"ibv_rc_pingpong -g 1 {tb.ip(1)}", timeout=120, check=True)
        rc, out, err = tb.wait(h, timeout=60)
        tb.scratch                              # host dir, same path in guests

  Testbed(n=1, modules_dir=None, scratch=None, memory_mb=768, rxe=True,
          boot_timeout=None, cache="loose", extra_cmdline="", icount=None)
      n            number of guests, g0..g{n-1}
      modules_dir  replacement modules tree: a dir holding <abi>/modules.dep
                   (as /lib/modules), or the <abi> dir itself; see
                   make_modules_tree() for building one with a patched module
      scratch      host dir to share (default: a fresh temp dir, removed at
                   teardown); mounted read-write at the same path in guests
      rxe          load rdma_rxe and create rxe0 on eth0 in every guest
      cache        9p cache mode of the host root: "loose" (default, fast) caches
                   what the guest has seen, so files the host changes after the
                   guest looked at them may look stale; pass files made during a
                   test through tb.scratch (never cached), or use "none"
      icount       None (default: plain TCG), or qemu's -icount value, e.g.
                   "shift=0,sleep=off": the guest clock then counts executed
                   guest instructions (single-threaded TCG), not host time, so
                   timings inside ONE guest do not depend on the host's load
                   (tests/bench/rdma uses it); real time between guests and to
                   the host still is real
  tb.n, tb.name(k) -> "g<k>", tb.ip(k) -> "10.77.0.<10+k>", tb.mac(k),
  tb.scratch, tb.abi, tb.boot_seconds[k] (qemu start -> agent ready)
  tb.run(k, cmd, timeout=120, check=False, env=None) -> (rc, out, err)
      cmd is run by bash -c in guest k as root, cwd /; rc < 0 means killed by
      signal -rc; out/err are str.  check=True raises CommandFailed if rc != 0.
  tb.spawn(k, cmd, env=None) -> Handle            run in the background
  tb.wait(handle, timeout=120, check=False) -> (rc, out, err)
  tb.kill(handle, sig=signal.SIGKILL)              signal its process group
  tb.run_all(cmd, timeout=120, check=False) -> [(rc, out, err)] for every guest
  tb.console(k) -> str                             guest k's console log so far
  tb.monitor(k, cmd) -> str                        qemu's monitor (HMP) answer for guest k
  tb.kill_guest(k)                                 power guest k off hard

  Testbed(...).start() returns the booted test bed and tb.close() tears it
  down, for set-ups that outlive one with-block (e.g. unittest setUpClass).

  make_modules_tree(dest, {path under <abi>/: host file}) -> dest
      a replacement tree (hard links to the stock one, files replaced,
      depmod'ed) for Testbed(modules_dir=dest)
  load_config() -> dict   CRX_VM_ABI, CRX_VM_MODULES (stock tree), ...
  leftovers(owners=None) -> [str]   what dead test beds left on the host
  vmtest.VmTestCase (tests/vm/vmtest.py): unittest base with boot(n, **kw)
      and sh(tb, k, cmd) (asserts success, returns stdout)

  Failures raise TestbedError subclasses whose message carries the guest's
  console log: GuestTimeout (a step outlived its time-out: the guest is
  killed first), GuestDied (qemu exited), CommandFailed (check=True).
  Teardown (leaving the with-block, also on exceptions, SIGINT, SIGTERM and
  interpreter exit) kills every qemu and the network namespace and removes
  the temp dir; if the process is SIGKILLed, qemu and the namespace die with
  it (PR_SET_PDEATHSIG) and the namespace's holder removes the temp dir (the
  next Testbed sweeps stale temp dirs, should even that fail).
  Create and use a Testbed from one thread (qemu's death signal is bound to
  the thread that started it).

CLI:
  testbed.py run [-n N] [-g K] [-t SECONDS] [--modules DIR] -- CMD...
  testbed.py shell [-n N] [-c K] [--modules DIR]   console of guest K on the
      terminal (Ctrl-A x quits qemu), the others in the background
  testbed.py leftovers        what dead test beds left on the host (exit 1 if any)
  testbed.py build-initramfs --abi ABI --modules DIR   (used by setup.sh)
  testbed.py extract-vmlinux VMLINUZ                   (used by setup.sh)
"""
import argparse
import atexit
import glob
import hashlib
import inspect
import itertools
import marshal
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST_DIR = os.path.join(HERE, "guest")
SETUP = os.path.join(HERE, "setup.sh")
# Modules the initramfs loads itself, with their dependencies (faster than
# over 9p).  rdma_rxe is not among them: it comes from the modules share, which
# may be a replacement tree; a replacement of these ones would not be used.
INITRAMFS_MODULES = ["virtio_pci", "9pnet_virtio", "9p", "overlay", "virtio_net",
                     "virtio_console", "ib_uverbs", "udp_tunnel", "ip6_udp_tunnel"]
SUBNET = "10.77.0"
BASE_OCTET = 10
QEMU = "/usr/bin/qemu-system-x86_64"
# Names that mark what a test bed owns (checked for leftovers by the tests).
TEMP_PREFIX = "crx-vm."            # + owner pid: the temp dir
CPU_CGROUP_V1 = "/sys/fs/cgroup/cpu"  # where cap_vcpu's cgroups go
NETNS_HOLDER_PREFIX = "crx-vm-netns."  # + owner pid: argv[0] of the netns holder
BRIDGE = "crxbr0"                  # inside the private netns only
TAP = "crxtap"                     # + k, inside the private netns only


def cache_dir():
    return os.path.join(os.environ.get("CRX_CACHE") or os.path.expanduser("~/.cache/crx"), "vm")


class TestbedError(Exception):
    """A test-bed failure; the message carries the console log where it helps."""


class GuestTimeout(TestbedError):
    pass


class GuestDied(TestbedError):
    pass


class CommandFailed(TestbedError):
    def __init__(self, msg, rc, out, err):
        super().__init__(msg)
        self.rc, self.out, self.err = rc, out, err


# --------------------------------------------------------------------------
# Kernel and initramfs (built by setup.sh, found here)
# --------------------------------------------------------------------------

def recipe_hash(abi, busybox="/bin/busybox"):
    """Hash of everything the initramfs is made of."""
    h = hashlib.sha256()
    h.update(abi.encode() + b"\0" + " ".join(INITRAMFS_MODULES).encode() + b"\0")
    h.update("\n".join(_prefetch_list()).encode())
    for fn in (_cpio_newc, module_load_order, build_initramfs):
        h.update(inspect.getsource(fn).encode())
    for path in sorted(glob.glob(os.path.join(GUEST_DIR, "*"))) + [busybox]:
        h.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()[:16]


def module_load_order(modules, abi, names=None):
    """insmod order (with dependencies) of INITRAMFS_MODULES, as paths."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(modules)))
    order = []
    for mod in names or INITRAMFS_MODULES:
        out = subprocess.run(["modprobe", "-d", root, "-S", abi, "--show-depends", mod],
                             check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            words = line.split()
            if words and words[0] == "insmod" and words[1] not in order:
                order.append(words[1])
    return order


PREFETCH_BINARIES = ["/usr/bin/python3.11", "/usr/bin/dash", "/usr/bin/bash", "/usr/bin/rdma"]


def _prefetch_list():
    """The binaries stage 2 and the agent start, with their libraries."""
    files = [b for b in PREFETCH_BINARIES if os.path.exists(b)]
    out = subprocess.run(["ldd"] + files, capture_output=True, text=True).stdout
    for line in out.splitlines():
        words = line.split()
        if "=>" in words and len(words) > words.index("=>") + 1:
            lib = words[words.index("=>") + 1]
            if lib.startswith("/") and lib not in files:
                files.append(lib)
    return files


def _cpio_newc(entries):
    """A newc cpio archive of (name, mode, data) entries; dirs have data None."""
    out = bytearray()
    for ino, (name, mode, data) in enumerate(entries + [("TRAILER!!!", 0, b"")], 1):
        data = data or b""
        nameb = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nameb), 0]
        out += b"070701" + b"".join(b"%08X" % f for f in fields) + nameb
        out += b"\0" * (-len(out) % 4) + data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def extract_vmlinux(vmlinuz):
    """The uncompressed ELF kernel inside a bzImage, next to it (cached).

    qemu boots it directly through its PVH entry point: decompressing the
    xz bzImage under TCG costs 10-20 s of every boot."""
    dest = os.path.join(os.path.dirname(os.path.abspath(vmlinuz)), "vmlinux")
    if os.path.exists(dest) and os.path.getmtime(dest) >= os.path.getmtime(vmlinuz):
        return dest
    import lzma
    with open(vmlinuz, "rb") as f:
        data = f.read()
    start = data.find(b"\xfd7zXZ\x00")
    if start < 0:
        raise TestbedError(f"{vmlinuz}: no xz payload (not a Debian amd64 bzImage?)")
    elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[start:])
    if elf[:4] != b"\x7fELF":
        raise TestbedError(f"{vmlinuz}: payload is not an ELF kernel")
    tmp = dest + f".tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(elf)
    os.replace(tmp, dest)
    return dest


def build_initramfs(abi, modules):
    """Build (or reuse) the initramfs for ABI; returns its path.  Left
    uncompressed: unpacking is faster than decompressing under TCG."""
    dest = os.path.join(cache_dir(), "initramfs", f"{abi}-{recipe_hash(abi)}.cpio")
    if os.path.exists(dest):
        return dest
    entries = [(d, 0o40755, None) for d in ("bin", "dev", "proc", "sys", "modules")]
    entries.append(("bin/busybox", 0o100755, open("/bin/busybox", "rb").read()))
    for name, mode in (("init", 0o100755), ("stage2", 0o100755), ("agent.py", 0o100644)):
        entries.append((name, mode, open(os.path.join(GUEST_DIR, name), "rb").read()))
    load = []
    early = module_load_order(modules, abi, INITRAMFS_MODULES[:4])  # enough to mount /
    for path in module_load_order(modules, abi):
        base = os.path.basename(path)
        entries.append(("modules/" + base, 0o100644, open(path, "rb").read()))
        load.append(base)
        if path == early[-1]:
            load.append("--mount--")
    entries.append(("modules/load.order", 0o100644, ("\n".join(load) + "\n").encode()))
    # Read ahead over 9p while the remaining modules load (host paths).
    entries.append(("prefetch", 0o100644, ("\n".join(_prefetch_list()) + "\n").encode()))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = dest + f".tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(_cpio_newc(entries))
    os.replace(tmp, dest)
    # Keep the few newest of this ABI (other checkouts may use other recipes).
    others = sorted(glob.glob(os.path.join(os.path.dirname(dest), f"{abi}-*.cpio*")),
                    key=os.path.getmtime, reverse=True)
    for old in others[4:]:
        os.unlink(old)
    return dest


def load_config():
    """The kernel/initramfs setup.sh prepared; rebuilds a stale initramfs."""
    env_file = os.path.join(cache_dir(), "current.env")
    if not os.path.exists(env_file):
        raise TestbedError(f"test bed not set up: run {SETUP} ({env_file} missing)")
    cfg = {}
    with open(env_file) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                cfg[k] = v
    for key in ("CRX_VM_VMLINUZ", "CRX_VM_MODULES"):
        if not os.path.exists(cfg.get(key, "")):
            raise TestbedError(f"{key}={cfg.get(key)} missing: run {SETUP}")
    cfg["CRX_VM_INITRD"] = build_initramfs(cfg["CRX_VM_ABI"], cfg["CRX_VM_MODULES"])
    cfg["CRX_VM_VMLINUX"] = extract_vmlinux(cfg["CRX_VM_VMLINUZ"])
    return cfg


def make_modules_tree(dest, replacements, base=None, abi=None):
    """A modules tree for Testbed(modules_dir=dest): the stock tree of the
    resolved ABI (hard links) with files replaced, then depmod'ed.

    replacements: {path relative to <abi>/ (e.g.
    "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko"): host file}.
    Returns dest (which then holds <abi>/)."""
    if base is None or abi is None:
        cfg = load_config()
        base, abi = base or cfg["CRX_VM_MODULES"], abi or cfg["CRX_VM_ABI"]
    src = os.path.join(os.path.realpath(base), abi)
    tree = os.path.join(dest, abi)
    if os.path.exists(tree):
        shutil.rmtree(tree)
    os.makedirs(dest, exist_ok=True)
    try:
        subprocess.run(["cp", "-al", src, tree], check=True, capture_output=True)
    except subprocess.CalledProcessError:
        shutil.copytree(src, tree, symlinks=True)
    for rel, path in replacements.items():
        target = os.path.join(tree, rel)
        if os.path.exists(target):
            os.unlink(target)  # break the hard link, never write through it
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(path, target)
    # depmod -b wants <root>/lib/modules/<abi>: give it one via a symlink.
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "lib"))
        os.symlink(os.path.abspath(dest), os.path.join(root, "lib", "modules"))
        subprocess.run(["depmod", "-b", root, abi], check=True)
    return dest


# --------------------------------------------------------------------------
# Process and namespace helpers
# --------------------------------------------------------------------------

def _pdeath(argv):
    """argv run so that it is SIGKILLed when this thread's process dies."""
    return ["setpriv", "--pdeathsig", "KILL", "--"] + argv


def _sweep_stale_tempdirs():
    """Temp dirs and vCPU caps (cap_vcpu) of owners that died."""
    for path in glob.glob(os.path.join(tempfile.gettempdir(), TEMP_PREFIX + "*")) \
            + glob.glob(os.path.join(CPU_CGROUP_V1, TEMP_PREFIX + "*")):
        try:
            pid = int(re.split(r"[.-]", os.path.basename(path)[len(TEMP_PREFIX):])[0])
        except ValueError:
            continue
        if pid != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            if path.startswith("/sys/"):
                try:
                    os.rmdir(path)  # empty: its qemu is gone
                except OSError:
                    pass
            else:
                shutil.rmtree(path, ignore_errors=True)


# The process that holds a test bed's network namespace; when its owner dies
# (PDEATHSIG TERM) or the test bed closes, it removes the temp dir and exits.
_HOLDER = """
import os, shutil, signal, sys
def bye(*_):
    shutil.rmtree(sys.argv[2], ignore_errors=True)
    os._exit(0)
signal.signal(signal.SIGTERM, bye)
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    signal.pause()
"""


class _Netns:
    """A private network namespace holding a bridge and one tap per guest.

    Held by a small process (no name, no mount in /run/netns): it vanishes
    with its devices when the holder and the qemus in it are gone.  The
    holder also removes the temp dir when the owner is killed outright."""

    def __init__(self, n, workdir):
        # The label names the owner, so that a leak could be told apart.
        self.holder = subprocess.Popen(
            ["setpriv", "--pdeathsig", "TERM", "--", "unshare", "--net", "--",
             "/usr/bin/python3", "-I", "-S", "-c", _HOLDER,
             f"{NETNS_HOLDER_PREFIX}{os.getpid()}", workdir],
            stdin=subprocess.DEVNULL, start_new_session=True)
        mine = os.readlink("/proc/self/ns/net")
        self.path = f"/proc/{self.holder.pid}/ns/net"
        deadline = time.monotonic() + 30
        while True:  # never touch the host's namespace: wait until unshare happened
            try:
                if os.readlink(self.path) != mine:
                    break
            except OSError:
                pass
            if self.holder.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise TestbedError("cannot create the test bed's network namespace")
            time.sleep(0.01)
        cmds = [f"link add {BRIDGE} type bridge", f"link set {BRIDGE} up", "link set lo up"]
        for k in range(n):
            cmds += [f"tuntap add {TAP}{k} mode tap", f"link set {TAP}{k} master {BRIDGE}",
                     f"link set {TAP}{k} up"]
        self.run(["ip", "-batch", "-"], input="\n".join(cmds) + "\n")

    def wrap(self, argv):
        return ["nsenter", f"--net={self.path}", "--"] + argv

    def run(self, argv, input=None):
        r = subprocess.run(self.wrap(argv), input=input, text=True, capture_output=True)
        if r.returncode:
            raise TestbedError(f"{' '.join(argv)} in the test bed's netns: {r.stderr.strip()}")
        return r.stdout

    def close(self):
        if self.holder.poll() is None:
            self.holder.terminate()
            try:
                self.holder.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.holder.kill()
        self.holder.wait()


# --------------------------------------------------------------------------
# One guest: qemu process + agent connection
# --------------------------------------------------------------------------

def _covered_host_dirs():
    """The checkout and the build dir when they live where every guest mounts
    its own tmpfs (/tmp, /run): the guest binds them back from the host root."""
    dirs = []
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for d in (here, os.environ.get("CRX_BUILD_DIR")):
        if not d:
            continue
        d = os.path.realpath(d)
        if (d.startswith("/tmp/") or d.startswith("/run/")) and not any(c in d for c in " :,") \
                and d not in dirs:
            dirs.append(d)
    return dirs


def _qopt(value):
    """A value inside a qemu option string (commas doubled)."""
    return str(value).replace(",", ",,")


class Handle:
    """A command started in a guest."""

    def __init__(self, guest, jid, cmd):
        self.guest, self.id, self.cmd = guest, jid, cmd
        self.pid = None
        self.result = None  # (rc, out, err)
        self.done = threading.Event()
        self.started = threading.Event()

    def __repr__(self):
        return f"<{self.guest.name} job {self.id}: {self.cmd!r}>"


class Guest:
    def __init__(self, k, workdir):
        self.k = k
        self.name = f"g{k}"
        self.ip = f"{SUBNET}.{BASE_OCTET + k}"
        self.mac = f"52:54:00:77:00:{BASE_OCTET + k:02x}"
        self.dir = os.path.join(workdir, self.name)
        os.makedirs(self.dir)
        self.console_path = os.path.join(self.dir, "console.log")
        self.sock_path = os.path.join(self.dir, "agent.sock")
        self.monitor_path = os.path.join(self.dir, "monitor.sock")
        self.proc = None
        self.sock = None
        self.hello = threading.Event()
        self.dead = threading.Event()
        self.death_reason = None
        self.jobs = {}
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.started_at = None
        self.ready_at = None
        self.kernel = None

    # -- qemu -------------------------------------------------------------
    def qemu_argv(self, tb, interactive=False):
        cmdline = [
            "console=ttyS0", "panic=-1", "mitigations=off", "loglevel=4", "edd=off",
            "cryptomgr.notests", "audit=0", "8250.nr_uarts=1",
            # with two possible CPUs (-smp 1,maxcpus=2, below) and TCG's CPU
            # not Intel, 6.1 would call the TSC unsynchronized and fall back
            # to the HPET: every clock read an emulated MMIO access, and
            # perftest's clock check fails; one vCPU has one TSC
            "tsc=reliable",
            # the boot's check that the 8254 timer ticks through the IO-APIC
            # can miss its window under TCG on a loaded host, and the guest
            # panics ("IO-APIC + timer doesn't work": a clean-clone run on
            # 2026-12-06); the timer works, so the check is skipped, as
            # virtual machines' images commonly do
            "no_timer_check",
            f"crx.name={self.name}", f"crx.ip={self.ip}/24",
            "crx.hosts=" + ",".join(f"{g.name}={g.ip}" for g in tb.guests),
            f"crx.scratch={tb.scratch}", f"crx.rxe={1 if tb.rxe else 0}",
            f"crx.shell={1 if interactive else 0}",
        ] + ([f"crx.hostdirs={':'.join(_covered_host_dirs())}"] if _covered_host_dirs() else []) \
          + ([tb.extra_cmdline] if tb.extra_cmdline else [])
        if interactive:
            console = ["-chardev", "stdio,id=con,mux=on,signal=off",
                       "-serial", "chardev:con", "-mon", "chardev=con,mode=readline"]
        else:
            console = ["-chardev", f"file,id=con,path={_qopt(self.console_path)}",
                       "-serial", "chardev:con"]
        return [
            # debug-threads: the vCPU threads are named "CPU <i>/TCG" (vcpu_threads)
            QEMU, "-name", f"{self.name},debug-threads=on",
            "-nodefaults", "-no-user-config", "-nographic",
            *(["-accel", "tcg"] if tb.icount is None else
              ["-accel", "tcg,thread=single", "-icount", tb.icount]),
            # One vCPU, but maxcpus=2: qemu 7.2 translates the guest's
            # barriers (x86 Linux's virt_mb is `lock addl`, virtio_store_mb
            # an xchg) into real host atomics only when more than one CPU
            # may exist. With max_cpus 1 they become plain loads and stores,
            # while qemu's main loop serves the virtqueues in another host
            # thread: the virtio kick/interrupt handshake (store, fence,
            # load on each side) can then lose a kick or an interrupt, and a
            # virtio-net TX queue that loses one under load is dead for good
            # (6.1's virtio_net only logs its TX watchdog). See
            # tests/vm/README.md, "One vCPU, two possible".
            # (tb.vcpus may give a guest two: the MPI bench's spare core.)
            "-cpu", "max", "-smp", f"{tb.vcpus.get(self.k, 1)},maxcpus=2",
            "-m", str(tb.memory_mb),
            "-no-reboot", "-bios", "qboot.rom",
            "-kernel", tb.cfg["CRX_VM_VMLINUX"], "-initrd", tb.cfg["CRX_VM_INITRD"],
            "-append", " ".join(cmdline),
            *console,
            "-virtfs", "local,path=/,mount_tag=hostroot,security_model=passthrough,"
                       "readonly=on,multidevs=remap",
            "-virtfs", f"local,path={_qopt(tb.modules_share)},mount_tag=modules,"
                       "security_model=passthrough,readonly=on,multidevs=remap",
            "-virtfs", f"local,path={_qopt(tb.scratch)},mount_tag=scratch,"
                       "security_model=passthrough,multidevs=remap",
            "-netdev", f"tap,id=n0,ifname={TAP}{self.k},script=no,downscript=no,vhost=off",
            "-device", f"virtio-net-pci,id=nic0,netdev=n0,mac={self.mac},romfile=",
            # qemu's human monitor, for looking at a live guest's devices
            # (tb.monitor(k, "info virtio-queue-status ...")).
            "-monitor", f"unix:{_qopt(self.monitor_path)},server=on,wait=off",
            "-device", "virtio-serial-pci",
            "-chardev", f"socket,id=agent,path={_qopt(self.sock_path)},server=on,wait=off",
            "-device", "virtserialport,chardev=agent,name=crx.agent",
        ]

    def start(self, tb, interactive=False):
        argv = tb.netns.wrap(self.qemu_argv(tb, interactive))
        self.started_at = time.monotonic()
        if interactive:
            self.proc = subprocess.Popen(_pdeath(argv))
        else:
            with open(os.path.join(self.dir, "qemu.out"), "wb") as out:
                self.proc = subprocess.Popen(_pdeath(argv), stdin=subprocess.DEVNULL,
                                             stdout=out, stderr=subprocess.STDOUT,
                                             start_new_session=True)
        threading.Thread(target=self._watch_qemu, daemon=True).start()

    def _watch_qemu(self):
        rc = self.proc.wait()
        self._die(f"qemu exited with status {rc}")

    def _die(self, reason):
        if self.dead.is_set():
            return
        self.death_reason = reason
        self.dead.set()
        with self.lock:
            jobs = list(self.jobs.values())
        for h in jobs:
            h.done.set()
            h.started.set()
        self.hello.set()

    def monitor(self, cmd, timeout):
        prompt = b"(qemu) "
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(self.monitor_path)
            buf = b""
            def until_prompt(buf):
                while not buf.endswith(prompt):
                    chunk = s.recv(65536)
                    if not chunk:
                        raise TestbedError(f"{self.name}: qemu monitor closed")
                    buf += chunk
                return buf
            until_prompt(buf)
            s.sendall(cmd.encode() + b"\n")
            out = until_prompt(b"")
        # the echo of the command comes first, then the answer
        lines = out[:-len(prompt)].decode("utf-8", "replace").replace("\r", "").split("\n")
        return "\n".join(lines[1:]).strip()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        if self.sock:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()
            self.sock = None

    def console(self):
        try:
            with open(self.console_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def qemu_output(self):
        try:
            with open(os.path.join(self.dir, "qemu.out"), "rb") as f:
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def report(self, what, lines=200):
        log = self.console().splitlines()
        tail = log[-lines:]
        cut = f"(last {lines} of {len(log)} lines)" if len(log) > lines else ""
        q = self.qemu_output()
        return (f"{self.name}: {what}\n" + (f"--- qemu says:\n{q}\n" if q else "") +
                f"--- console log of {self.name} {cut}:\n" + "\n".join(tail) +
                f"\n--- end of console log of {self.name}")

    # -- agent ------------------------------------------------------------
    def connect(self, deadline):
        while not self.dead.is_set():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.sock_path)
                self.sock = s
                threading.Thread(target=self._read, daemon=True).start()
                return
            except OSError:
                s.close()
                if time.monotonic() > deadline:
                    raise GuestTimeout(self.report("qemu never opened the agent socket"))
                time.sleep(0.05)
        raise GuestDied(self.report(f"died while starting: {self.death_reason}"))

    def _read(self):
        buf = b""
        sock = self.sock
        try:
            while True:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 4:
                    size = int.from_bytes(buf[:4], "big")
                    if len(buf) < 4 + size:
                        break
                    msg, buf = marshal.loads(buf[4:4 + size]), buf[4 + size:]
                    self._dispatch(msg)
        except (OSError, ValueError, EOFError, TypeError):
            pass
        # The connection ends only when qemu goes away.
        if self.proc:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._die("the agent connection closed")

    def _dispatch(self, msg):
        op = msg.get("op")
        if op == "hello":
            self.kernel = msg.get("kernel")
            self.ready_at = time.monotonic()
            self.hello.set()
            return
        with self.lock:
            h = self.jobs.get(msg.get("id"))
        if h is None:
            return
        if op == "started":
            h.pid = msg["pid"]
            h.started.set()
        elif op == "exit":
            h.result = (msg["rc"], msg.get("out", b"").decode("utf-8", "replace"),
                        msg.get("err", b"").decode("utf-8", "replace"))
            with self.lock:
                self.jobs.pop(h.id, None)
            h.started.set()
            h.done.set()
        elif op == "error":
            h.result = (-1000, "", "agent: " + msg.get("msg", "?"))
            h.started.set()
            h.done.set()

    def send(self, msg):
        body = marshal.dumps(msg)
        data = len(body).to_bytes(4, "big") + body
        with self.lock:
            if self.dead.is_set() or self.sock is None:
                raise GuestDied(self.report(f"is not running: {self.death_reason}"))
            self.sock.sendall(data)

    def spawn(self, cmd, env=None):
        with self.lock:
            h = Handle(self, next(self.ids), cmd)
            self.jobs[h.id] = h
        self.send({"op": "spawn", "id": h.id, "cmd": cmd, "env": env or {}})
        return h


# --------------------------------------------------------------------------
# The test bed
# --------------------------------------------------------------------------

_live = set()  # test beds to tear down at exit / on signals


def _teardown_all(*_):
    for tb in list(_live):
        tb.close()


atexit.register(_teardown_all)


def _on_signal(signum, frame):
    _teardown_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


class Testbed:
    def __init__(self, n=1, modules_dir=None, scratch=None, memory_mb=768, rxe=True,
                 boot_timeout=None, cache="loose", extra_cmdline="", icount=None, vcpus=None):
        """vcpus: {guest: 2} for guests that get a second vCPU (one each
        otherwise; at most two, see qemu_argv)."""
        if not 1 <= n <= 64:  # the kernel command line names every guest
            raise ValueError("n must be in 1..64")
        if any(v not in (1, 2) for v in (vcpus or {}).values()):
            raise ValueError("vcpus: a guest has 1 or 2")
        self.n = n
        self.vcpus = dict(vcpus or {})
        self.memory_mb = memory_mb
        self.icount = icount
        self.rxe = rxe
        self.boot_timeout = boot_timeout or 90 + 60 * n
        self.extra_cmdline = ((f"crx.cache={cache} " if cache else "") + extra_cmdline).strip()
        self.cfg = load_config()
        self.abi = self.cfg["CRX_VM_ABI"]
        self.modules_share = self._modules_share(modules_dir or self.cfg["CRX_VM_MODULES"])
        self._own_scratch = scratch is None
        self._scratch_arg = scratch
        self.workdir = None
        self.netns = None
        self.guests = []
        self.boot_seconds = []
        self._caps = []  # cgroups of cap_vcpu, removed by close()
        self._closed = False

    def _modules_share(self, path):
        path = os.path.realpath(path)
        if os.path.exists(os.path.join(path, self.abi, "modules.dep")):
            return path
        if os.path.basename(path) == self.abi and os.path.exists(os.path.join(path, "modules.dep")):
            return os.path.dirname(path)
        raise TestbedError(f"modules dir {path} has no {self.abi}/modules.dep "
                           "(depmod'ed tree for the guest kernel expected)")

    # -- life cycle ---------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def start(self, interactive=None):
        """Boot all guests; interactive=k puts guest k's console on the terminal
        and returns without waiting for it."""
        _sweep_stale_tempdirs()
        self.workdir = tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}.")
        _live.add(self)
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                if signal.getsignal(sig) in (signal.SIG_DFL, None):
                    signal.signal(sig, _on_signal)
        try:
            if self._own_scratch:
                self.scratch = os.path.join(self.workdir, "scratch")
                os.makedirs(self.scratch)
            else:
                self.scratch = os.path.realpath(self._scratch_arg)
                if any(c.isspace() for c in self.scratch):
                    raise TestbedError(f"scratch dir {self.scratch!r}: no white space, please "
                                       "(it goes on the kernel command line)")
                os.makedirs(self.scratch, exist_ok=True)
            self.netns = _Netns(self.n, self.workdir)
            self.guests = [Guest(k, self.workdir) for k in range(self.n)]
            for g in self.guests:
                if g.k != interactive:
                    g.start(self)
            deadline = time.monotonic() + self.boot_timeout
            for g in self.guests:
                if g.k != interactive:
                    g.connect(deadline)
            for g in self.guests:
                if g.k == interactive:
                    continue
                left = deadline - time.monotonic()
                if not g.hello.wait(max(left, 0)):
                    g.kill()
                    raise GuestTimeout(g.report(f"did not boot within {self.boot_timeout} s"))
                if g.dead.is_set():
                    raise GuestDied(g.report(f"died while booting: {g.death_reason}"))
            self.boot_seconds = [g.ready_at - g.started_at if g.ready_at else None
                                 for g in self.guests]
        except BaseException:
            self.close()
            raise
        return self

    def close(self):
        """Tear everything down: qemus, network namespace, temp dir.  Idempotent."""
        if self._closed:
            return
        self._closed = True
        _live.discard(self)
        for g in self.guests:
            try:
                g.kill()
            except Exception:
                pass
        for cap in self._caps:
            try:
                os.rmdir(cap)  # its threads ended with their qemu
            except OSError:
                pass
        if self.netns:
            self.netns.close()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- guests -------------------------------------------------------------
    def _guest(self, k):
        if not 0 <= k < self.n:
            raise IndexError(f"no guest {k} (test bed has {self.n})")
        return self.guests[k]

    def name(self, k):
        return self._guest(k).name

    def ip(self, k):
        return self._guest(k).ip

    def mac(self, k):
        return self._guest(k).mac

    def console(self, k):
        return self._guest(k).console()

    def kill_guest(self, k):
        self._guest(k).kill()

    def cap_vcpu(self, k, cpu, share, period_us=10000):
        """Lets vCPU `cpu` of guest k run at most `share` of a host core
        (0 < share <= 1), in slices of period_us: a node whose core is
        slower, e.g. so that the host keeps a core's worth for other
        vCPUs. Needs the host's cgroup v1 cpu controller (thread-level
        CFS quota); close() removes the cgroup."""
        if not 0 < share <= 1:
            raise ValueError("share must be in (0, 1]")
        root = CPU_CGROUP_V1
        if not os.path.exists(os.path.join(root, "cpu.cfs_quota_us")):
            raise TestbedError(f"capping a vCPU needs cgroup v1's cpu controller at {root}")
        tid = self.vcpu_threads(k).get(cpu)
        if tid is None:
            raise TestbedError(f"guest {k} has no vCPU {cpu}")
        cap = os.path.join(root, f"{TEMP_PREFIX}{os.getpid()}-g{k}-cpu{cpu}")
        os.mkdir(cap)
        self._caps.append(cap)
        for name, value in (("cpu.cfs_period_us", period_us),
                            ("cpu.cfs_quota_us", int(period_us * share)), ("tasks", tid)):
            with open(os.path.join(cap, name), "w") as f:
                f.write(str(value))

    def vcpu_threads(self, k):
        """{vCPU index: host thread id} of guest k's qemu."""
        pid = self._guest(k).proc.pid
        found = {}
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    m = re.fullmatch(r"CPU (\d+)/TCG", f.read().strip())
            except FileNotFoundError:
                continue
            if m:
                found[int(m.group(1))] = int(tid)
        return found

    def monitor(self, k, cmd, timeout=10):
        """The answer of guest k's qemu monitor (HMP) to one command, e.g.
        "info virtio-queue-status /machine/peripheral/nic0/virtio-backend 1"
        (the NIC's TX queue); works while the guest itself is stuck."""
        return self._guest(k).monitor(cmd, timeout)

    # -- commands -----------------------------------------------------------
    def spawn(self, k, cmd, env=None):
        return self._guest(k).spawn(cmd, env)

    def wait(self, handle, timeout=120, check=False):
        g = handle.guest
        if not handle.done.wait(timeout):
            g.kill()
            raise GuestTimeout(g.report(
                f"`{handle.cmd}` did not finish within {timeout} s: guest killed"))
        if handle.result is None:
            raise GuestDied(g.report(f"died while running `{handle.cmd}`: {g.death_reason}"))
        rc, out, err = handle.result
        if check and rc != 0:
            raise CommandFailed(f"{g.name}: `{handle.cmd}` exited with {rc}\n"
                                f"--- stdout:\n{out}\n--- stderr:\n{err}", rc, out, err)
        return handle.result

    def run(self, k, cmd, timeout=120, check=False, env=None):
        return self.wait(self.spawn(k, cmd, env), timeout, check)

    def run_all(self, cmd, timeout=120, check=False, env=None):
        handles = [self.spawn(k, cmd, env) for k in range(self.n)]
        deadline = time.monotonic() + timeout
        return [self.wait(h, max(deadline - time.monotonic(), 0), check) for h in handles]

    def kill(self, handle, sig=signal.SIGKILL):
        handle.guest.send({"op": "kill", "id": handle.id, "sig": int(sig)})


# --------------------------------------------------------------------------
# Leftover check
# --------------------------------------------------------------------------

def _alive(pid):
    return os.path.exists(f"/proc/{pid}")


def _owner_of(text):
    """Owner pid named in a test-bed path or label inside text, else None."""
    for prefix in (TEMP_PREFIX, NETNS_HOLDER_PREFIX):
        i = text.find(prefix)
        if i >= 0:
            digits = ""
            for ch in text[i + len(prefix):]:
                if not ch.isdigit():
                    break
                digits += ch
            if digits:
                return int(digits)
    return None


def leftovers(owners=None):
    """What test beds left on the host: a list of strings, empty if nothing.

    Considers objects whose owner (the process that made the test bed) is in
    `owners`, or, with owners=None, whose owner is gone (live owners' test beds
    belong to tests still running).  Looks for qemu and netns-holder
    processes, temp dirs, mounts, host network devices and named netns."""
    def ours(owner):
        return owner is not None and (owner in owners if owners is not None else not _alive(owner))

    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if ("qemu-system" in cmdline or NETNS_HOLDER_PREFIX in cmdline) and \
                ours(_owner_of(cmdline)):
            found.append(f"process {entry}: {cmdline[:160]}")
    for path in glob.glob(os.path.join(tempfile.gettempdir(), TEMP_PREFIX + "*")):
        if ours(_owner_of(path)):
            found.append(f"temp dir {path}")
    for path in glob.glob(os.path.join(CPU_CGROUP_V1, TEMP_PREFIX + "*")):
        if ours(_owner_of(path)):
            found.append(f"vCPU cap {path}")
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if "crx-vm" in line or TEMP_PREFIX in line:
                found.append(f"mount: {line.strip()}")
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    for line in links.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        if name.startswith((BRIDGE[:-1], TAP)):
            found.append(f"host network device {name}")
    if os.path.isdir("/run/netns"):
        found += [f"named netns {n}" for n in os.listdir("/run/netns") if "crx" in n]
    return found


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------

def _cli_run(args):
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        sys.exit("testbed.py run: no command given")
    import shlex
    with Testbed(args.n, modules_dir=args.modules, rxe=not args.no_rxe) as tb:
        if args.verbose:
            print(f"booted {tb.n} guest(s): " + ", ".join(
                f"{tb.name(k)} {tb.ip(k)} in {tb.boot_seconds[k]:.1f} s" for k in range(tb.n)),
                file=sys.stderr)
        rc, out, err = tb.run(args.guest, " ".join(shlex.quote(c) for c in cmd)
                              if len(cmd) > 1 else cmd[0], timeout=args.timeout)
        sys.stdout.write(out)
        sys.stderr.write(err)
    sys.exit(rc if rc >= 0 else 128 - rc)


def _cli_shell(args):
    tb = Testbed(args.n, modules_dir=args.modules, rxe=not args.no_rxe)
    try:
        print(f"crx test bed: {args.n} guest(s), console of g{args.console} follows "
              "(Ctrl-A x quits; scratch dir: see below)", file=sys.stderr)
        tb.start(interactive=args.console)
        print("guests: " + ", ".join(f"{tb.name(k)}={tb.ip(k)}" for k in range(tb.n)) +
              f"; scratch {tb.scratch}", file=sys.stderr)
        g = tb.guests[args.console]
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C belongs to the guest
        g.start(tb, interactive=True)
        g.proc.wait()
    finally:
        tb.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    for name in ("run", "shell"):
        s = sub.add_parser(name)
        s.add_argument("-n", type=int, default=1, help="number of guests")
        s.add_argument("--modules", help="replacement modules tree")
        s.add_argument("--no-rxe", action="store_true", help="do not set up rxe0")
    r = sub.choices["run"]
    r.add_argument("-g", "--guest", type=int, default=0, help="guest to run in")
    r.add_argument("-t", "--timeout", type=float, default=300)
    r.add_argument("-v", "--verbose", action="store_true")
    r.add_argument("cmd", nargs=argparse.REMAINDER)
    sub.choices["shell"].add_argument("-c", "--console", type=int, default=0,
                                      help="guest whose console is on the terminal")
    sub.add_parser("leftovers", help="list what dead test beds left (exit 1 if any)")
    x = sub.add_parser("extract-vmlinux")
    x.add_argument("vmlinuz")
    b = sub.add_parser("build-initramfs")
    b.add_argument("--abi", required=True)
    b.add_argument("--modules", required=True)
    args = p.parse_args(argv)
    try:
        if args.what == "run":
            _cli_run(args)
        elif args.what == "shell":
            _cli_shell(args)
        elif args.what == "leftovers":
            found = leftovers()
            print("\n".join(found) if found else "nothing left behind")
            sys.exit(1 if found else 0)
        elif args.what == "extract-vmlinux":
            print(extract_vmlinux(args.vmlinuz))
        else:
            print(build_initramfs(args.abi, args.modules))
    except TestbedError as e:
        sys.exit(f"testbed: {e}")


if __name__ == "__main__":
    main()
