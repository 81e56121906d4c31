#!/bin/bash
# Set up the qemu test bed of tests/vm (idempotent; see tests/vm/README.md).
#
#  1. installs the Debian packages the test bed needs (unless --no-apt),
#  2. resolves the current bookworm kernel ABI from linux-image-amd64 and
#     unpacks that kernel (vmlinuz + modules) into the cache, never onto the
#     host's /boot or /lib/modules,
#  3. builds the guest initramfs (busybox-static) and extracts the ELF
#     kernel (qemu boots it via PVH, skipping the slow xz decompression)
#     via testbed.py.
#
# Everything lives under ${CRX_CACHE:-$HOME/.cache/crx}/vm/, keyed by its
# inputs, and is reused while they are unchanged.  The result is described by
# vm/current.env, which testbed.py reads.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${CRX_CACHE:-$HOME/.cache/crx}/vm
install_packages=1
for arg in "$@"; do
  case $arg in
    --no-apt) install_packages=0 ;;
    -h|--help) echo "usage: $0 [--no-apt]"; exit 0 ;;
    *) echo "setup.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

say() { echo "vm setup: $*" >&2; }

packages=(qemu-system-x86 busybox-static cpio kmod criu iptables rdma-core
          ibverbs-utils perftest iproute2 util-linux python3)
if (( install_packages )); then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' \
      || missing+=("$p")
  done
  if (( ${#missing[@]} )); then
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

# --- the guest kernel: the ABI linux-image-amd64 currently depends on --------
# One apt-cache call (each one rebuilds apt's cache here: seconds): the
# candidate's "Depends: linux-image-<abi> (= <version>)".
read -r abi_pkg abi_ver < <(apt-cache show --no-all-versions linux-image-amd64 2>/dev/null \
  | sed -n 's/^Depends:.*\(linux-image-[0-9][^ ,]*\)\( (= \([^)]*\))\)\{0,1\}.*/\1 \3/p' \
  | head -n1) || true
[[ -n ${abi_pkg:-} ]] || { say "cannot resolve the ABI from linux-image-amd64 (apt-get update?)"; exit 1; }
abi=${abi_pkg#linux-image-}
if [[ -z ${abi_ver:-} ]]; then
  abi_ver=$(apt-cache policy "$abi_pkg" | awk '$1 == "Candidate:" { print $2 }')
fi
kdir=$cache/kernel/${abi_pkg}_${abi_ver}
if [[ ! -e $kdir/.complete ]]; then
  say "fetching $abi_pkg $abi_ver"
  rm -rf "$kdir"
  mkdir -p "$kdir"
  dl=$(mktemp -d "$cache/kernel/.dl.XXXXXX")
  trap 'rm -rf "$dl"' EXIT
  (cd "$dl" && apt-get download -qq "$abi_pkg=$abi_ver" 2>&1 | { grep -v 'unsandboxed as root' || true; } >&2)
  dpkg-deb -x "$dl"/*.deb "$kdir/root"
  rm -rf "$dl"
  trap - EXIT
  # The share mounted on the guest's /lib/modules: <abi>/... with modules.dep.
  mods=
  for d in "$kdir"/root/lib/modules "$kdir"/root/usr/lib/modules; do
    [[ -d $d ]] && { mods=$d; break; }
  done
  [[ -d $mods/$abi ]] || { say "no modules for $abi in $abi_pkg"; exit 1; }
  depmod -b "${mods%/lib/modules}" "$abi"
  ln -sfn "${mods#"$kdir"/}" "$kdir/modules"
  ln -sfn "root/boot/vmlinuz-$abi" "$kdir/vmlinuz"
  touch "$kdir/.complete"
fi

# --- the initramfs, keyed by ABI and the hash of its recipe -------------------
initrd=$(/usr/bin/python3 "$here/testbed.py" build-initramfs --abi "$abi" --modules "$kdir/modules")
vmlinux=$(/usr/bin/python3 "$here/testbed.py" extract-vmlinux "$kdir/vmlinuz")

tmp=$(mktemp "$cache/.current.XXXXXX")
cat > "$tmp" <<ENV
CRX_VM_ABI=$abi
CRX_VM_KERNEL_PACKAGE=${abi_pkg}=${abi_ver}
CRX_VM_VMLINUZ=$kdir/vmlinuz
CRX_VM_MODULES=$kdir/modules
CRX_VM_VMLINUX=$vmlinux
CRX_VM_INITRD=$initrd
ENV
mv -f "$tmp" "$cache/current.env"
say "ready: kernel $abi ($abi_ver), initramfs $initrd"
