#!/bin/sh
# The README's run command: set up, build, run a busybox container, then
# live-migrate a counting container between two local qemu guests.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tests/setup.sh"
build=${CRX_BUILD_DIR:-$top/build}
cmake -S "$top" -B "$build" -G Ninja >/dev/null
ninja -C "$build" crx
bundle="$top/bundles/busybox"
[ -x "$bundle/rootfs/bin/busybox" ] || "$bundle/make-rootfs.sh"
echo "== crx run: a busybox container"
"$build/crx" --root /run/crx run --bundle "$bundle" "demo-$$"
echo "== crx migrate: a counting container from guest g0 to guest g1"
ninja -C "$build"
/usr/bin/python3 "$top/tests/vm/migrate_demo.py" "$build"
