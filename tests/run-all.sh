#!/bin/sh
# The README's test command: set up, build, and pass every test
# (unit, host integration as root, qemu-guest tests).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tests/setup.sh"
build=${CRX_BUILD_DIR:-$top/build}
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build"
cd "$build"
ctest --output-on-failure --timeout 1800 "$@"
