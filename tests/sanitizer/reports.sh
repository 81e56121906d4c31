#!/bin/sh
# The sanitizer build's report check (tests/sanitizer/README.md):
#   reports.sh clear <dir>   empty <dir> before the suites (fixture setup)
#   reports.sh check <dir>   fail, printing each, if any report is there
# The unit and host tests, and every crx and crx-migrate they start, write
# a sanitizer report to <dir>/report.<program>.<pid> (ASAN_OPTIONS
# log_path, set by ctest): that also catches a report from a process whose
# failure a test expects or never sees (a container's init before exec,
# crx-migrate behind crx, a crx whose exit status a test ignores).
set -eu
what=$1 dir=$2
case $what in
  clear)
    rm -rf "$dir"
    mkdir -p "$dir"
    ;;
  check)
    [ -d "$dir" ] || { echo "no $dir: the fixture setup did not run" >&2; exit 1; }
    n=0
    for f in "$dir"/*; do
      [ -e "$f" ] || continue
      n=$((n + 1))
      echo "=== $f" >&2
      head -c 20000 "$f" >&2
    done
    if [ $n -gt 0 ]; then
      echo "FAIL: $n sanitizer report(s) under $dir" >&2
      exit 1
    fi
    echo "no sanitizer report under $dir"
    ;;
  *)
    echo "usage: $0 clear|check <dir>" >&2
    exit 2
    ;;
esac
