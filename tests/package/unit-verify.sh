#!/bin/sh
# systemd-analyze verify on the packaged crx-receive.service: no error and
# no warning. systemd checks that ExecStart's binary exists and that the
# Documentation man page opens, so a copy of the unit names the unpacked
# binary and MANPATH the unpacked man pages.
#   unit-verify.sh <output dir of build-deb.sh>
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
root=$(install_root "$1" unit)
trap 'rm -rf "$root"' EXIT
unit=$root/lib/systemd/system/crx-receive.service
grep -qx 'ExecStart=/usr/bin/crx receive --config /etc/crx/config.yaml' "$unit" ||
  fail "unexpected ExecStart: $(grep ExecStart= "$unit")"
mkdir "$root/verify"
sed "s#/usr/bin/crx#$root/usr/bin/crx#" "$unit" > "$root/verify/crx-receive.service"
msgs=$(MANPATH=$root/usr/share/man systemd-analyze verify "$root/verify/crx-receive.service" 2>&1) ||
  fail "systemd-analyze verify failed: $msgs"
[ -z "$msgs" ] || fail "systemd-analyze verify warns: $msgs"
echo "unit-verify: ok"
