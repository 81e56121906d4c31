#!/bin/sh
# The README's test command: set up, build, and pass every test
# (unit, host integration as root, qemu-guest tests, packaging), and the
# sanitizer build (tests/sanitizer/README.md, built in the background): a
# second build dir with clang and ASan+UBSan where the unit and host
# suites run again and the fuzz targets (tests/fuzz) are fuzzed for
# CRX_FUZZ_SECONDS (default 10) each. The
# sanitizer build runs the labels unit, host and fuzz when no ctest
# arguments are given, otherwise those of them that the arguments name
# (`tests/run-all.sh -L unit` runs the unit suite in both builds, `-L fuzz`
# the fuzz targets, `-L vm` nothing there); CRX_FUZZ=0 skips it.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tests/setup.sh"
build=${CRX_BUILD_DIR:-$top/build}
san_build=${CRX_FUZZ_BUILD_DIR:-$top/build-fuzz}
san_labels=
if [ "${CRX_FUZZ:-1}" != 0 ]; then
  for label in unit host fuzz; do
    if [ $# -eq 0 ]; then
      san_labels="$san_labels $label"
    else
      case " $* " in *$label*) san_labels="$san_labels $label" ;; esac
    fi
  done
fi
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build"
status=0
# ctest's record of each test's time, kept between runs: with it, ctest
# -j2 starts the longest tests first, so the vm tests that share the cores
# pair with the longest of them instead of leaving it to run alone at the
# end (a scheduling hint only; a fresh clone without it runs the same
# tests in their declared order).
costs=$build/Testing/Temporary/CTestCostData.txt
kept_costs=${CRX_CACHE:-$HOME/.cache/crx}/ctest/CTestCostData.txt
if [ ! -e "$costs" ] && [ -e "$kept_costs" ]; then
  mkdir -p "$(dirname "$costs")" && cp "$kept_costs" "$costs"
fi
# A failed test's verdict is deep inside its output (a vm test prints
# minutes of progress and the guests' state), and a CI page that shows
# only the head and tail of the run loses it. Each stage's ctest log is
# kept ($build/<stage>-tests.log, ctest's LastTest.log, which the next
# stage overwrites), and a failed run ends with every failed case's
# verdict: unittest's FAIL/ERROR line and the first lines of its exception.
keep_log() {  # keep_log <stage>
  cp "$build/Testing/Temporary/LastTest.log" "$build/$1-tests.log" 2>/dev/null || true
}
verdicts() {  # verdicts <log>...: each failed case and its verdict's first lines
  # unittest: "FAIL: case", a traceback, then its first unindented line
  # (the exception: "AssertionError: ..."); GoogleTest:
  # "file:line: Failure" then the expectation, "[  FAILED  ] Suite.Case (n ms)"
  for log in "$@"; do
    [ -e "$log" ] || continue
    awk '/^(FAIL|ERROR): |^\[  FAILED  \] [^ ]+ \(/{print; n=0; t=0; next}
         /^Traceback /{t=1; next}
         t && /^[^ ]/{t=0; n=8}
         /: Failure$/{n=8}
         n>0{print "    " substr($0, 1, 300); n--}' "$log"
  done | head -n 120
}
# Everything but the vm and package labels one test at a time (host tests
# share the host's cgroups and mounts), alone: the background jobs below
# start after it (with them beside it, even at idle priority, it took
# 457 s where about 300 were expected, 2026-11-28: its tests are short
# and share the disk and the kernel's locks with the builds).
(cd "$build" && ctest --output-on-failure --timeout 1800 -LE '^(vm|package)$' "$@") || status=$?
keep_log host
# Work that has no timing in it runs in the background at SCHED_IDLE while
# the vm tests run in the foreground: the qemu guests of the vm label
# leave about half of the two cores idle, and a job at idle priority takes
# only that (measured: vm_rdma_faults 231 s beside a cold sanitizer build,
# 228 s alone; tests/sanitizer/README.md). Each background job logs to a
# file, shown when it fails, and leaves its exit status beside it.
#   - the package label's builds and unpacked checks (the .debs, lintian,
#     DKMS; not its guest test, which runs at the end);
#   - the sanitizer build (only what its labels run: build-fuzz's `all`
#     would instrument every tool, bench program and the CRIU plugin too),
#     then its fuzz targets (bounded in time, not in CPU: at idle priority
#     they make fewer runs, never a wrong verdict).
bg_pids=
stop_background() {  # each job's subshell and what it runs (chrt execs it)
  for pid in $bg_pids; do
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
  done
}
trap stop_background EXIT
background() {  # background <log> <command...>: $log.status gets its status
  log=$1
  shift
  rm -f "$log.status"
  (set +e; chrt --idle 0 "$@" >"$log" 2>&1; echo $? >"$log.status") &
  echo $! >"$log.pid"
  bg_pids="$bg_pids $!"
}
finished() {  # finished <name> <log>: waits for it; shows its log if it failed
  wait "$(cat "$2.pid")" || true
  s=$(cat "$2.status" 2>/dev/null || echo 1)
  if [ "$s" != 0 ]; then
    tail -n 80 "$2" >&2
    echo "run-all.sh: $1 failed (whole log: $2)" >&2
  fi
  return "$s"
}
package_log=$build/package-tests.log
background "$package_log" \
  sh -c 'cd "$1" && shift && ctest --output-on-failure --timeout 1800 -L "^package\$" -LE "^vm\$" "$@"' \
  - "$build" "$@"
