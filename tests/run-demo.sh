#!/bin/sh
# The README's run command: set up, build, run a busybox container, then
# live-migrate a counting container between two local qemu guests, then an
# RDMA container between three (partner on the third) with the verbs plugin.
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
echo "== crx migrate: an RDMA container (crx-verbs-seq receiver) g0 -> g2 -> g0 under traffic from g1"
echo "   (the reports' 'verbs' part: objects moved, plugin times; the partner's view: its summary, max_stall_s)"
CRX_BUILD_DIR="$build" /usr/bin/python3 "$top/tests/vm/rdma/test_rdma_migrate.py" -v \
  RdmaMigrateTest.test_2_migrate_there_and_back_under_traffic
