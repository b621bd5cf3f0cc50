#!/usr/bin/env bash
# What a stream learning on a gRPC thread costs the calls beside it: a
# release clickd (unpinned) learns from one UpdateStream (100 examples x 40
# client-hashed keys per message) while a second client measures the health
# check and then a Predict of 1 candidate x 40 keys, one call in flight,
# with stream messages learned on the gRPC thread that read them (the
# default, --max_inline_update_features=16384) and on the workers (=0),
# alternated REPEATS times. The stream runs as fast as it can, then paced
# at STREAM_QPS messages/s (default 1500: 150k examples/s, which both
# placements sustain), so that the neighbours' figures are compared at the
# same learning work too, not only at each placement's own full speed.
# STREAMS=2 runs two such streams at once (different seeds) instead of one.
# Servers are stopped by PID.
#
#   bash scripts/build.sh release && bash bench/learn_scaling/neighbours.sh   # ~3 min
#
# Prints one line per measurement: the placement and the stream's pace, its
# examples/s, and the neighbours' p50 / p99 in microseconds and calls/s.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
repeats=${REPEATS:-3}
duration=${DURATION_S:-4}
stream_qps=${STREAM_QPS:-1500}
streams=${STREAMS:-1}
source bench/lib/clickd_server.sh
bench_setup neighbours.sh

# measure PACE BOUND: one server with --max_inline_update_features=BOUND,
# $streams stream(s) (PACE: "full" or messages/s each) and, beside them,
# the health check and then a Predict 1x40, one call in flight each.
measure() {
  local pace=$1 bound=$2 placement pacing=()
  placement=$([[ $bound == 0 ]] && echo "workers    " || echo "gRPC thread")
  [[ $pace != full ]] && pacing=(--qps="$pace")
  start_clickd --max_inline_update_features="$bound"
  # The streams run through both neighbour measurements (each 1 s of
  # warm-up + DURATION_S), with a second on either side.
  local stream_pids=() s
  for s in $(seq "$streams"); do
    "$clickctl" loadgen --server="$server" --json --method=update_stream --batch_size=100 \
      --candidate_features=40 --wire=keys --request_seed=$((100 * s + rep)) --warmup_s=1 \
      --duration_s=$((2 * duration + 3)) "${pacing[@]}" | tail -1 > "$dir/stream$s.json" &
    stream_pids+=($!)
  done
  sleep 1
  "$clickctl" loadgen --server="$server" --json --method=health --concurrency=1 --warmup_s=1 \
    --duration_s="$duration" | tail -1 > "$dir/health.json"
  "$clickctl" loadgen --server="$server" --json --method=predict --candidates=1 \
    --candidate_features=40 --wire=keys --concurrency=1 --warmup_s=1 --duration_s="$duration" \
    | tail -1 > "$dir/predict.json"
  wait "${stream_pids[@]}"
  stop_clickd
  local learned=0
  for s in $(seq "$streams"); do
    learned=$((learned + $(json_field "$dir/stream$s.json" examples_per_second)))
  done
  echo "rep $rep, $streams stream(s) ($pace each) on the $placement: $learned examples/s;" \
    "health p50 $(json_field "$dir/health.json" p50_us) p99 $(json_field "$dir/health.json" p99_us)" \
    "us, $(json_field "$dir/health.json" rate)/s; predict 1x40 p50" \
    "$(json_field "$dir/predict.json" p50_us) p99 $(json_field "$dir/predict.json" p99_us) us," \
    "$(json_field "$dir/predict.json" rate)/s"
}

echo "# the neighbours of $streams stream(s), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $build"
for rep in $(seq "$repeats"); do
  for pace in full "$stream_qps"; do
    for bound in 16384 0; do
      measure "$pace" "$bound"
    done
  done
done
