#!/bin/sh
# DKMS PRE_BUILD of crx-rxe-dkms, run in DKMS's copy of this directory:
# unpacks the rdma_rxe sources (and ib_uverbs' private uverbs.h, which the
# patched driver includes as ../../core/uverbs.h) from Debian's
# linux-source-6.1, keeping the kernel tree's layout under ./drivers, and
# applies patches/series. A patch that no longer applies (a newer 6.1
# point release changed rxe) stops the build with its name.
set -eu
src_tar=${CRX_RXE_LINUX_SOURCE:-/usr/src/linux-source-6.1.tar.xz}
[ -f "$src_tar" ] || { echo "prepare.sh: $src_tar missing (apt-get install linux-source-6.1)" >&2; exit 1; }
rm -rf drivers
tar -xJf "$src_tar" --strip-components=1 \
    linux-source-6.1/drivers/infiniband/sw/rxe \
    linux-source-6.1/drivers/infiniband/core/uverbs.h
for p in $(grep -v '^[[:space:]]*#' patches/series | grep -v '^[[:space:]]*$'); do
    patch -p1 --no-backup-if-mismatch -s < "patches/$p" ||
        { echo "prepare.sh: $p does not apply to $src_tar" >&2; exit 1; }
done
cp rxe_migr_abi.h drivers/infiniband/sw/rxe/
# A module version, which Debian's rdma_rxe has none of: DKMS refuses to
# install a module whose version equals the in-tree one's ("exactly
# matches ... DKMS will not replace this module"), and two empty versions
# are equal. It also tells an operator which rdma_rxe is loaded
# (/sys/module/rdma_rxe/version, modinfo).
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
[ -n "$ver" ] || { echo "prepare.sh: no PACKAGE_VERSION in dkms.conf" >&2; exit 1; }
echo "MODULE_VERSION(\"$ver-crx\");" >> drivers/infiniband/sw/rxe/rxe.c
