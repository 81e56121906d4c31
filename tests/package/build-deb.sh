#!/bin/sh
# Builds crx's Debian packages with dpkg-buildpackage from a copy of the
# source tree, reusing the binaries of an already built tree (debian/rules,
# CRX_DEB_BUILDDIR) so CI does not compile crx twice.
#   build-deb.sh <source dir> <built build dir> <output dir>
# Output: <output dir>/*.deb, *.changes, build.log. Each debhelper step and
# each .deb is printed as it starts, with the seconds since the start, so a
# time-out shows which step it caught.
set -eu
src=$1 out=$3
# Absolute, and checked here: an empty CRX_DEB_BUILDDIR would make
# debian/rules configure and compile everything again.
build=$(cd "$2" && pwd) || { echo "build-deb: no build tree at $2" >&2; exit 1; }
[ -x "$build/crx" ] || { echo "build-deb: $build has no built crx" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/src"
# The source without build trees, VCS data or generated rootfs (debian/
# artefacts land in the copy, the .debs one level up: in $out).
tar -C "$src" --exclude=./build --exclude='./build-*' --exclude=./.git \
    --exclude=./obj-x86_64-linux-gnu --exclude='./bundles/*/rootfs' -cf - . |
  tar -C "$out/src" -xf -
start=$(date +%s)
# POSIX sh has no pipefail: the status goes through a file.
(cd "$out/src" && CRX_DEB_BUILDDIR=$build \
   dpkg-buildpackage -b -uc -us; echo $? > "$out/status") 2>&1 |
  while IFS= read -r line; do
    printf '%s\n' "$line" >> "$out/build.log"
    case $line in
      "   dh_"*|"   debian/rules "*|"dpkg-deb: building"*)
        step=${line%% -O*}
        echo "build-deb: +$(( $(date +%s) - start )) s: ${step#"${step%%[! ]*}"}" ;;
    esac
  done
if [ "$(cat "$out/status" 2>/dev/null)" != 0 ]; then
  tail -n 40 "$out/build.log" >&2
  echo "build-deb: dpkg-buildpackage failed (log: $out/build.log)" >&2
  exit 1
fi
rm -rf "$out/src" "$out/status"
echo "build-deb: $(( $(date +%s) - start )) s"
ls -l "$out"/*.deb
