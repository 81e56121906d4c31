#!/bin/sh
# crx-rxe-dkms, unpacked into a fresh directory, built and installed by
# DKMS itself (dkms add, build, install) for the qemu guests' Debian 6.1
# kernel, against the headers rxe-patches/build.sh caches. DKMS gets
# private trees (--dkmstree, --sourcetree, --installtree): the host's
# /var/lib/dkms and /lib/modules are not touched. The install tree is a
# copy (hard links) of the guests' stock modules tree, so the result,
# depmod'ed, is what a node has after `apt-get install crx-rxe-dkms`:
# DKMS's rdma_rxe.ko in updates/dkms in front of Debian's. dkms-guest.py
# boots a guest on it.
#   dkms-build.sh <output dir of build-deb.sh>
# Output: <out>/dkms/modules (a Testbed modules_dir), <out>/dkms/version
# (the module version DKMS's build carries), <out>/dkms/srcversion (of
# the .ko DKMS installed).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
deb=$(ls "$1"/crx-rxe-dkms_*_all.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "no crx-rxe-dkms_*.deb in $1"
[ -f /usr/src/linux-source-6.1.tar.xz ] || { echo "linux-source-6.1 not installed: skipped"; exit 77; }
command -v dkms >/dev/null || { echo "dkms not installed: skipped"; exit 77; }
# The guests' kernel (tests/vm/setup.sh) and its headers (rxe-patches/build.sh).
cache=${CRX_CACHE:-$HOME/.cache/crx}
env=$cache/vm/current.env
[ -f "$env" ] || fail "$env missing: run tests/setup.sh"
abi=$(sed -n 's/^CRX_VM_ABI=//p' "$env")
stock=$(sed -n 's/^CRX_VM_MODULES=//p' "$env")
kver=$(sed -n 's/^CRX_VM_KERNEL_PACKAGE=.*=//p' "$env")
headers=$cache/rxe/pkgs-$abi-$kver/root/usr/src/linux-headers-$abi
[ -f "$cache/rxe/pkgs-$abi-$kver/done" ] && [ -d "$headers" ] ||
  fail "no cached linux-headers-$abi ($kver) under $cache/rxe: run tests/setup.sh"
[ -f "$stock/$abi/modules.dep" ] || fail "no stock modules tree $stock/$abi"

work=$1/dkms
rm -rf "$work"
mkdir -p "$work/pkg" "$work/dkms" "$work/modules"
dpkg -x "$deb" "$work/pkg"
src=$(ls -d "$work"/pkg/usr/src/crx-rxe-* | head -n 1)
ver=${src##*crx-rxe-}
[ -f "$src/dkms.conf" ] || fail "no dkms.conf in $src"
grep -qx "PACKAGE_VERSION=\"$ver\"" "$src/dkms.conf" || fail "dkms.conf version is not $ver"
for p in $(grep -v '^[[:space:]]*#' "$src/patches/series" | grep -v '^[[:space:]]*$'); do
  [ -f "$src/patches/$p" ] || fail "series names $p, not in the package"
done
cp -al "$stock/$abi" "$work/modules/"

trees="--dkmstree $work/dkms --sourcetree $work/pkg/usr/src --installtree $work/modules"
log=$work/dkms.log
run() {
  dkms "$@" -m crx-rxe -v "$ver" $trees >> "$log" 2>&1 ||
    { tail -n 30 "$log" >&2; tail -n 30 "$work"/dkms/crx-rxe/"$ver"/build/make.log 2>/dev/null >&2
      fail "dkms $1 failed (log: $log)"; }
}
start=$(date +%s)
run add
run build -k "$abi" --kernelsourcedir "$headers"
# --no-depmod: dkms's depmod knows only /lib/modules; depmod -b below.
run install -k "$abi" --kernelsourcedir "$headers" --no-depmod
ko=$work/modules/$abi/updates/dkms/rdma_rxe.ko
[ -f "$ko" ] || fail "dkms install left no updates/dkms/rdma_rxe.ko (log: $log)"
# The stock module is still there, and not the one depmod resolves.
[ -f "$work/modules/$abi/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko" ] ||
  fail "the stock rdma_rxe.ko is gone from the tree"
r=$work/depmod-root
mkdir -p "$r/lib"
ln -s "$work/modules" "$r/lib/modules"
depmod -b "$r" "$abi"
dep=$(sed -n 's/^\([^:]*\/rdma_rxe\.ko\):.*/\1/p' "$work/modules/$abi/modules.dep")
[ "$dep" = updates/dkms/rdma_rxe.ko ] || fail "depmod resolves rdma_rxe to '$dep', not updates/dkms"
v=$(modinfo -F version "$ko")
[ "$v" = "$ver-crx" ] || fail "DKMS's rdma_rxe.ko has version '$v', not $ver-crx"
modinfo -F parm "$ko" | grep -q '^qpn_min:' || fail "DKMS's rdma_rxe.ko has no qpn_min parameter (not patched?)"
echo "$v" > "$work/version"
modinfo -F srcversion "$ko" > "$work/srcversion"
echo "dkms-build: ok ($(( $(date +%s) - start )) s, $(modinfo -F vermagic "$ko" | cut -d' ' -f1))"
