#!/usr/bin/env bash
# Snapshot pause (docs/performance.md): the longest learning stall and the
# scoring latency while a 1M- and a 10M-coordinate FTRL model snapshot,
# with a learner (file journal, sync none) and a scorer running.
#
#   cmake -S . -B build/rel -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLICKD_BUILD_BENCH=ON
#   cmake --build build/rel --target snapshot_pause_bench
#   BUILD_DIR=build/rel bash bench/snapshot_pause/run.sh
#
# Environment: BUILD_DIR (build/release), DATA_DIR (a temporary directory),
# LOG (file or memory), COORDINATES (1000000,10000000), SNAPSHOTS (3),
# SNAPSHOT_NICE (0: the nice value of the thread that reads the shards, as
# clickd's snapshotter), ENCODER_NICE (10: the nice increment of the thread
# that sorts, encodes and writes, as clickd's; -1: none, the snapshot thread
# does everything at SNAPSHOT_NICE: ENCODER_NICE=-1 SNAPSHOT_NICE=10 is what
# clickd did before the split).
# Output: this run's lines on stdout and in bench/out/snapshot_pause/run.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${BUILD_DIR:-build/release}
out=bench/out/snapshot_pause
mkdir -p "$out"
if [[ -n "${DATA_DIR:-}" ]]; then
  data=$DATA_DIR  # the benchmark removes its own subdirectories
else
  data=$(mktemp -d)
  trap 'rm -rf "$data"' EXIT
fi
{
  echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) snapshot_nice ${SNAPSHOT_NICE:-0}" \
    "encoder_nice ${ENCODER_NICE:-10} load: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$build/bench/snapshot_pause/snapshot_pause_bench" --dir="$data" --log="${LOG:-file}" \
    --coordinates="${COORDINATES:-1000000,10000000}" --snapshots="${SNAPSHOTS:-3}" \
    --snapshot_nice="${SNAPSHOT_NICE:-0}" --encoder_nice="${ENCODER_NICE:-10}"
  echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$out/run.txt"
