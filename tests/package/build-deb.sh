#!/bin/sh
# Builds crx's Debian packages with dpkg-buildpackage from a copy of the
# source tree, reusing the binaries of an already built tree (debian/rules,
# CRX_DEB_BUILDDIR) so CI does not compile crx twice.
#   build-deb.sh <source dir> <built build dir> <output dir>
# Output: <output dir>/*.deb, *.changes, build.log.
set -eu
src=$1 build=$2 out=$3
rm -rf "$out"
mkdir -p "$out/src"
# The source without build trees, VCS data or generated rootfs (debian/
# artefacts land in the copy, the .debs one level up: in $out).
tar -C "$src" --exclude=./build --exclude='./build-*' --exclude=./.git \
    --exclude=./obj-x86_64-linux-gnu --exclude='./bundles/*/rootfs' -cf - . |
  tar -C "$out/src" -xf -
start=$(date +%s)
if ! (cd "$out/src" && CRX_DEB_BUILDDIR=$(cd "$build" && pwd) \
      dpkg-buildpackage -b -uc -us) > "$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log" >&2
  echo "build-deb: dpkg-buildpackage failed (log: $out/build.log)" >&2
  exit 1
fi
rm -rf "$out/src"
echo "build-deb: $(( $(date +%s) - start )) s"
ls -l "$out"/*.deb
