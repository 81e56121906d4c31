# Shared by the package tests: unpack the crx .deb into a fresh root.
#   . common.sh; root=$(install_root <output dir of build-deb.sh> <stem>)
fail() { echo "$(basename "$0"): $*" >&2; exit 1; }
install_root() {
  deb=$(ls "$1"/crx_*_amd64.deb 2>/dev/null | head -n 1)
  [ -n "$deb" ] || fail "no crx_*.deb in $1 (did package_deb_build pass?)"
  r=$(mktemp -d "/tmp/crx-pkg-$2.XXXXXX")
  dpkg -x "$deb" "$r"
  echo "$r"
}
# What tests/host's expect_nothing_left checks: state dir, cgroups, mounts.
expect_nothing_left() {  # <state root> <id>
  [ ! -e "$1/$2" ] || fail "state dir left: $1/$2"
  left=$(find /sys/fs/cgroup -name "$2" -type d 2>/dev/null | head -n 3)
  [ -z "$left" ] || fail "cgroup left: $left"
  ! grep -q -- "$2" /proc/self/mountinfo || fail "mount left for $2"
}
