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
clickd=$build/server/clickd
clickctl=$build/client/clickctl
for binary in "$clickd" "$clickctl"; do
  if [[ ! -x $binary ]]; then
    echo "neighbours.sh: $binary is missing: run 'bash scripts/build.sh release'" >&2
    exit 1
  fi
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/neighbours.XXXXXX")
clickd_pid=
stop_server() {
  if [[ -n $clickd_pid ]]; then
    kill -TERM "$clickd_pid" 2>/dev/null || true
    wait "$clickd_pid" 2>/dev/null || true
    clickd_pid=
  fi
}
trap 'stop_server; rm -rf "$dir"' EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
field() {
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(round(d[sys.argv[2]]))' "$1" "$2"
}

echo "# a stream's neighbours, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $build"
for rep in $(seq "$repeats"); do
  for pace in full "$stream_qps"; do
  for bound in 16384 0; do
    placement=$([[ $bound == 0 ]] && echo "workers    " || echo "gRPC thread")
    pacing=()
    [[ $pace != full ]] && pacing=(--qps="$pace")
    server=127.0.0.1:$(free_port)
    "$clickd" --address="$server" --max_inline_update_features="$bound" \
      > "$dir/clickd.log" 2>&1 &
    clickd_pid=$!
    for attempt in $(seq 100); do
      "$clickctl" loadgen --server="$server" --method=health --warmup_s=0 --duration_s=1 \
        --max_requests=1 --deadline_ms=200 > /dev/null 2>&1 && break
      sleep 0.2
    done
    # The stream runs through both neighbour measurements (each 1 s of
    # warm-up + DURATION_S), with a second on either side.
    "$clickctl" loadgen --server="$server" --json --method=update_stream --batch_size=100 \
      --candidate_features=40 --wire=keys --request_seed=$((100 + rep)) --warmup_s=1 \
      --duration_s=$((2 * duration + 3)) "${pacing[@]}" | tail -1 > "$dir/stream.json" &
    stream_pid=$!
    sleep 1
    for method in health predict; do
      shape=()
      [[ $method == predict ]] && shape=(--candidates=1 --candidate_features=40 --wire=keys)
      "$clickctl" loadgen --server="$server" --json --method="$method" "${shape[@]}" \
        --concurrency=1 --warmup_s=1 --duration_s="$duration" | tail -1 > "$dir/$method.json"
    done
    wait "$stream_pid"
    stop_server
    echo "rep $rep, stream ($pace) on the $placement: $(field "$dir/stream.json" examples_per_second)" \
      "examples/s; health p50 $(field "$dir/health.json" p50_us) p99" \
      "$(field "$dir/health.json" p99_us) us, $(field "$dir/health.json" rate)/s;" \
      "predict 1x40 p50 $(field "$dir/predict.json" p50_us) p99 $(field "$dir/predict.json" p99_us)" \
      "us, $(field "$dir/predict.json" rate)/s"
  done
  done
done
