#!/bin/sh
# The README's test command: set up, build, and pass every test
# (unit, host integration as root, qemu-guest tests), then the fuzz
# targets (tests/fuzz) in a second build dir with clang, libFuzzer and
# ASan+UBSan, each fuzzed for CRX_FUZZ_SECONDS (default 10). The fuzz part
# runs when no ctest arguments are given or one of them names fuzz
# (`tests/run-all.sh -L fuzz`); CRX_FUZZ=0 skips it.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tests/setup.sh"
build=${CRX_BUILD_DIR:-$top/build}
fuzz_build=${CRX_FUZZ_BUILD_DIR:-$top/build-fuzz}
fuzz=${CRX_FUZZ:-1}
if [ "$fuzz" != 0 ] && [ $# -gt 0 ]; then
  case " $* " in *fuzz*) ;; *) fuzz=0 ;; esac
fi
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build"
if [ "$fuzz" != 0 ]; then
  cmake -S "$top" -B "$fuzz_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCRX_FUZZ=ON >/dev/null
  ninja -C "$fuzz_build" fuzz-targets
fi
status=0
(cd "$build" && ctest --output-on-failure --timeout 1800 "$@") || status=$?
if [ "$fuzz" != 0 ]; then
  (cd "$fuzz_build" && ctest --output-on-failure --timeout 1800 -L fuzz "$@") || status=$?
fi
exit $status
