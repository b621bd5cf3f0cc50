#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for FUZZ_SECONDS (default 20)
# from its seed corpus in fuzz/corpus/<target>. New inputs go to a scratch
# copy, so the repository's corpus only changes by hand. A crash fails the
# run and leaves the reproducer in build/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
bash scripts/build.sh fuzz
mkdir -p build/fuzz/artifacts
passed=0
failed=0
for target in snapshot_reader update_log_reader libsvm_parser vw_parser criteo_parser \
    model_numeric log_record_reader replica_snapshot_reader feedback_state; do
  work="build/fuzz/corpus/$target"
  rm -rf "$work" && mkdir -p "$work" && cp fuzz/corpus/$target/* "$work/"
  if "build/fuzz/fuzz/${target}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="build/fuzz/artifacts/${target}-" -print_final_stats=1 "$work" \
      > "build/fuzz/$target.log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "build/fuzz/$target.log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz $target: ok, $runs inputs in ${seconds}s"
    passed=$((passed + 1))
  else
    echo "fuzz $target: FAILED (see build/fuzz/$target.log)"
    tail -30 "build/fuzz/$target.log"
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
