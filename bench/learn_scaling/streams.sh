#!/usr/bin/env bash
# Two UpdateStreams into one model through gRPC (issue 12, deliverable 4),
# beside one: a release clickd (not pinned: it has both cores) learns from
# one `clickctl loadgen --method=update_stream` and then from two at once
# (two processes, different request seeds), alternated REPEATS times, for a
# memory-only model and a durable one (--data_dir, --update_log_sync=$SYNC:
# none by default; every_request, clickd's default, or interval).
# 100 examples x 40 features per message, client-hashed packed keys
# (--wire=keys, the form for speed; WIRE=features for Feature messages).
# The clients share the two cores with the server: they cost about a tenth
# of the server's CPU per example with keys, and more with messages.
# Each model is measured unkeyed and keyed (every message with its own
# idempotency_key, clickctl loadgen --idempotency_keys: the form
# docs/replication.md asks clients to use); KEYING=unkeyed or KEYING=keyed
# runs one.
#
#   bash scripts/build.sh release && bash bench/learn_scaling/streams.sh   # ~4 min
#
# Prints one line per measurement (examples/s of each stream and their sum)
# with the load before it and the cores the phase kept busy (clickd's CPU
# from /proc, the clients' from /usr/bin/time, over the phase's wall time)
# and, for the durable model, the update log's syncs per message (from
# clickd's /metrics),
# then the ratios of each 2-stream figure to the 1-stream figure just before
# it, and beside them the ceiling the machine puts on that ratio: the CPUs
# the two clients leave, over the cores the server kept busy for one stream
# (on 2 CPUs, one stream at 1.03 server cores and two clients at 0.19 give
# (2 - 0.19) / 1.03 = 1.76x, even with no cost at all for sharing the
# model). Servers are stopped by PID.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
repeats=${REPEATS:-3}
duration=${DURATION_S:-4}
wire=${WIRE:-keys}
sync=${SYNC:-none}
models=${MODELS:-memory durable}
keyings=${KEYING:-unkeyed keyed}
source bench/lib/clickd_server.sh
bench_setup streams.sh

# stream SERVER SEED OUT: one UpdateStream for DURATION_S seconds; the
# client's CPU seconds (user + sys) go to OUT.cpu.
stream() {
  /usr/bin/time -f "%U %S" -o "$3.cpu" "$clickctl" loadgen --server="$1" --json \
    --method=update_stream --batch_size=100 --candidate_features=40 --wire="$wire" \
    --request_seed="$2" --warmup_s=1 --duration_s="$duration" "${key_flags[@]}" | tail -1 > "$3"
}
# The CPU seconds (user + sys) clickd has used so far.
server_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' "/proc/$clickd_pid/stat"
}
now() { date +%s.%N; }
# busy SERVER_CPU_BEFORE SERVER_CPU_AFTER START END CPU_FILE...: the cores
# the server and the clients kept busy over the phase, "server + clients".
busy() {
  python3 - "$@" <<'PY'
import sys
s0, s1, t0, t1 = map(float, sys.argv[1:5])
client = sum(sum(map(float, open(f).read().split())) for f in sys.argv[5:])
wall = t1 - t0
print(f"{(s1 - s0) / wall:.2f} + {client / wall:.2f} = {(s1 - s0 + client) / wall:.2f} cores")
PY
}
rate_of() { json_field "$1" examples_per_second; }
# metric NAME: the sum of NAME's series on clickd's /metrics.
metric() {
  python3 - "$metrics_port" "$1" <<'PY'
import sys, urllib.request
body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10).read().decode()
print(sum(float(line.split()[-1]) for line in body.splitlines()
          if line.split("{")[0].split(" ")[0] == sys.argv[2]))
PY
}
syncs=clickd_update_log_sync_duration_seconds_count
# log_syncs SYNCS0 EXAMPLES0: the update log's syncs per message (of 100
# examples) since clickd had synced SYNCS0 times and learned EXAMPLES0
# examples, for a durable model (nothing for a memory-only one).
log_syncs() {
  [[ $model == durable ]] || return 0
  local synced learned
  synced=$(metric "$syncs")
  learned=$(metric clickd_model_updates)
  python3 -c "print(f'log syncs per message {($synced - $1) / max(1, ($learned - $2) / 100):.2f}')"
}

echo "# two UpdateStreams, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $build, wire=$wire, durable sync=$sync"
for model in $models; do
for keying in $keyings; do
    key_flags=()
    [[ $keying == keyed ]] && key_flags+=(--idempotency_keys)
    label=$model
    [[ $keying == keyed ]] && label="$model keyed"
    flags=()
    if [[ $model == durable ]]; then
      rm -rf "$dir/data"
      flags+=(--data_dir="$dir/data" --update_log_sync="$sync")
    fi
    metrics_port=$(free_port)
    # shellcheck disable=SC2086  # CLICKD_FLAGS: more flags, split on spaces
    start_clickd "${flags[@]}" --metrics_port="$metrics_port" ${CLICKD_FLAGS:-}
    one=()
    two=()
    ceilings=()
    for rep in $(seq "$repeats"); do
      load=$(cut -d' ' -f1 /proc/loadavg)
      c0=$(server_cpu) t0=$(now) s0=$(metric "$syncs") e0=$(metric clickd_model_updates)
      stream "$server" $((100 + rep)) "$dir/a.json"
      c1=$(server_cpu) t1=$(now)
      r1=$(rate_of "$dir/a.json")
      busy1=$(busy "$c0" "$c1" "$t0" "$t1" "$dir/a.json.cpu")
      echo "$label rep $rep: 1 stream  $r1 examples/s (load $load; busy: server + client $busy1)" \
        "$(log_syncs "$s0" "$e0")"
      load=$(cut -d' ' -f1 /proc/loadavg)
      c0=$(server_cpu) t0=$(now) s0=$(metric "$syncs") e0=$(metric clickd_model_updates)
      stream "$server" $((200 + rep)) "$dir/b.json" &
      first=$!
      stream "$server" $((300 + rep)) "$dir/c.json"
      wait "$first"
      c1=$(server_cpu) t1=$(now)
      rb=$(rate_of "$dir/b.json")
      rc=$(rate_of "$dir/c.json")
      busy2=$(busy "$c0" "$c1" "$t0" "$t1" "$dir/b.json.cpu" "$dir/c.json.cpu")
      echo "$label rep $rep: 2 streams $rb + $rc = $((rb + rc)) examples/s (load $load; busy:" \
        "server + clients $busy2) $(log_syncs "$s0" "$e0")"
      one+=("$r1")
      two+=($((rb + rc)))
      # What this machine allows: the cores the clients leave, over the cores
      # the server kept busy for one stream (each example costing the server
      # as much CPU with two streams as with one).
      ceilings+=("$(awk -v n="$(nproc)" -v one="$busy1" -v two="$busy2" 'BEGIN {
        split(one, a, " "); split(two, b, " "); printf "%.2f", (n - b[3]) / a[1] }')")
    done
    stop_clickd
    ratios=""
    bounds=""
    for i in "${!one[@]}"; do
      ratios+=" $(python3 -c "print(f'{${two[$i]} / ${one[$i]}:.2f}x')")"
      bounds+=" ${ceilings[$i]}x"
    done
    echo "$label: 2 streams / 1 stream:$ratios"
    echo "$label: the CPU ceiling of that ratio (CPUs the clients leave / server cores of 1 stream):$bounds"
  done
done
