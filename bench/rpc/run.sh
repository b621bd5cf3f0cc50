#!/usr/bin/env bash
# RPC benchmarks: every timing of docs/performance_rpc.md in one command
# (about 5.5 minutes with the defaults):
#
#   bash scripts/build.sh release && bash bench/rpc/run.sh
#   BUILD_DIR=build/h8 bash bench/rpc/run.sh      # another build tree
#   PIN=0 bash bench/rpc/run.sh                   # no taskset
#
# Starts a release clickd on a free port of 127.0.0.1 (pinned to CPU 0 with
# taskset; every clickctl loadgen run is pinned to CPU 1), teaches the
# default model from a synthetic stream so that Predict finds trained
# coordinates, then measures each case right beside the near-null RPC
# (grpc.health.v1 Check) in the same repetition, REPEATS times. The machine
# load is recorded before every measurement. The server is stopped by PID.
#
# Output: bench/out/rpc/run.txt (this log), results.jsonl (one line per
# measurement: case, repetition, load, loadgen's JSON), summary.md (the
# tables, by bench/rpc/summarize.py), clickd.log.
# Environment: BUILD_DIR (build/release), REPEATS (3), DURATION_S (5),
# WARMUP_S (1), PIN (1), CASES (all; "predict": only issue 12's Predict
# cases, 1x40 at 1 and 64 in flight and 100x40 at 8, each beside the
# health check, summarized by bench/rpc/summarize_predict.py; ~1 min with
# REPEATS=2 DURATION_S=3).
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${BUILD_DIR:-build/release}
repeats=${REPEATS:-3}
duration=${DURATION_S:-5}
warmup=${WARMUP_S:-1}
pin=${PIN:-1}
cases=${CASES:-all}
clickd=$build/server/clickd
clickctl=$build/client/clickctl
source bench/lib/require_binaries.sh
require_binaries run.sh "run 'bash scripts/build.sh release' or set BUILD_DIR" "$clickd" "$clickctl"
out=bench/out/rpc
mkdir -p "$out"
results=$out/results.jsonl
: > "$results"
exec > >(tee "$out/run.txt") 2>&1

server_pin=()
client_pin=()
if [[ $pin == 1 ]]; then
  server_pin=(taskset -c 0)
  client_pin=(taskset -c 1)
fi

echo "# clickd RPC benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/Mem:/{print $2}') GiB," \
  "$(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
echo "build: $build, $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")," \
  "$($(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt") --version | head -1)"
echo "sources: sha256 of core/ server/ client/ proto/ $(find core server client proto -name '*.h' -o -name '*.cc' -o -name '*.proto' |
  grep -v _test | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)"
if [[ $pin == 1 ]]; then
  echo "pinning: clickd on CPU 0, clickctl loadgen on CPU 1 (taskset)"
else
  echo "pinning: none (client and server share both CPUs)"
fi
echo "runs: ${warmup} s warmup + ${duration} s measured, ${repeats} repetitions"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=127.0.0.1:$port
"${server_pin[@]}" "$clickd" --address="$server" > "$out/clickd.log" 2>&1 &
clickd_pid=$!
stop_server() {
  kill -TERM "$clickd_pid" 2>/dev/null || true
  wait "$clickd_pid" 2>/dev/null || true
}
trap stop_server EXIT

loadgen() {
  "${client_pin[@]}" "$clickctl" loadgen --server="$server" --json "$@"
}

# Ready once one health check succeeds; at most ~20 s.
for attempt in $(seq 100); do
  if loadgen --method=health --warmup_s=0 --duration_s=1 --max_requests=1 --deadline_ms=200 \
      > /dev/null 2>&1; then
    break
  fi
  if ! kill -0 "$clickd_pid" 2>/dev/null || [[ $attempt == 100 ]]; then
    echo "run.sh: clickd did not become ready:" >&2
    cat "$out/clickd.log" >&2
    exit 1
  fi
  sleep 0.2
done
echo "clickd (pid $clickd_pid) serving on $server"

machine_load() {
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), cpu pressure:" \
    "$(head -1 /proc/pressure/cpu 2>/dev/null || echo unknown)"
}

# The server's CPU time so far (user + system, all threads), in clock ticks.
server_ticks() {
  awk '{print $14 + $15}' "/proc/$clickd_pid/stat"
}
ticks_per_second=$(getconf CLK_TCK)

