#!/usr/bin/env bash
# Two builds of clickd side by side, interleaved (before, after, before,
# after): health, Predict 1x40 (messages and keys) at 64 in flight and
# UpdateStream 100x40 (keys and messages), 4 s each, every server pinned to
# CPU 0 and driven by the same clickctl loadgen (this tree's) on CPU 1.
#
#   git worktree add --detach /tmp/wt-before <rev>
#   (cd /tmp/wt-before && bash scripts/build.sh release)
#   BEFORE=/tmp/wt-before/build/release bash bench/rpc/before_after.sh
#
# Prints one line per measurement: build, case, load before it, calls/s,
# examples/s, p50, and the server's CPU per call (utime + stime from
# /proc/PID/stat around the loadgen run, warmup calls included).
# Environment: BEFORE (required), AFTER (build/release), ROUNDS (2).
set -euo pipefail
cd "$(dirname "$0")/../.."
before=${BEFORE:?set BEFORE to the other build directory}
after=${AFTER:-build/release}
ctl=$after/client/clickctl
hz=$(getconf CLK_TCK)
cases=(
  "--method=health --concurrency=64"
  "--method=predict --candidates=1 --candidate_features=40 --concurrency=64"
  "--method=predict --candidates=1 --candidate_features=40 --wire=keys --concurrency=64"
  "--method=update_stream --batch_size=100 --candidate_features=40 --wire=keys"
  "--method=update_stream --batch_size=100 --candidate_features=40"
)
measure_build() {  # BUILD_DIR LABEL
  local port pid
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  taskset -c 0 "$1/server/clickd" --address="127.0.0.1:$port" > "/tmp/before_after_$2.log" 2>&1 &
  pid=$!
  for attempt in $(seq 50); do
    "$ctl" loadgen --server="127.0.0.1:$port" --method=health --warmup_s=0 --duration_s=1 \
      --max_requests=1 --deadline_ms=200 > /dev/null 2>&1 && break
    sleep 0.2
  done
  # Teach the model so that Predict finds trained coordinates.
  taskset -c 1 "$ctl" loadgen --server="127.0.0.1:$port" --method=update_stream --batch_size=100 \
    --candidate_features=40 --warmup_s=0 --duration_s=2 --request_seed=8 > /dev/null 2>&1
  for c in "${cases[@]}"; do
    local load t0 t1 line
    load=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    # shellcheck disable=SC2086
    line=$(taskset -c 1 "$ctl" loadgen --server="127.0.0.1:$port" --json --warmup_s=1 \
      --duration_s=4 $c | tail -1)
    t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    python3 - "$2" "$c" "$load" "$line" "$((t1 - t0))" "$hz" <<'PY'
import json, sys
label, case, load, line, ticks, hz = sys.argv[1:]
r = json.loads(line)
calls = r["requests"] + r["warmup_requests"]
cpu = int(ticks) / int(hz) * 1e6 / calls
print(f"{label:6} | {case:75} | load {load} | {r['rate']:9.0f} calls/s | "
      f"{r.get('examples_per_second', 0):9.0f} ex/s | p50 {r['p50_us']:8.1f} us | "
      f"server CPU {cpu:7.1f} us/call")
PY
  done
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}
echo "# before_after, $(date -u '+%Y-%m-%d %H:%M UTC'): before $before, after $after"
for round in $(seq "${ROUNDS:-2}"); do
  measure_build "$before" before
  measure_build "$after" after
done
