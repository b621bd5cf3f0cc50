#!/usr/bin/env bash
# clickd beside Vowpal Wabbit's daemon (`vw --daemon`), in one run
# (docs/performance_rpc.md, "Against Vowpal Wabbit's daemon"; ~4 minutes):
#
#   VW_BIN=/path/to/vw bash bench/vw_compare/run.sh
#   bash bench/vw_compare/run.sh          # without VW_BIN: clickd rows only
#
# Needs root: everything runs inside a private network namespace
# (`unshare -n`, loopback only), because `vw --daemon` listens on 0.0.0.0.
# Starts a release clickd pinned to CPU 0 and, with VW_BIN, two VW daemons
# (1 and 8 child processes) pinned to CPU 0; every client (clickctl loadgen,
# vw_loadgen) is pinned to CPU 1. Both servers serve an FTRL / logistic model
# that first learned the same labeled lines (teach.vw, made by vw_loadgen from
# clickctl loadgen's generator): clickd by `clickctl replay --server`, VW by
# `vw --ftrl` offline, then loaded by the daemons with -i and -t. Each
# repetition measures, in turn: the health check, then each case on clickd
# and right after on VW. The load is recorded before every measurement; the
# servers' CPU time (utime + stime of every process and thread, from
# /proc/PID/stat) around each. Servers are stopped by PID.
#
# Output: bench/out/vw_compare/ (git-ignored): run.txt, results.jsonl,
# summary.md (by summarize.py), the servers' logs, teach.vw and the VW model.
# Environment: VW_BIN, BUILD_DIR (build/release; needs clickd, clickctl and
# vw_loadgen, i.e. CLICKD_BUILD_BENCH=ON), REPEATS (3), DURATION_S (5),
# WARMUP_S (1), TEACH_REQUESTS (300 per shape, 100 examples each), WIRE
# ("features keys": clickd's rows for each of clickctl loadgen's --wire forms,
# Feature messages and client-hashed packed keys; "packed" is the third).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ ${VW_COMPARE_IN_NETNS:-0} != 1 ]]; then
  if [[ $(id -u) != 0 ]]; then
    echo "run.sh: needs root for 'unshare -n' (vw --daemon listens on 0.0.0.0)" >&2
    exit 1
  fi
  exec env VW_COMPARE_IN_NETNS=1 unshare -n bash "$0" "$@"
fi
ip link set lo up

build=${BUILD_DIR:-build/release}
repeats=${REPEATS:-3}
wires=${WIRE:-features keys}
duration=${DURATION_S:-5}
warmup=${WARMUP_S:-1}
teach_requests=${TEACH_REQUESTS:-300}
vw=${VW_BIN:-}
clickd=$build/server/clickd
clickctl=$build/client/clickctl
vw_loadgen=$build/bench/vw_compare/vw_loadgen
for binary in "$clickd" "$clickctl" "$vw_loadgen"; do
  if [[ ! -x $binary ]]; then
    echo "run.sh: $binary is missing: build clickd clickctl vw_loadgen in $build" \
      "(CLICKD_BUILD_BENCH=ON) or set BUILD_DIR" >&2
    exit 1
  fi
done
if [[ -n $vw && ! -x $vw ]]; then
  echo "run.sh: VW_BIN=$vw is not an executable" >&2
  exit 1
fi
out=bench/out/vw_compare
rm -rf "$out"
mkdir -p "$out"
results=$out/results.jsonl
: > "$results"
exec > >(tee "$out/run.txt") 2>&1

echo "# clickd vs Vowpal Wabbit's daemon, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/Mem:/{print $2}') GiB," \
  "$(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
echo "build: $build, $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")"
echo "clickd sources: sha256 of core/ server/ client/ proto/ $(find core server client proto -name '*.h' -o -name '*.cc' -o -name '*.proto' |
  grep -v _test | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)"
if [[ -n $vw ]]; then
  echo "vw: $vw, $("$vw" --version 2>&1 | head -1)"
else
  echo "vw: VW_BIN is not set: the VW rows are skipped"
fi
echo "network: private namespace (unshare -n), loopback only"
echo "pinning: servers on CPU 0, clients on CPU 1 (taskset)"
echo "runs: ${warmup} s warmup + ${duration} s measured, ${repeats} repetitions"

pids=()
stop_servers() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_servers EXIT

machine_load() {
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), cpu pressure:" \
    "$(head -1 /proc/pressure/cpu 2>/dev/null || echo unknown)"
}

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=127.0.0.1:$port
mkdir -p "$out/clickd_data"
taskset -c 0 "$clickd" --address="$server" --data_dir="$out/clickd_data" > "$out/clickd.log" 2>&1 &
clickd_pid=$!
pids+=("$clickd_pid")

