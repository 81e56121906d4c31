#!/bin/sh
# `crx --version` has runc's shape, line by line, and tells the truth:
# libseccomp as pkg-config knows it, criu as `criu --version` says, and
# "criu: not found" for a --criu that does not exist.
#   version-shape.sh <crx binary> <source dir>
set -eu
crx=$1 src=$2
fail() { echo "version-shape: $*" >&2; exit 1; }
out=$("$crx" --version)
printf '%s\n' "$out"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 5 ] || fail "expected 5 lines"
line() { printf '%s\n' "$out" | sed -n "$1p"; }
version=$(sed -n 's/^project(crx VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ "$(line 1)" = "crx version $version" ] || fail "line 1: $(line 1)"
line 2 | grep -Eq '^commit: ([0-9a-f]{40}(-dirty)?|unknown|[0-9][^ ]*)$' || fail "line 2: $(line 2)"
spec=$(sed -n 's/.*kOciVersion\[\] = "\(.*\)";/\1/p' "$src/runtime/spec/version.hpp")
[ "$(line 3)" = "spec: $spec" ] || fail "line 3: $(line 3)"
[ "$(line 4)" = "libseccomp: $(pkg-config --modversion libseccomp)" ] || fail "line 4: $(line 4)"
if command -v criu >/dev/null; then
  want=$(criu --version | sed -n 's/^Version: //p')
else
  want="not found"
fi
[ "$(line 5)" = "criu: $want" ] || fail "line 5: $(line 5)"
# -v is the same; --criu picks the binary; a subcommand's flags are its own.
[ "$("$crx" -v)" = "$out" ] || fail "-v differs from --version"
"$crx" --criu /nonexistent/criu --version | tail -n 1 | grep -qx 'criu: not found' ||
  fail "--criu /nonexistent/criu not honoured"
echo "version-shape: ok"
