#!/usr/bin/env bash
# Unary Update learned on the gRPC thread that received it (the default,
# --max_inline_update_features=16384) against on the workers (=0): the same
# release clickd binary started both ways, alternated REPEATS times, each
# measured beside its own health check. Update of 10 examples x 40
# client-hashed keys (--wire=keys) into the memory-only default model, at 1
# and 8 calls in flight. Unpinned (both cores), as users run it; servers
# are stopped by PID.
#
#   bash scripts/build.sh release && bash bench/rpc/update_inline.sh   # ~2 min
#
# Prints one line per measurement: placement, in flight, calls/s, p50 and
# p99 in microseconds, and the health check's p50 at 1 in flight.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
repeats=${REPEATS:-3}
duration=${DURATION_S:-3}
source bench/lib/clickd_server.sh
bench_setup update_inline.sh

echo "# unary Update placement, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $build," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq "$repeats"); do
  for bound in 16384 0; do
    placement=$([[ $bound == 0 ]] && echo "workers    " || echo "gRPC thread")
    start_clickd --max_inline_update_features="$bound"
    "$clickctl" loadgen --server="$server" --json --method=health --concurrency=1 --warmup_s=1 \
      --duration_s="$duration" | tail -1 > "$dir/health.json"
    for in_flight in 1 8; do
      "$clickctl" loadgen --server="$server" --json --method=update --candidates=10 \
        --candidate_features=40 --wire=keys --concurrency="$in_flight" --warmup_s=1 \
        --duration_s="$duration" | tail -1 > "$dir/update.json"
      echo "rep $rep, $placement, $in_flight in flight: $(json_field "$dir/update.json" rate) calls/s," \
        "p50 $(json_field "$dir/update.json" p50_us) p99 $(json_field "$dir/update.json" p99_us) us" \
        "(health p50 $(json_field "$dir/health.json" p50_us) us)"
    done
    stop_clickd
  done
done