san_log=$san_build/build.log
if [ -n "$san_labels" ]; then
  cmake -S "$top" -B "$san_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCRX_FUZZ=ON >/dev/null
  targets='' regex='' fuzz=0
  for label in $san_labels; do
    case $label in
      fuzz) targets="$targets fuzz-targets" fuzz=1 ;;
      *) targets="$targets $label-tests" regex="$regex|$label" ;;
    esac
  done
  # shellcheck disable=SC2086
  background "$san_log" sh -c \
    'b=$1 fuzz=$2 && shift 2 && ninja -C "$b" '"$targets"' && echo "sanitizer build: done" &&
     if [ "$fuzz" = 1 ]; then cd "$b" && ctest --output-on-failure --timeout 1800 -L "^fuzz\$" "$@"; fi' \
    - "$san_build" "$fuzz" "$@"
fi
# The vm label with -j2: each vm test says how many of the two cores it
# needs (PROCESSORS, 2 unless crx_vm_test_shares_cores() in
# tests/vm/CMakeLists.txt names it 1), so two of the tests whose guests
# mostly wait run side by side.
(cd "$build" && ctest --output-on-failure --timeout 1800 -j2 -L '^vm$' -LE '^package$' "$@") || status=$?
keep_log vm
if [ -e "$costs" ]; then
  mkdir -p "$(dirname "$kept_costs")"
  cp "$costs" "$kept_costs"
fi
finished "the package tests" "$package_log" || status=1
grep -h "tests passed\|Total Test time" "$package_log" || true
# The package label's guest test, on the .debs and the module built above
# (-FA: not again).
(cd "$build" && ctest --output-on-failure --timeout 1800 -L '^package$' -L '^vm$' \
  -FA '^crx_(deb|dkms)$' "$@") || status=$?
if [ -n "$san_labels" ]; then
  if finished "the sanitizer build" "$san_log"; then
    grep -h "tests passed\|Total Test time" "$san_log" || true
    # Anchored: only tests labelled exactly unit or host (never vm tests,
    # which run once, from the first build). With the caller's -L, ctest
    # runs the tests that match both.
    if [ -n "$regex" ]; then
      (cd "$san_build" && ctest --output-on-failure --timeout 1800 -L "^(${regex#|})\$" "$@") || status=$?
    fi
  else
    status=1
  fi
fi
trap - EXIT
if [ "$status" != 0 ]; then
  echo "run-all.sh: failed; the failed cases' verdicts:" >&2
  verdicts "$build/host-tests.log" "$build/vm-tests.log" >&2
fi
exit $status
