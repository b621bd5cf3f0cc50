#!/bin/sh
# Bytes per coordinate and snapshot/restore times, float against compact
# (docs/memory.md, "The compact encoding"): each encoding in its own
# process, REPEATS times, alternating. Extra arguments go to the benchmark.
#   bash bench/memory_compact/run.sh [--coordinates=10000000]
set -e
cd "$(dirname "$0")/../.."
cmake --build build/release -j2 --target memory_compact_bench >/dev/null
repeats=${REPEATS:-3}
i=0
while [ "$i" -lt "$repeats" ]; do
  for encoding in float compact; do
    build/release/bench/memory_compact/memory_compact_bench --encoding=$encoding "$@"
  done
  i=$((i + 1))
done
