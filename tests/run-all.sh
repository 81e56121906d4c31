#!/bin/sh
# The README's test command: set up, build, and pass every test
# (unit, host integration as root, qemu-guest tests), then the sanitizer
# build (tests/sanitizer/README.md, built in the background meanwhile): a
# second build dir with clang and ASan+UBSan where the unit and host
# suites run again and the fuzz targets
# (tests/fuzz) are fuzzed for CRX_FUZZ_SECONDS (default 10) each. The
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
san_pid=
if [ -n "$san_labels" ]; then
  cmake -S "$top" -B "$san_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCRX_FUZZ=ON >/dev/null
  # only what these labels run: build-fuzz's `all` would instrument every
  # tool, bench program and the CRIU plugin too
  targets='' regex=''
  for label in $san_labels; do
    case $label in fuzz) targets="$targets fuzz-targets" ;; *) targets="$targets $label-tests" ;; esac
    regex="$regex|$label"
  done
  # Built while the gcc build's tests run, at SCHED_IDLE: the qemu guests
  # of the vm label leave about half of the two cores idle, and a build
  # at idle priority takes only that (measured: vm_rdma_faults 231 s
  # beside a cold sanitizer build, 228 s alone; tests/sanitizer/README.md).
  # Its output goes to a log, shown if it fails.
  # shellcheck disable=SC2086
  chrt --idle 0 ninja -C "$san_build" $targets >"$san_build/build.log" 2>&1 &
  san_pid=$!
  trap 'kill "$san_pid" 2>/dev/null || true' EXIT
fi
status=0
# Everything but the vm label one test at a time (host tests share the
# host's cgroups and mounts); then the vm label with -j2, where each vm
# test says how many of the two cores it needs (PROCESSORS, 2 unless
# crx_vm_test_shares_cores() in tests/vm/CMakeLists.txt names it 1), so
# two of the tests whose guests mostly wait run side by side.
(cd "$build" && ctest --output-on-failure --timeout 1800 -LE '^vm$' "$@") || status=$?
(cd "$build" && ctest --output-on-failure --timeout 1800 -j2 -L '^vm$' "$@") || status=$?
if [ -n "$san_pid" ]; then
  san_built=0
  wait "$san_pid" && san_built=1
  trap - EXIT
  if [ "$san_built" = 1 ]; then
    # Anchored: only tests labelled exactly unit, host or fuzz (never vm
    # tests, which run once, from the first build). With the caller's -L,
    # ctest runs the tests that match both.
    (cd "$san_build" && ctest --output-on-failure --timeout 1800 -L "^(${regex#|})\$" "$@") || status=$?
  else
    tail -n 60 "$san_build/build.log" >&2
    echo "run-all.sh: the sanitizer build failed (whole log: $san_build/build.log)" >&2
    status=1
  fi
fi
exit $status
