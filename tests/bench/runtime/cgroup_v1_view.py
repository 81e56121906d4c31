"""A private mount namespace where /sys/fs/cgroup shows only cgroup v1.

crun 1.8.1 refuses this machine's hybrid layout ("cgroups in hybrid mode not
supported"): it sees the cgroup2 mount at /sys/fs/cgroup/unified.  The
benchmarks therefore run every runtime (crx, runc and crun alike, so the
comparison stays fair) inside one mount namespace where a fresh tmpfs on
/sys/fs/cgroup holds only the v1 hierarchies, mounted again.  The view is
entered once for the whole benchmark, not per call.
"""
import ctypes
import os
import subprocess

CLONE_NEWNS = 0x00020000


def v1_hierarchies():
    """(mount point name, options) of every cgroup v1 hierarchy mounted now."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, post = line.split(" - ", 1)
            fstype, _source, superopts = post.split()
            point = pre.split()[4]
            if fstype != "cgroup" or not point.startswith("/sys/fs/cgroup/"):
                continue
            wanted = [o for o in superopts.split(",")
                      if o not in ("rw", "ro", "relatime", "noatime")]
            found.append((os.path.basename(point), ",".join(wanted)))
    return found


def enter():
    """Moves this process into the v1-only view (children inherit it)."""
    hierarchies = v1_hierarchies()
    if not hierarchies:
        raise RuntimeError("no cgroup v1 hierarchy is mounted: nothing to show")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    # Unmount the host's cgroup mounts here instead of covering them, so
    # /proc/self/mountinfo (which runtimes read) no longer lists cgroup2.
    subprocess.run(["umount", "-R", "-l", "/sys/fs/cgroup"], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "cgroup-v1-view",
                    "/sys/fs/cgroup"], check=True)
    for name, options in hierarchies:
        point = os.path.join("/sys/fs/cgroup", name)
        os.mkdir(point)
        subprocess.run(["mount", "-t", "cgroup", "-o", options, "cgroup", point],
                       check=True)