loadgen() {
  taskset -c 1 "$clickctl" loadgen --server="$server" --json "$@"
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

# The cases: name, then the shape flags both load generators take.
shape_a=(--context_features=0 --candidates=100 --candidate_features=40)
shape_b=(--context_features=20 --candidates=100 --candidate_features=20)

echo
echo "## teaching both models the same lines (not measured)"
machine_load
"$vw_loadgen" --teach_out="$out/teach_a.vw" --requests="$teach_requests" --request_seed=7 "${shape_a[@]}"
"$vw_loadgen" --teach_out="$out/teach_b.vw" --requests="$teach_requests" --request_seed=9 "${shape_b[@]}"
cat "$out/teach_a.vw" "$out/teach_b.vw" > "$out/teach.vw"
rm "$out/teach_a.vw" "$out/teach_b.vw"
echo "teach.vw: $(wc -l < "$out/teach.vw") labeled lines"
taskset -c 1 "$clickctl" replay --server="$server" --format=vw --json "$out/teach.vw" | tail -1

vw_pid=()  # vw_pid[N]: the daemon with N children
vw_port=()
start_vw() {
  local children=$1 dir=$out/vw$1
  mkdir -p "$dir"
  taskset -c 0 "$vw" --daemon --foreground --port 0 --port_file "$dir/port" \
    --num_children "$children" -i "$out/vw_model" -t --link logistic --quiet \
    > "$dir/vw.log" 2>&1 &
  vw_pid[$children]=$!
  pids+=("$!")
  local attempt
  for attempt in $(seq 100); do
    [[ -s $dir/port ]] && break
    if ! kill -0 "${vw_pid[$children]}" 2>/dev/null || [[ $attempt == 100 ]]; then
      echo "run.sh: vw --daemon did not start:" >&2
      cat "$dir/vw.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  vw_port[$children]=$(cat "$dir/port")
  echo "vw --daemon --num_children $children (pid ${vw_pid[$children]}) on port ${vw_port[$children]}"
}
if [[ -n $vw ]]; then
  taskset -c 1 "$vw" --ftrl --loss_function logistic -b 24 -d "$out/teach.vw" \
    -f "$out/vw_model" 2>&1 | grep -E 'average loss|number of examples' || true
  start_vw 1
  start_vw 8
fi

# CPU time so far (user + system) of process PID, its threads and its child
# processes (VW's daemon serves from forked children), in clock ticks.
process_ticks() {
  local pid=$1 child total
  total=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  for child in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$child/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
ticks_per_second=$(getconf CLK_TCK)

# record CASE REP SERVER_PID BEFORE AFTER LOAD LINE: one row of results.jsonl.
record() {
  python3 - "$@" "$ticks_per_second" "$results" <<'EOF'
import json, sys
name, rep, server, before, after, load, line, hz, results = sys.argv[1:]
r = json.loads(line)
calls = r["requests"] + r["warmup_requests"]
cpu_s = (int(after) - int(before)) / int(hz)
row = {"case": name, "rep": int(rep), "load1": float(load), "server": server,
       "server_cpu_us_per_call": cpu_s * 1e6 / calls if calls else None, "result": r}
candidates = r.get("candidates", 0)
if candidates and calls:
    row["server_cpu_us_per_candidate"] = cpu_s * 1e6 / (calls * candidates)
with open(results, "a") as f:
    f.write(json.dumps(row) + "\n")
rate = r.get("candidates_per_second", r["rate"])
unit = "cand/s" if "candidates_per_second" in r else "calls/s"
per = row.get("server_cpu_us_per_candidate", row["server_cpu_us_per_call"]) or 0
print(f"  {name:<22} load {load:>5} {rate:10.0f} {unit:<7} p50 {r['p50_us']:9.1f} us"
      f"  server cpu {per:7.2f} us/{'cand' if candidates else 'call'}"
      f"  client cpu {r['client_cpu_us_per_call']:7.1f} us/call  errors {r['errors']}")
EOF
}

# measure_clickd CASE REP ARGS...: one clickctl loadgen run.
measure_clickd() {
  local name=$1 rep=$2
  shift 2
  local load before after line
  load=$(cut -d' ' -f1 /proc/loadavg)
  before=$(process_ticks "$clickd_pid")
  line=$(loadgen --warmup_s="$warmup" --duration_s="$duration" "$@" | tail -1)
  after=$(process_ticks "$clickd_pid")
  record "$name" "$rep" clickd "$before" "$after" "$load" "$line"
}

# measure_vw CASE REP N ARGS...: one vw_loadgen run, N connections against
# the daemon with N children.
measure_vw() {
  local name=$1 rep=$2 n=$3
  shift 3
  [[ -n $vw ]] || return 0
  local load before after line pid=${vw_pid[$n]}
  load=$(cut -d' ' -f1 /proc/loadavg)
  before=$(process_ticks "$pid")
  line=$(taskset -c 1 "$vw_loadgen" --port="${vw_port[$n]}" --connections="$n" \
    --warmup_s="$warmup" --duration_s="$duration" "$@" | tail -1) || true
  after=$(process_ticks "$pid")
  if [[ -z $line ]]; then
    echo "run.sh: vw_loadgen failed for $name" >&2
    exit 1
  fi
  record "$name" "$rep" vw "$before" "$after" "$load" "$line"
}

for rep in $(seq "$repeats"); do
  echo
  echo "## repetition $rep"
  machine_load
  ps -eo pcpu,comm --sort=-pcpu | head -6 | tail -5 | tr -s ' ' | paste -sd';' |
    sed 's/^/busiest processes (%cpu, lifetime): /'
  measure_clickd health_c1 "$rep" --method=health --concurrency=1
  measure_clickd health_c8 "$rep" --method=health --concurrency=8
  for n in 1 8; do
    for wire in $wires; do
      suffix=$([[ $wire == features ]] && echo "" || echo "_$wire")
      measure_clickd "a_clickd${suffix}_c$n" "$rep" --method=predict "${shape_a[@]}" \
        --concurrency="$n" --wire="$wire"
    done
    measure_vw "a_vw_c$n" "$rep" "$n" "${shape_a[@]}"
    for wire in $wires; do
      suffix=$([[ $wire == features ]] && echo "" || echo "_$wire")
      measure_clickd "b_clickd${suffix}_c$n" "$rep" --method=predict "${shape_b[@]}" \
        --concurrency="$n" --wire="$wire"
    done
    measure_vw "b_vw_c$n" "$rep" "$n" "${shape_b[@]}"
  done
done

echo
machine_load
/usr/bin/python3 bench/vw_compare/summarize.py "$results" | tee "$out/summary.md"
