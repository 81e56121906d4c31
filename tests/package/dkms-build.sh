#!/bin/sh
# crx-rxe-dkms unpacked into a fresh directory: its DKMS source tree has
# dkms.conf, the series and every patch it names, and the PRE_BUILD step
# (prepare.sh) turns Debian's linux-source-6.1 into a patched rxe tree
# where dkms.conf's MAKE expects it. With CRX_TEST_DKMS_BUILD=<headers dir>
# the module is also built with dkms.conf's make line (minutes).
#   dkms-prepare.sh <output dir of build-deb.sh>
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
deb=$(ls "$1"/crx-rxe-dkms_*_all.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "no crx-rxe-dkms_*.deb in $1"
[ -f /usr/src/linux-source-6.1.tar.xz ] || { echo "linux-source-6.1 not installed: skipped"; exit 77; }
root=$(mktemp -d /tmp/crx-pkg-dkms.XXXXXX)
trap 'rm -rf "$root"' EXIT
dpkg -x "$deb" "$root"
src=$(ls -d "$root"/usr/src/crx-rxe-* | head -n 1)
[ -f "$src/dkms.conf" ] || fail "no dkms.conf in $src"
grep -qx "PACKAGE_VERSION=\"${src##*crx-rxe-}\"" "$src/dkms.conf" || fail "dkms.conf version is not ${src##*crx-rxe-}"
for p in $(grep -v '^[[:space:]]*#' "$src/patches/series" | grep -v '^[[:space:]]*$'); do
  [ -f "$src/patches/$p" ] || fail "series names $p, not in the package"
done
# DKMS runs PRE_BUILD in its copy of the source tree.
cp -a "$src" "$root/build"
(cd "$root/build" && ./prepare.sh) || fail "prepare.sh failed"
rxe=$root/build/drivers/infiniband/sw/rxe
for f in rxe_migr_uverbs.c rxe_migr_abi.h Makefile; do
  [ -f "$rxe/$f" ] || fail "prepare.sh left no $f in drivers/infiniband/sw/rxe"
done
[ -f "$root/build/drivers/infiniband/core/uverbs.h" ] || fail "no core/uverbs.h"
if [ -n "${CRX_TEST_DKMS_BUILD:-}" ]; then
  make -s -C "$CRX_TEST_DKMS_BUILD" M="$rxe" CONFIG_RDMA_RXE=m modules
  [ -f "$rxe/rdma_rxe.ko" ] || fail "no rdma_rxe.ko"
fi
echo "dkms-prepare: ok"
