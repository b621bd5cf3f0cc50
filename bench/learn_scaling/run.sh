#!/usr/bin/env bash
# Learning on two cores: examples/s of one model learning from 1 and from 2
# concurrent callers of the service's Update path (ClickdService::
# ApplyUpdate, in process, no gRPC), for a memory-only model and a durable
# one (--update_log_sync=none and every_request), 100 x 40-feature
# examples per request. Each setting alternates 1, 2, 1, 2, 1, 2 callers,
# so that every 2-caller figure has a 1-caller figure measured just before
# it. About 40 s.
#
#   bash scripts/build.sh release && bash bench/learn_scaling/run.sh
#   BUILD_DIR=build/rel SECONDS_EACH=3 bash bench/learn_scaling/run.sh
#
# Output: bench/out/learn_scaling/results.jsonl (one line per measurement)
# and the machine's load before each setting, on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
bench=$build/bench/learn_scaling/learn_scaling_bench
if [[ ! -x $bench ]]; then
  echo "run.sh: $bench is missing: build with -DCLICKD_BUILD_BENCH=ON or set BUILD_DIR" >&2
  exit 1
fi
out=bench/out/learn_scaling
mkdir -p "$out"
: > "$out/results.jsonl"
dir=$(mktemp -d "${TMPDIR:-/tmp}/learn_scaling.XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "# learn_scaling, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs"
for sync in memory none every_request; do
  echo "load before $sync: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$bench" --sync="$sync" --seconds="${SECONDS_EACH:-4}" --threads=1,2,1,2,1,2 \
    --dir="$dir/data" | tee -a "$out/results.jsonl"
done
