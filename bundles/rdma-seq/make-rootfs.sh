#!/bin/sh
# Builds the rdma-seq rootfs into ROOTFS (default ./rootfs next to this
# script): crx-verbs-seq from a crx build dir plus, from Debian's own
# packages, what it needs at run time (libc6, libstdc++6, libibverbs1 with
# its rxe provider, libnl), ibverbs-utils and busybox-static for a shell.
# Packages are fetched with `apt-get download` and unpacked with
# `dpkg-deb -x`; nothing is installed on the host.
#
# Usage: make-rootfs.sh [--build-dir DIR] [ROOTFS]
#   --build-dir DIR  crx build dir holding verbs-ext/tools/crx-verbs-seq
#                    (default: $CRX_BUILD_DIR, else <repo>/build)
# The .debs are cached under ${CRX_CACHE:-~/.cache/crx}/bundles/debs, one
# file per package version. ROOTFS is replaced only once the new tree is
# complete; a failed run leaves nothing behind.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

# Run-time closure, worked out from the NEEDED entries of crx-verbs-seq,
# ibv_devices and the provider libraries (checked again below). Not the
# apt closure: adduser (libibverbs1's postinst) is never needed here.
packages="libc6 libgcc-s1 libstdc++6 libibverbs1 ibverbs-providers libnl-3-200
libnl-route-3-200 ibverbs-utils busybox-static"

usage() { echo "usage: make-rootfs.sh [--build-dir DIR] [ROOTFS]" >&2; exit 2; }
build=${CRX_BUILD_DIR:-$top/build}
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
    --build-dir=*) build=${1#*=}; shift ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -le 1 ] || usage
dir=${1:-$here/rootfs}
seq_bin=$build/verbs-ext/tools/crx-verbs-seq
if [ ! -x "$seq_bin" ]; then
  echo "make-rootfs: $seq_bin not found; build it with" \
       "'cmake --build $build --target crx-verbs-seq' or name another build dir" \
       "(--build-dir, CRX_BUILD_DIR)" >&2
  exit 1
fi

# shellcheck source=SCRIPTDIR/../lib/debian-rootfs.sh
. "$here/../lib/debian-rootfs.sh"
rootfs_begin "$dir"
# shellcheck disable=SC2086 # a list of names
rootfs_unpack $packages
rootfs_skeleton
cp "$seq_bin" "$tmp/usr/local/bin/crx-verbs-seq"
rootfs_require_rxe_provider

# Every dynamic executable and provider must resolve all its libraries
# inside the tree (needs chroot, i.e. root).
if [ "$(id -u)" -eq 0 ]; then
  rootfs_check_libs "$tmp"/usr/local/bin/* "$tmp"/usr/bin/* "$tmp"/usr/lib/*/libibverbs/*.so
  chroot "$tmp" /usr/local/bin/crx-verbs-seq --help >/dev/null
else
  echo "make-rootfs: not root: library check in a chroot skipped" >&2
fi
rootfs_commit
