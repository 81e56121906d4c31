#!/bin/sh
# The package installed into a clean directory (dpkg -x): its files are
# where they belong, the installed crx answers --version, runs a busybox
# container and hands checkpoint to the installed crx-migrate.
#   installed-run.sh <output dir of build-deb.sh> <source dir>   (root)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
out=$1 src=$2
[ "$(id -u)" -eq 0 ] || { echo "needs root: skipped"; exit 77; }
root=$(install_root "$out" run)
trap 'rm -rf "$root"' EXIT
for f in usr/bin/crx usr/bin/crx-migrate usr/lib/crx/criu-plugins/crx_ibverbs.so \
         etc/crx/config.yaml lib/systemd/system/crx-receive.service \
         usr/share/man/man8/crx.8.gz usr/share/man/man8/crx-migrate.8.gz \
         usr/share/bash-completion/completions/crx usr/share/doc/crx/copyright; do
  [ -e "$root/$f" ] || fail "$f missing from the package"
done
# Stripped (the debug info is in crx-dbgsym).
for f in usr/bin/crx usr/bin/crx-migrate usr/lib/crx/criu-plugins/crx_ibverbs.so; do
  ! readelf -S "$root/$f" | grep -q '\.debug_info' || fail "$f is not stripped"
done
crx=$root/usr/bin/crx
"$crx" --version | head -n 1 | grep -Eq '^crx version [0-9]' || fail "installed crx --version"
"$crx" checkpoint --help >/dev/null || fail "installed crx cannot reach its crx-migrate"

# A busybox bundle; the config from the installed `crx spec`.
work=$(mktemp -d /tmp/crx-pkg-bundle.XXXXXX)
trap 'rm -rf "$root" "$work"' EXIT
"$src/bundles/busybox/make-rootfs.sh" "$work/bundle/rootfs" >/dev/null
(cd "$work/bundle" && "$crx" spec)
python3 - "$work/bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["sh", "-c", "echo hello from the installed crx; exit 3"]
json.dump(c, open(p, "w"))
PY
id=pkg-$$
state=$work/state
set +e
got=$("$crx" --root "$state" run --bundle "$work/bundle" "$id" </dev/null)
status=$?
set -e
[ "$got" = "hello from the installed crx" ] || fail "container output: $got"
[ "$status" -eq 3 ] || fail "exit status $status, expected the container's 3"
expect_nothing_left "$state" "$id"
echo "installed-run: ok"
