#!/usr/bin/env bash
# Durability benchmarks: every figure of docs/durability.md in one command
# (about 10 minutes):
#
#   bash scripts/build.sh release && bash bench/durability/run.sh
#   BUILD_DIR=build/dev DATA_DIR=/var/tmp/clickd-bench bash bench/durability/run.sh
#
# 1. In process (durability_bench): update throughput per --update_log_sync
#    mode and learner threads, as a ratio to learning without a journal;
#    snapshot and restore seconds and MB/s at 1M and 10M coordinates.
# 2. The real server (clickd pinned to CPU 0, clickctl to CPU 1): a default
#    model grown to ~10M coordinates by `clickctl replay --server`; Predict
#    latency (open loop, QPS calls/s) without a snapshot and while
#    `clickctl models snapshot` runs back to back, alternating REPEATS times;
#    then the restart time of that model (SIGKILL, start, SERVING).
#
# DATA_DIR must be on the disk under test (default bench/out/durability/data,
# which is on the repository's disk). Output: bench/out/durability/run.txt
# (this log), predict.jsonl, clickd*.log. The server is stopped by PID.
# Environment: BUILD_DIR (build/release), DATA_DIR, REPEATS (3),
# DURATION_S (10), QPS (2000), COORDINATES (10000000), PIN (1),
# INPROCESS (1; 0 skips part 1).
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${BUILD_DIR:-build/release}
out=bench/out/durability
data=${DATA_DIR:-$out/data}
repeats=${REPEATS:-3}
duration=${DURATION_S:-10}
qps=${QPS:-2000}
coordinates=${COORDINATES:-10000000}
pin=${PIN:-1}
clickd=$build/server/clickd
clickctl=$build/client/clickctl
bench=$build/bench/durability/durability_bench
for binary in "$clickd" "$clickctl" "$bench"; do
  if [[ ! -x $binary ]]; then
    echo "run.sh: $binary is missing: run 'bash scripts/build.sh release' or set BUILD_DIR" >&2
    exit 1
  fi
done
mkdir -p "$out"
rm -rf "$data"
mkdir -p "$data"
exec > >(tee "$out/run.txt") 2>&1
server_pin=()
client_pin=()
if [[ $pin == 1 ]]; then
  server_pin=(taskset -c 0)
  client_pin=(taskset -c 1)
fi
load() { echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)"; }

echo "# clickd durability benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/Mem:/{print $2}') GiB," \
  "disk of $data: $(df -T "$data" | awk 'NR==2{print $2}') on $(df "$data" | awk 'NR==2{print $1}')"
echo "build: $build, $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")"
load

if [[ ${INPROCESS:-1} == 1 ]]; then
  echo
  echo "## 1. In process"
  "$bench" --dir="$data/inprocess" --coordinates=1000000,"$coordinates" --sync_seconds=3 --threads=1,4
  rm -rf "$data/inprocess"
  load
fi

echo
echo "## 2. The real server, a model of ~$coordinates coordinates"
# 40 distinct features per line, so that lines * 40 = coordinates.
lines=$((coordinates / 40))
log=$out/big.vw
python3 - "$lines" "$log" <<'EOF'
import sys
lines, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    for i in range(lines):
        feats = " ".join(f"f{i}_{j}" for j in range(40))
        f.write(f"{1 if i % 10 == 0 else 0} |x {feats}\n")
EOF
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=127.0.0.1:$port
clickd_pid=""
start_server() {  # start_server LOGFILE FLAGS...: returns once SERVING
  local logfile=$1
  shift
  "${server_pin[@]}" "$clickd" --address="$server" --metrics_port=0 --data_dir="$data/server" \
    --snapshot_interval=0 "$@" > "$logfile" 2>&1 &
  clickd_pid=$!
  for _ in $(seq 6000); do
    grep -q "serving" "$logfile" && return 0
    kill -0 "$clickd_pid" 2>/dev/null || { cat "$logfile"; exit 1; }
    sleep 0.1
  done
  echo "clickd did not start" >&2
  exit 1
}
stop_server() { [[ -n $clickd_pid ]] && kill -TERM "$clickd_pid" 2>/dev/null && wait "$clickd_pid" 2>/dev/null || true; }
trap stop_server EXIT

start_server "$out/clickd.log" --update_log_sync=none
"${client_pin[@]}" "$clickctl" replay --server="$server" --format=vw --batch_size=2000 "$log" | tail -1
"$clickctl" models get --server="$server" --json | python3 -c '
import json, sys
m = json.loads(sys.stdin.read())
print("model: %d coordinates, %.0f MB in memory" % (m["coordinates"], m["bytes"] / 1e6))'
"$clickctl" models snapshot --server="$server"
load

: > "$out/predict.jsonl"
predict() {  # predict CASE REP
  "${client_pin[@]}" "$clickctl" loadgen --server="$server" --json --method=predict \
    --candidates=1 --candidate_features=40 --qps="$qps" --warmup_s=1 --duration_s="$duration" |
    tail -1 | python3 -c '
import json, sys
r = json.loads(sys.stdin.read()); case, rep, path = sys.argv[1:]
open(path, "a").write(json.dumps({"case": case, "rep": int(rep), "result": r}) + "\n")
print("  %-16s %7.0f/s  p50 %8.1f  p99 %8.1f  p99.9 %8.1f  max %9.1f us  errors %d" % (
    case, r["rate"], r["p50_us"], r["p99_us"], r["p999_us"], r["max_us"], r["errors"]))
' "$1" "$2" "$out/predict.jsonl"
}
echo "Predict, 1 candidate x 40 features, open loop at $qps calls/s, $duration s per run:"
for rep in $(seq "$repeats"); do
  predict no_snapshot "$rep"
  # Snapshots back to back for the whole run (each rewrites the model's
  # state: the log has nothing new, so force one by learning one example).
  (
    end=$((SECONDS + duration + 2))
    n=0
    while ((SECONDS < end)); do
      "$clickctl" update --server="$server" --example="x|warm" --label=1 > /dev/null
      "$clickctl" models snapshot --server="$server" --json > "$out/snapshot_$rep.json"
      n=$((n + 1))
    done
    echo "  ($n snapshots during the run; last: $(cat "$out/snapshot_$rep.json"))"
  ) &
  snapper=$!
  predict during_snapshot "$rep"
  wait "$snapper"
done
load

echo
echo "Restart of the ~$coordinates-coordinate model:"
"$clickctl" update --server="$server" --example="x|last" --label=0 > /dev/null
kill -KILL "$clickd_pid"
wait "$clickd_pid" 2>/dev/null || true
t0=$(date +%s.%N)
start_server "$out/clickd_restart.log"
t1=$(date +%s.%N)
grep "restored model" "$out/clickd_restart.log"
echo "restart to SERVING after SIGKILL: $(python3 -c "print(f'{$t1 - $t0:.2f}')") s (process start included)"
load
