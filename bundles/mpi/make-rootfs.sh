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

# shellcheck source=SCRIPTDIR/../lib/debian-rootfs.sh
. "$here/../lib/debian-rootfs.sh"
rootfs_begin "$dir"
# shellcheck disable=SC2086 # a list of names
rootfs_unpack $packages
rootfs_skeleton log
for p in $progs; do cp "$build/bundles/mpi/$p" "$tmp/usr/local/bin/$p"; done
# Debian's alternatives (mpirun -> /etc/alternatives/mpirun -> mpirun.openmpi)
# are made by maintainer scripts, which never run here.
ln -sf orterun "$tmp/usr/bin/mpirun"
ln -sf orterun "$tmp/usr/bin/mpiexec"
# Likewise libpsm-infinipath1's libpsm_infinipath.so.1 (mtl psm, libfabric).
for f in "$tmp"/usr/lib/libpsm1/libpsm_infinipath.so.1.*; do
  ln -sf "${f#"$tmp"}" "$(echo "$tmp"/usr/lib/*-linux-gnu/libinfinipath.so.4 | sed 's|/[^/]*$||')/libpsm_infinipath.so.1"
done

rootfs_require_rxe_provider
for f in usr/bin/orted etc/openmpi/openmpi-mca-params.conf \
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
  rootfs_check_libs "$tmp"/usr/local/bin/* "$tmp"/usr/bin/* "$tmp"/usr/lib/*/*.so* \
    "$tmp"/usr/lib/*/libibverbs/*.so "$tmp"/usr/lib/*/ucx/*.so* \
    "$tmp"/usr/lib/*/openmpi/lib/openmpi3/*.so "$tmp"/usr/lib/*/pmix2/lib/pmix/*.so
  chroot "$tmp" /usr/bin/ompi_info --parsable --param pml ucx >/dev/null
  chroot "$tmp" /usr/bin/ucx_info -v >/dev/null
else
  echo "make-rootfs: not root: library check in a chroot skipped" >&2
fi
rootfs_commit
