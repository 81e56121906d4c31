#!/bin/sh
# Builds the perftest rootfs into ROOTFS (default ./rootfs next to this
# script) from Debian's own packages: perftest (ib_send_bw, ib_write_bw,
# ib_read_bw, ...) unmodified, what it needs at run time (libc6,
# libibverbs1 with its providers, librdmacm1, libibumad3, libpci3, libnl),
# ibverbs-utils and busybox-static for a shell. Packages are fetched with
# `apt-get download` and unpacked with `dpkg-deb -x`; nothing is installed
# on the host.
#
# Usage: make-rootfs.sh [ROOTFS]
# The .debs are cached under ${CRX_CACHE:-~/.cache/crx}/bundles/debs, one
# file per package version. ROOTFS is replaced only once the new tree is
# complete; a failed run leaves nothing behind.
set -eu
here=$(cd "$(dirname "$0")" && pwd)

# Run-time closure, worked out from the NEEDED entries of the perftest
# binaries, ibv_devices and the provider libraries (checked again below).
# Not the apt closure: adduser (libibverbs1's postinst) and pci.ids (names
# for lspci) are never needed here.
packages="libc6 libgcc-s1 libibverbs1 ibverbs-providers libnl-3-200 libnl-route-3-200
librdmacm1 libibumad3 libpci3 libudev1 zlib1g perftest ibverbs-utils busybox-static"

usage() { echo "usage: make-rootfs.sh [ROOTFS]" >&2; exit 2; }
case ${1:-} in -*) usage ;; esac
[ $# -le 1 ] || usage
dir=${1:-$here/rootfs}

# shellcheck source=SCRIPTDIR/../lib/debian-rootfs.sh
. "$here/../lib/debian-rootfs.sh"
rootfs_begin "$dir"
# shellcheck disable=SC2086 # a list of names
rootfs_unpack $packages
rootfs_skeleton
rootfs_require_rxe_provider

# Every dynamic executable and provider must resolve all its libraries
# inside the tree (needs chroot, i.e. root).
if [ "$(id -u)" -eq 0 ]; then
  rootfs_check_libs "$tmp"/usr/bin/* "$tmp"/usr/lib/*/libibverbs/*.so
  # perftest exits 1 after --version and --help alike.
  chroot "$tmp" /usr/bin/ib_send_bw --version | grep -q '^Version:'
else
  echo "make-rootfs: not root: library check in a chroot skipped" >&2
fi
rootfs_commit
