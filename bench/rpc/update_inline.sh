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
clickd=$build/server/clickd
clickctl=$build/client/clickctl
for binary in "$clickd" "$clickctl"; do
  if [[ ! -x $binary ]]; then
    echo "update_inline.sh: $binary is missing: run 'bash scripts/build.sh release'" >&2
    exit 1
  fi
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/update_inline.XXXXXX")
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

echo "# unary Update placement, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $build," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq "$repeats"); do
  for bound in 16384 0; do
    placement=$([[ $bound == 0 ]] && echo "workers    " || echo "gRPC thread")
    server=127.0.0.1:$(free_port)
    "$clickd" --address="$server" --max_inline_update_features="$bound" > "$dir/clickd.log" 2>&1 &
    clickd_pid=$!
    for attempt in $(seq 100); do
      "$clickctl" loadgen --server="$server" --method=health --warmup_s=0 --duration_s=1 \
        --max_requests=1 --deadline_ms=200 > /dev/null 2>&1 && break
      sleep 0.2
    done
    "$clickctl" loadgen --server="$server" --json --method=health --concurrency=1 --warmup_s=1 \
      --duration_s="$duration" | tail -1 > "$dir/health.json"
    for in_flight in 1 8; do
      "$clickctl" loadgen --server="$server" --json --method=update --candidates=10 \
        --candidate_features=40 --wire=keys --concurrency="$in_flight" --warmup_s=1 \
        --duration_s="$duration" | tail -1 > "$dir/update.json"
      echo "rep $rep, $placement, $in_flight in flight: $(field "$dir/update.json" rate) calls/s," \
        "p50 $(field "$dir/update.json" p50_us) p99 $(field "$dir/update.json" p99_us) us" \
        "(health p50 $(field "$dir/health.json" p50_us) us)"
    done
    stop_server
  done
done