# measure CASE REP ARGS...: one loadgen run, appended to results.jsonl with
# the load before it and the server's CPU time per call (warmup included),
# which, unlike the timings, other processes hardly disturb.
measure() {
  local name=$1 rep=$2
  shift 2
  local load line before after
  load=$(cut -d' ' -f1 /proc/loadavg)
  before=$(server_ticks)
  line=$(loadgen --warmup_s="$warmup" --duration_s="$duration" "$@" | tail -1)
  after=$(server_ticks)
  python3 - "$name" "$rep" "$load" "$*" "$line" "$((after - before))" "$ticks_per_second" \
    "$results" <<'EOF'
import json, sys
name, rep, load, args, line, ticks, hz, results = sys.argv[1:]
r = json.loads(line)
calls = r["requests"] + r["warmup_requests"]
server_cpu = int(ticks) / int(hz) * 1e6 / calls if calls else None
row = {"case": name, "rep": int(rep), "load1": float(load), "args": args,
       "server_cpu_us_per_call": server_cpu, "result": r}
with open(results, "a") as f:
    f.write(json.dumps(row) + "\n")
extra = ""
if "candidates_per_second" in r: extra = f" cand/s {r['candidates_per_second']:.0f}"
if "examples_per_second" in r: extra = f" ex/s {r['examples_per_second']:.0f}"
if r.get("mode") == "open": extra += f" max lag {r['max_send_lag_us']:.0f} us"
cpu = f"cpu/call server {server_cpu:6.1f} client {r['client_cpu_us_per_call']:6.1f} us"
print(f"  {name:<20} load {load:>5} {r['rate']:8.0f}/s  p50 {r['p50_us']:8.1f}  p99 {r['p99_us']:8.1f}"
      f"  p99.9 {r['p999_us']:8.1f} us  {cpu}  errors {r['errors']}{extra}")
EOF
}

single=(--method=predict --context_features=0 --candidates=1 --candidate_features=40)
wide=(--method=predict --context_features=20 --candidates=100 --candidate_features=20)
narrow=(--method=predict --context_features=20 --candidates=1 --candidate_features=20)

echo
echo "## teaching the model (not measured)"
machine_load
loadgen --method=update_stream --context_features=20 --candidate_features=40 --batch_size=100 \
  --warmup_s=0 --duration_s=3 --request_seed=7 | tail -1
loadgen --method=update_stream --candidate_features=40 --batch_size=100 \
  --warmup_s=0 --duration_s=2 --request_seed=8 | tail -1
loadgen --method=update_stream --context_features=20 --candidate_features=40 --batch_size=100 \
  --warmup_s=0 --duration_s=2 --request_seed=9 --feature_ids | tail -1

for rep in $(seq "$repeats"); do
  echo
  echo "## repetition $rep"
  echo "uptime: $(uptime)"
  machine_load
  if [[ $cases == predict ]]; then
    measure health_c1 "$rep" --method=health --concurrency=1
    measure predict1x40_c1 "$rep" "${single[@]}" --concurrency=1
    measure health_c64 "$rep" --method=health --concurrency=64
    measure predict1x40_c64 "$rep" "${single[@]}" --concurrency=64
    measure health_c8 "$rep" --method=health --concurrency=8
    measure predict100x40_c8 "$rep" --method=predict --context_features=0 --candidates=100 \
      --candidate_features=40 --concurrency=8
    # The same Predicts with client-hashed packed keys (clickctl loadgen
    # --wire=keys), each right after the message form's.
    measure healthk_c1 "$rep" --method=health --concurrency=1
    measure predict1x40keys_c1 "$rep" "${single[@]}" --wire=keys --concurrency=1
    measure healthk_c64 "$rep" --method=health --concurrency=64
    measure predict1x40keys_c64 "$rep" "${single[@]}" --wire=keys --concurrency=64
    measure predict100x40keys_c8 "$rep" --method=predict --context_features=0 --candidates=100 \
      --candidate_features=40 --wire=keys --concurrency=8
    continue
  fi
  measure health_c1 "$rep" --method=health --concurrency=1
  measure predict1x40_c1 "$rep" "${single[@]}" --concurrency=1
  measure health_c64 "$rep" --method=health --concurrency=64
  measure predict1x40_c64 "$rep" "${single[@]}" --concurrency=64
  measure predict1x40ids_c1 "$rep" "${single[@]}" --feature_ids --concurrency=1
  measure predict1x40ids_c64 "$rep" "${single[@]}" --feature_ids --concurrency=64
  measure health_q5k "$rep" --method=health --qps=5000
  measure predict1x40_q5k "$rep" "${single[@]}" --qps=5000
  measure health_q10k "$rep" --method=health --qps=10000
  measure predict1x40_q10k "$rep" "${single[@]}" --qps=10000
  measure predict20+1x20_c1 "$rep" "${narrow[@]}" --concurrency=1
  measure predict20+100x20_c1 "$rep" "${wide[@]}" --concurrency=1
  measure predict20+1x20_c8 "$rep" "${narrow[@]}" --concurrency=8
  measure predict20+100x20_c8 "$rep" "${wide[@]}" --concurrency=8
  measure health_c8 "$rep" --method=health --concurrency=8
  measure update1x40_c1 "$rep" --method=update --candidates=1 --candidate_features=40 --concurrency=1
  measure update_stream_b100 "$rep" --method=update_stream --batch_size=100 --candidate_features=40
done

echo
machine_load
if [[ $cases == predict ]]; then
  /usr/bin/python3 bench/rpc/summarize_predict.py "$results" | tee "$out/summary.md"
else
  python3 bench/rpc/summarize.py "$results" | tee "$out/summary.md"
fi
