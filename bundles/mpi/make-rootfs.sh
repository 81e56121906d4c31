#!/bin/sh
# Builds the mpi rootfs into ROOTFS (default ./rootfs next to this script):
# Debian's Open MPI (orted, mpirun, libmpi and its MCA components), UCX
# (libucx0 with its verbs transports, ucx_info), libibverbs with the rxe
# provider and busybox-static for a shell, plus mpi-jacobi and mpi-probe
# from a crx build dir into /usr/local/bin. Packages are fetched with
# `apt-get download` and unpacked with `dpkg-deb -x`; nothing is installed
# on the host.
#
# Usage: make-rootfs.sh [--build-dir DIR] [ROOTFS]
#   --build-dir DIR  crx build dir holding bundles/mpi/mpi-jacobi and
#                    mpi-probe (default: $CRX_BUILD_DIR, else <repo>/build)
# The .debs are cached under ${CRX_CACHE:-~/.cache/crx}/bundles/debs, one
# file per package version. ROOTFS is replaced only once the new tree is
# complete; a failed run leaves nothing behind.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

# Run-time closure of orted, the programs, every MCA/PMIx/UCX component
# and the verbs providers (checked again below), not apt's: openssh-client
# (openmpi-bin's Depends, for the rsh launcher we replace), debconf, adduser
# and the compilers are never needed inside. libhwloc-plugins is left out:
# hwloc's optional plugins (X11, OpenCL, PCI) are not needed for a CPU map.
packages="libc6 libgcc-s1 libstdc++6 zlib1g libgomp1 libnuma1 libudev1
libevent-core-2.1-7 libevent-pthreads-2.1-7 libhwloc15 libpmix2 libmunge2 libuuid1 libatomic1
libfabric1 libpsm-infinipath1 libpsm2-2 librdmacm1 libibverbs1
ibverbs-providers libnl-3-200 libnl-route-3-200 libucx0 ucx-utils
libopenmpi3 openmpi-common openmpi-bin ibverbs-utils busybox-static"

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
progs="mpi-jacobi mpi-probe"
for p in $progs; do
  if [ ! -x "$build/bundles/mpi/$p" ]; then
    echo "make-rootfs: $build/bundles/mpi/$p not found; build it with" \
         "'cmake --build $build --target $p' (needs Open MPI: tests/setup.sh)" \
         "or name another build dir (--build-dir, CRX_BUILD_DIR)" >&2
    exit 1
  fi
done

cache=${CRX_CACHE:-$HOME/.cache/crx}/bundles/debs
mkdir -p "$cache" "$(dirname "$dir")"
dl=$(mktemp -d "$cache/.download.XXXXXX")
tmp=$(mktemp -d "$(dirname "$dir")/.$(basename "$dir").XXXXXX")
old=
trap 'rm -rf "$dl" "$tmp" ${old:+"$old"}' EXIT
trap 'exit 1' INT TERM HUP

# As root, apt downloads as root anyway (with a warning) into a directory
# its _apt user cannot write; say so up front. Hashes are checked below.
apt_opts=-q
[ "$(id -u)" -ne 0 ] || apt_opts="-q -o APT::Sandbox::User=root"

