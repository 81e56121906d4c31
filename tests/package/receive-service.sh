#!/bin/sh
# The packaged crx-receive.service's ExecStart line, run as systemd would
# (systemd is not PID 1 in the test bed): the unpacked crx with a test
# config in place of /etc/crx/config.yaml, stderr a file named by
# JOURNAL_STREAM as the journal's stream would be. It listens, stops
# cleanly on SIGTERM (status 0, image dir unmounted), and an error reaches
# the journal with priority <3>.
#   receive-service.sh <output dir of build-deb.sh>   (root)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
[ "$(id -u)" -eq 0 ] || { echo "needs root: skipped"; exit 77; }
root=$(install_root "$1" receive)
pid=
cleanup() {
  [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
  umount "$root/images" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
exec_start=$(sed -n 's/^ExecStart=//p' "$root/lib/systemd/system/crx-receive.service")
port=$(( 20000 + $$ % 20000 ))
head -c 32 /dev/urandom | base64 > "$root/key"
chmod 600 "$root/key"
config() {  # config [extra line of the migration section]
  cat > "$root/config.yaml" <<YAML
migration:
  listen: 127.0.0.1:$port
  key_file: $root/key
  image_dir: $root/images
${1:-}
YAML
}
config
cmd=$(printf '%s\n' "$exec_start" | sed "s#^/usr/bin/crx #$root/usr/bin/crx #; s#/etc/crx/config.yaml#$root/config.yaml#")
echo "ExecStart: $cmd"

: > "$root/journal"
stream=$(stat -c '%d:%i' "$root/journal")

# Pages travel in kernel TLS (runtime/migrate/README.md). On a host kernel
# without it the receiver must refuse to start, in one journal line that
# says so; the service is then tested in clear text.
if ! grep -qw tls /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null && ! modprobe -q tls 2>/dev/null; then
  set +e
  JOURNAL_STREAM=$stream $cmd >"$root/stdout" 2>"$root/journal"
  status=$?
  set -e
  cat "$root/journal"
  [ "$status" -ne 0 ] || fail "started without kernel TLS"
  grep -q "^<3>crx: .*no TLS support for sockets" "$root/journal" || fail "no kernel-TLS line in the journal"
  [ "$(wc -l < "$root/journal")" -eq 1 ] || fail "more than one line without kernel TLS"
  echo "no kernel TLS on this host: the service runs on with insecure_plaintext"
  config "  insecure_plaintext: true"
  : > "$root/journal"
fi
JOURNAL_STREAM=$stream $cmd >"$root/stdout" 2>>"$root/journal" &
pid=$!
i=0
until grep -q "listening on 127.0.0.1:$port" "$root/journal"; do
  i=$((i + 1))
  # up to 60 s: tests/run-all.sh runs this beside the vm tests at idle priority
  [ $i -lt 600 ] && kill -0 "$pid" 2>/dev/null || { cat "$root/journal" >&2; fail "receiver did not listen"; }
  sleep 0.1
done
grep -q " $root/images " /proc/self/mountinfo || fail "image dir is not mounted while listening"
kill -TERM "$pid"
set +e
wait "$pid"
status=$?
set -e
pid=
cat "$root/journal"
[ "$status" -eq 0 ] || fail "exit status $status after SIGTERM, expected 0"
grep -q "stopped by a signal" "$root/journal" || fail "no stop message"
! grep -q " $root/images " /proc/self/mountinfo || fail "image dir still mounted after stop"

# An error (no key file) in the journal's terms: priority 3, no timestamp.
rm "$root/key"
set +e
JOURNAL_STREAM=$stream $cmd >"$root/stdout" 2>"$root/journal"
status=$?
set -e
[ "$status" -ne 0 ] || fail "started without a key file"
grep -q '^<3>crx: .*key' "$root/journal" || { cat "$root/journal" >&2; fail "error not at journal priority 3"; }
echo "receive-service: ok"
