#!/bin/bash
# Build the patched rdma_rxe.ko for the guest kernel ABI and a complete
# replacement modules tree (stock modules of that ABI + patched rdma_rxe.ko).
#
#   rxe-patches/build.sh [--print-abi]
#
# Output (printed on the last line of stdout): a directory that is meant to be
# mounted on /lib/modules in the guest; it contains <abi>/ with the stock
# modules, the patched kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko, the stock
# module kept as <abi>/stock/rdma_rxe.ko.stock (not seen by depmod; load it
# with insmod for stock-vs-patched comparisons), and modules.dep from depmod -b.
# The guest kernel itself is at <result>/../boot/vmlinuz-<abi>.
#
# Inputs: Debian's linux-image-amd64 (resolves the ABI), linux-source-6.1
# (/usr/src/linux-source-6.1.tar.xz, must be installed), linux-headers-<abi>,
# linux-headers-<abi>-common, linux-kbuild-6.1 and linux-image-<abi>
# (apt-get download + dpkg-deb -x into the cache; nothing is installed on the
# host). Cache: ${CRX_CACHE:-$HOME/.cache/crx}/rxe/<key>, key = hash of the ABI,
# package version, patch series, the UAPI header and this script.
# Host packages: build-essential bc flex bison libelf-dev libssl-dev dwarves
# kmod xz-utils linux-source-6.1.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
cache=${CRX_CACHE:-$HOME/.cache/crx}/rxe
src_tar=/usr/src/linux-source-6.1.tar.xz
uapi=$top/verbs-ext/include/rxe_migr_abi.h

log() { echo "build.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

abi=$(apt-cache depends linux-image-amd64 2>/dev/null |
      sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n1)
[ -n "$abi" ] || die "cannot resolve the guest ABI from linux-image-amd64"
if [ "${1:-}" = "--print-abi" ]; then echo "$abi"; exit 0; fi
ver=$(apt-cache policy "linux-image-$abi" | sed -n 's/^ *Candidate: //p')
[ -f "$src_tar" ] || die "$src_tar missing: apt-get install linux-source-6.1"
src_ver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || true)
[ "$src_ver" = "$ver" ] || log "warning: linux-source-6.1 $src_ver != linux-image-$abi $ver"

series=$here/series
[ -f "$series" ] || die "$series missing"
patches=$(grep -v '^\s*#' "$series" | grep -v '^\s*$' || true)

key=$( { echo "$abi $ver $src_ver"; cat "$series"; for p in $patches; do cat "$here/$p"; done;
         cat "$uapi" 2>/dev/null || true; cat "$0"; } | sha256sum | cut -c1-16)
out=$cache/$key
if [ -f "$out/done" ]; then
    echo "$out/lib/modules"
    exit 0
fi

# Concurrent runs: one lock per cache key (held until exit), taken before
# anything of the key is touched; the loser finds the winner's result.
mkdir -p "$cache"
exec 9>"$cache/$key.lock"
flock 9
if [ -f "$out/done" ]; then
    log "built by a concurrent run"
    echo "$out/lib/modules"
    exit 0
fi

# 1. Debian packages of the ABI, unpacked once per ABI and version.
pkgs=$cache/pkgs-$abi-$ver
exec 8>"$pkgs.lock"	# shared by all keys of this ABI
flock 8
if [ ! -f "$pkgs/done" ]; then
    log "fetching Debian packages for $abi ($ver)"
    rm -rf "$pkgs"; mkdir -p "$pkgs/debs" "$pkgs/root"
    kbuild=$(apt-cache depends "linux-headers-$abi" |
             sed -n 's/^ *Depends: \(linux-kbuild-[0-9.]*\)$/\1/p' | head -n1)
    ( cd "$pkgs/debs" && apt-get download -q "linux-headers-$abi" \
        "linux-headers-${abi%-amd64}-common" "$kbuild" "linux-image-$abi" ) >&2
    for f in "$pkgs"/debs/*.deb; do dpkg-deb -x "$f" "$pkgs/root"; done
    # The headers' Makefile includes the -common Makefile by absolute path.
    sed -i "s#^include /usr/src/#include $pkgs/root/usr/src/#" \
        "$pkgs/root/usr/src/linux-headers-$abi/Makefile"
    rm -rf "$pkgs/debs"
    touch "$pkgs/done"
fi
flock -u 8
headers=$pkgs/root/usr/src/linux-headers-$abi

# 2. rxe sources, patched.
work=$(mktemp -d "$cache/work.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "unpacking drivers/infiniband/sw/rxe from $src_tar"
# core/uverbs.h: ib_uverbs' private structures, read by rxe_migr_uverbs.c
tar -xJf "$src_tar" -C "$work" --strip-components=1 \
    'linux-source-6.1/drivers/infiniband/sw/rxe' \
    'linux-source-6.1/drivers/infiniband/core/uverbs.h'
rxe=$work/drivers/infiniband/sw/rxe
for p in $patches; do
    log "applying $p"
    patch -d "$work" -p1 --no-backup-if-mismatch -s < "$here/$p" || die "$p does not apply"
done
[ -f "$uapi" ] && cp "$uapi" "$rxe/"

# 3. Build out of tree against Debian's headers.
log "building rdma_rxe.ko"
make -s -C "$headers" M="$rxe" CONFIG_RDMA_RXE=m -j2 modules >&2 ||
    die "module build failed"
strip --strip-debug "$rxe/rdma_rxe.ko"

# 4. Replacement modules tree, assembled inside the work dir (removed on
# exit) and renamed into place as a whole.
tmp=$work/out
mkdir -p "$tmp/lib/modules" "$tmp/boot"
cp -a "$pkgs/root/lib/modules/$abi" "$tmp/lib/modules/"
cp "$pkgs/root/boot/vmlinuz-$abi" "$pkgs/root/boot/config-$abi" "$tmp/boot/"
mdir=$tmp/lib/modules/$abi
rm -f "$mdir/build" "$mdir/source"
mkdir -p "$mdir/stock"
mv "$mdir/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko" "$mdir/stock/rdma_rxe.ko.stock"
cp "$rxe/rdma_rxe.ko" "$mdir/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko"
depmod -b "$tmp" "$abi"
echo "$abi $ver key=$key patches: $patches" > "$tmp/done"
rm -rf "$out"	# a leftover without done (interrupted run)
mv -T "$tmp" "$out"
log "done: $out"
echo "$out/lib/modules"
