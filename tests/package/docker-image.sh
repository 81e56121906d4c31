#!/bin/sh
# Opt-in (CRX_TEST_IMAGE=1; not in the default run: the image build
# compiles crx and runs its unit tests again, ~15-25 min on 2 cores).
# Builds the top-level Dockerfile without a Docker engine, with buildah
# (vfs storage, chroot isolation, root), from a clean copy of the tree
# (`git archive HEAD`, or the tree without build dirs where there is no
# .git), on a bookworm base made with mmdebstrap when no registry can be
# reached. Then checks the final image: crx --version runs in it, the
# crx package is installed with criu, the .debs are in /opt/crx, and
# nothing of the build stage (compiler, sources, build tree) came along.
#   CRX_TEST_IMAGE=1 docker-image.sh <source dir>       (root)
# CRX_IMAGE_STORE (default /var/tmp/crx-image) keeps buildah's storage and
# the base image between runs; CRX_IMAGE_BASE names another base image.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
[ "${CRX_TEST_IMAGE:-0}" = 1 ] || { echo "CRX_TEST_IMAGE=1 not set: skipped (rebuilds crx in the image)"; exit 77; }
[ "$(id -u)" -eq 0 ] || fail "needs root (buildah with chroot isolation)"
command -v buildah >/dev/null || fail "buildah missing: apt-get install buildah"
src=$(cd "$1" && pwd)
store=${CRX_IMAGE_STORE:-/var/tmp/crx-image}
B="buildah --root $store/storage --runroot $store/run --storage-driver vfs"
mkdir -p "$store"
base=${CRX_IMAGE_BASE:-localhost/debian:bookworm}
if ! $B inspect --type image "$base" >/dev/null 2>&1; then
  [ "$base" = localhost/debian:bookworm ] || fail "base image $base not in $store"
  command -v mmdebstrap >/dev/null || fail "mmdebstrap missing: apt-get install mmdebstrap"
  echo "docker-image: making $base with mmdebstrap"
  rm -f "$store/bookworm.tar"
  mmdebstrap --quiet --variant=minbase bookworm "$store/bookworm.tar" http://deb.debian.org/debian
  c=$($B from scratch)
  $B add "$c" "$store/bookworm.tar" / >/dev/null
  $B commit -q "$c" "$base" >/dev/null
  $B rm "$c" >/dev/null
  rm -f "$store/bookworm.tar"
fi

ctx=$(mktemp -d /var/tmp/crx-image-ctx.XXXXXX)
c=
cleanup() {
  [ -z "$c" ] || $B rm "$c" >/dev/null 2>&1 || true
  rm -rf "$ctx"
}
trap cleanup EXIT
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$src" archive HEAD | tar -C "$ctx" -xf -
else
  tar -C "$src" --exclude=./build --exclude='./build-*' --exclude='./obj-*' \
      --exclude='./bundles/*/rootfs' -cf - . | tar -C "$ctx" -xf -
fi
tag=localhost/crx:test
$B rmi -f "$tag" >/dev/null 2>&1 || true
start=$(date +%s)
if ! $B bud --force-rm --isolation chroot --build-arg BASE="$base" -t "$tag" "$ctx" > "$store/bud.log" 2>&1; then
  tail -n 40 "$store/bud.log" >&2
  fail "buildah bud failed (log: $store/bud.log)"
fi
secs=$(( $(date +%s) - start ))
$B rmi --prune >/dev/null 2>&1 || true   # the previous run's image, untagged
# dpkg-buildpackage fails on a failed unit test; this checks they ran.
grep -q '100% tests passed, 0 tests failed out of' "$store/bud.log" ||
  fail "no unit test run in the build stage (log: $store/bud.log)"

c=$($B from "$tag")
img() { $B run --isolation chroot "$c" -- "$@"; }
v=$(img crx --version) || fail "crx --version does not run in the image"
echo "$v" | head -n 1 | grep -q '^crx version ' || fail "crx --version printed: $v"
st=$(img dpkg-query -W -f='${Status}\n' crx criu) || fail "crx or criu not installed in the image"
[ "$(echo "$st" | grep -cx 'install ok installed')" = 2 ] || fail "crx or criu not installed in the image: $st"
img sh -c 'ls /opt/crx/crx_*_amd64.deb /opt/crx/crx-rxe-dkms_*_all.deb' >/dev/null ||
  fail "the .debs are not in /opt/crx"
img test -x /usr/local/sbin/crx-install-on-host || fail "no crx-install-on-host"
! img sh -c 'ls /var/cache/apt/archives/*.deb' >/dev/null 2>&1 || fail "apt's downloaded .debs left in the image"
for f in /usr/bin/c++ /usr/bin/cmake /src /out; do
  ! img test -e "$f" || fail "$f from the build stage is in the final image"
done
size=$($B images --format '{{.Size}}' "$tag")
echo "docker-image: built in $secs s; $tag: $size; $(echo "$v" | head -n 1)"
