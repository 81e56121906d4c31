#!/bin/sh
# One set-up step for a fresh Debian bookworm machine: the apt packages crx
# builds and tests with (Open MPI + UCX for bundles/mpi and tests/vm/mpi;
# Debian's packaging tools, dkms and systemd-analyze for tests/package; clang +
# libclang-rt-dev, whose libclang_rt.fuzzer-x86_64.a is libFuzzer, for
# tests/fuzz; lld, which links the sanitizer build faster; ccache, which the
# build uses when present),
# then the parts that cache themselves under
# ${CRX_CACHE:-~/.cache/crx} (guest kernel + initramfs, patched rxe module).
# Idempotent and quick when everything is in place.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")

packages="cmake g++ ninja-build pkg-config clang libclang-rt-dev lld
  libseccomp-dev libcap-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libprotobuf-c-dev protobuf-c-compiler libssl-dev libxxhash-dev liblz4-dev libarchive-dev
  libnl-3-dev libnl-route-3-dev libelf-dev
  busybox-static runc crun criu iptables iproute2 procps psmisc util-linux
  qemu-system-x86 kmod cpio xz-utils rdma-core ibverbs-utils libibverbs-dev perftest
  bc flex bison dwarves linux-source-6.1
  python3-matplotlib
  containerd umoci bsdutils python3 hyperfine time
  openmpi-bin libopenmpi-dev ucx-utils libucx0
  dpkg-dev debhelper dh-dkms dkms fakeroot lintian systemd ccache"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing$missing" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# Guest kernel, modules and initramfs for the qemu test bed.
if [ -x "$top/tests/vm/setup.sh" ]; then "$top/tests/vm/setup.sh"; fi
# Patched rdma_rxe.ko for the guest kernel (cached by ABI + patch hash).
if [ -x "$top/rxe-patches/build.sh" ]; then "$top/rxe-patches/build.sh" >/dev/null; fi