# Prints the cached .deb of PACKAGE's candidate version, downloading it
# first when the cache lacks it or holds a file with the wrong hash.
fetch() {
  fields=$(apt-cache show --no-all-versions "$1" 2>/dev/null |
           awk '/^$/ { exit } /^Version: / { v = $2 } /^Filename: / { f = $2 }
                /^SHA256: / { s = $2 } END { if (v && f && s) print v, f, s }') || true
  if [ -z "$fields" ]; then
    echo "make-rootfs: no downloadable candidate for $1 (run apt-get update?)" >&2
    return 1
  fi
  # shellcheck disable=SC2086 # version, pool file, hash
  set -- "$1" $fields
  deb=$cache/$(basename "$3")
  if [ -f "$deb" ] && echo "$4  $deb" | sha256sum -c --status; then
    echo "$deb"
    return 0
  fi
  # shellcheck disable=SC2086
  (cd "$dl" && apt-get download $apt_opts "$1=$2" >&2) || return 1
  set -- "$@" "$dl"/*.deb
  if [ $# -ne 5 ] || ! echo "$4  $5" | sha256sum -c --status; then
    echo "make-rootfs: download of $1=$2 failed or does not match its SHA256" >&2
    return 1
  fi
  mv "$5" "$deb"
  echo "$deb"
}

for p in $packages; do
  deb=$(fetch "$p")
  dpkg-deb -x "$deb" "$tmp"
done

chmod 755 "$tmp"
for d in bin sbin usr/sbin usr/local/bin proc sys dev tmp root run log; do mkdir -p "$tmp/$d"; done
chmod 1777 "$tmp/tmp"
for p in $progs; do cp "$build/bundles/mpi/$p" "$tmp/usr/local/bin/$p"; done
# Debian's alternatives (mpirun -> /etc/alternatives/mpirun -> mpirun.openmpi)
# are made by maintainer scripts, which never run here.
ln -sf orterun "$tmp/usr/bin/mpirun"
ln -sf orterun "$tmp/usr/bin/mpiexec"
# Likewise libpsm-infinipath1's libpsm_infinipath.so.1 (mtl psm, libfabric).
for f in "$tmp"/usr/lib/libpsm1/libpsm_infinipath.so.1.*; do
  ln -sf "${f#"$tmp"}" "$(echo "$tmp"/usr/lib/*-linux-gnu/libinfinipath.so.4 | sed 's|/[^/]*$||')/libpsm_infinipath.so.1"
done
for applet in $("$tmp/bin/busybox" --list-full); do
  case $applet in */*) ;; *) continue ;; esac  # linuxrc
  name=${applet##*/}
  [ -e "$tmp/bin/$name" ] || [ -e "$tmp/usr/bin/$name" ] || [ -e "$tmp/sbin/$name" ] ||
    [ -e "$tmp/usr/sbin/$name" ] || ln -s /bin/busybox "$tmp/$applet"
done
printf '%s\n' "root:x:0:0:root:/root:/bin/sh" "nobody:x:65534:65534:nobody:/:/bin/false" \
  > "$tmp/etc/passwd"
printf '%s\n' "root:x:0:" "nogroup:x:65534:" > "$tmp/etc/group"
printf '%s\n' "127.0.0.1 localhost" "::1 localhost" > "$tmp/etc/hosts"
printf '%s\n' "passwd: files" "group: files" "hosts: files dns" > "$tmp/etc/nsswitch.conf"

for f in etc/libibverbs.d/rxe.driver usr/bin/orted etc/openmpi/openmpi-mca-params.conf \
         usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ucx.so usr/bin/ucx_info; do
  if [ ! -e "$tmp/$f" ]; then
    echo "make-rootfs: /$f missing from the packages" >&2
    exit 1
  fi
done

# Every executable, library and dlopen'ed component (MCA, PMIx, UCX,
# libibverbs providers) must resolve all its libraries inside the tree
# (needs chroot, i.e. root).
if [ "$(id -u)" -eq 0 ]; then
  # shellcheck disable=SC2012 # names without odd characters
  ldso=$(cd "$tmp" && ls lib64/ld-linux*.so.* lib/ld-linux*.so.* 2>/dev/null | head -n 1)
  missing=
  for f in "$tmp"/usr/local/bin/* "$tmp"/usr/bin/* "$tmp"/usr/lib/*/*.so* \
           "$tmp"/usr/lib/*/libibverbs/*.so "$tmp"/usr/lib/*/ucx/*.so* \
           "$tmp"/usr/lib/*/openmpi/lib/openmpi3/*.so "$tmp"/usr/lib/*/pmix2/lib/pmix/*.so; do
    if [ ! -f "$f" ] || [ -L "$f" ]; then continue; fi
    [ "$(head -c 4 "$f" | tr -d '\177')" = ELF ] || continue
    rel=${f#"$tmp"}
    out=$(chroot "$tmp" "/$ldso" --list "$rel" 2>&1) || out="not found: $out"
    case $out in *"not found"*) missing="$missing $rel" ;; esac
  done
  if [ -n "$missing" ]; then
    echo "make-rootfs: unresolved libraries in:$missing" >&2
    exit 1
  fi
  chroot "$tmp" /usr/bin/ompi_info --parsable --param pml ucx >/dev/null
  chroot "$tmp" /usr/bin/ucx_info -v >/dev/null
else
  echo "make-rootfs: not root: library check in a chroot skipped" >&2
fi

if [ -e "$dir" ]; then
  old=$(mktemp -d "$(dirname "$dir")/.$(basename "$dir").old.XXXXXX")
  mv -T "$dir" "$old/rootfs"
fi
if ! mv -T "$tmp" "$dir"; then
  [ -z "$old" ] || mv -T "$old/rootfs" "$dir"
  exit 1
fi
echo "make-rootfs: $dir" >&2
