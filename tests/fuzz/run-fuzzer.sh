#!/bin/sh
# One fuzz test of ctest's label `fuzz` (tests/fuzz/README.md):
#   run-fuzzer.sh <fuzzer binary> <tests/fuzz dir> <work dir> [max_len]
# 1. replays every input kept under regressions/<target>/ (each must pass);
# 2. fuzzes from corpus/<target>/ for CRX_FUZZ_SECONDS (default 10) or, if
#    set, CRX_FUZZ_RUNS executions. New inputs go to <work>/<target>/corpus
#    (not the tree); a crash is saved as <work>/<target>/crash-* and fails
#    the test: copy it to regressions/<target>/ once the parser is fixed.
set -eu
bin=$1 src=$2 work=$3 max_len=${4:-4096}
name=$(basename "$bin")
seconds=${CRX_FUZZ_SECONDS:-10}
runs=${CRX_FUZZ_RUNS:-}
out=$work/$name
mkdir -p "$out/corpus"

regressions=$src/regressions/$name
if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
  echo "replaying $(ls "$regressions" | wc -l) regression input(s) of $name"
  "$bin" -runs=1 "$regressions"/* 2>"$out/regressions.log" || {
    cat "$out/regressions.log" >&2
    echo "FAIL: a regression input of $name crashes again" >&2
    exit 1
  }
fi

if [ -n "$runs" ]; then limit="-runs=$runs"; else limit="-max_total_time=$seconds"; fi
dict=
[ -f "$src/dicts/$name.dict" ] && dict="-dict=$src/dicts/$name.dict"
set +e
# shellcheck disable=SC2086
"$bin" $limit $dict -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$out/" \
  "$out/corpus" "$src/corpus/$name" >"$out/fuzz.log" 2>&1
rc=$?
set -e
grep -E '^#[0-9]+.*(DONE|INITED)|^stat::number_of_executed_units|^stat::peak_rss' "$out/fuzz.log" || true
if [ $rc -ne 0 ]; then
  tail -n 60 "$out/fuzz.log" >&2
  echo "FAIL: $name found a crash (exit $rc); input under $out/" >&2
  exit 1
fi
