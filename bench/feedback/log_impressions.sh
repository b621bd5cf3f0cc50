#!/usr/bin/env bash
# What logging impressions costs a Predict (docs/feedback.md#the-join-buffer,
# results in docs/archive/performance_training.md, "The impression-to-click loop"), ~2 min:
#
#   bash scripts/build.sh release && bash bench/feedback/log_impressions.sh
#
# Starts a release clickd with --data_dir (a fresh temporary directory,
# --update_log_sync=every_request, the default) on a free port of
# 127.0.0.1 and creates a model with the loop (TTL 1 h, a 4 GiB budget so
# that no run fills it). Then, REPEATS times, in one repetition side by
# side: Predict of 1 candidate x 40 features without and with
# log_impressions, and 10 candidates x 40 with and without, closed loop at
# 1 and 8 in flight. Prints calls/s and p50 of each and the ratio with/without;
# the machine load is printed before each repetition. Stops clickd by PID.
# Environment: BUILD_DIR (build/release), REPEATS (2), DURATION_S (3),
# MODE (local, or replicated: clickd is one replica of --replication=jetstream
# on a 3-node nats-server JetStream cluster started here on 127.0.0.1, R=3,
# file storage in a temporary directory, so logging an impression is a
# publish to the replicated log instead of a sync of the update log).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
repeats=${REPEATS:-2}
duration=${DURATION_S:-3}
clickd=$build/server/clickd
clickctl=$build/client/clickctl
for binary in "$clickd" "$clickctl"; do
  [[ -x $binary ]] || { echo "log_impressions.sh: $binary is missing" >&2; exit 1; }
done
out=bench/out/feedback
mkdir -p "$out"
data_dir=$(mktemp -d)
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=127.0.0.1:$port
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
mode=${MODE:-local}
nats_pids=()
clickd_pid=
cleanup() {
  [[ -n $clickd_pid ]] && { kill -TERM "$clickd_pid" 2>/dev/null || true; wait "$clickd_pid" 2>/dev/null || true; }
  for pid in "${nats_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$data_dir"
}
trap cleanup EXIT
flags=(--address="$server" --data_dir="$data_dir/clickd" --snapshot_interval=0 --metrics_port=0)
case $mode in
  local) ;;
  replicated)
    client_ports=() route_ports=() monitor_ports=()
    for i in 0 1 2; do
      client_ports+=("$(free_port)") route_ports+=("$(free_port)") monitor_ports+=("$(free_port)")
    done
    routes=$(printf 'nats://127.0.0.1:%s,' "${route_ports[@]}")
    for i in 0 1 2; do
      /usr/local/bin/nats-server -a 127.0.0.1 -p "${client_ports[$i]}" -m "${monitor_ports[$i]}" \
        -js -sd "$data_dir/nats$i" -n "n$i" --cluster_name=bench \
        --cluster="nats://127.0.0.1:${route_ports[$i]}" --routes="${routes%,}" \
        > "$out/nats$i.log" 2>&1 &
      nats_pids+=($!)
    done
    for i in 0 1 2; do
      for attempt in $(seq 100); do
        curl -sf "http://127.0.0.1:${monitor_ports[$i]}/healthz?js-enabled-only=true" > /dev/null && break
        sleep 0.2
      done
    done
    urls=$(printf 'nats://127.0.0.1:%s,' "${client_ports[@]}")
    flags+=(--replication=jetstream --nats_url="${urls%,}" --nats_replicas=3 --replica_id=bench
            --catch_up_timeout=60s)
    ;;
  *) echo "log_impressions.sh: MODE is local or replicated, not $mode" >&2; exit 2 ;;
esac
# A replica's first start may find the new cluster without a JetStream
# leader yet; it then exits asking to be retried.
for start in $(seq 10); do
  "$clickd" "${flags[@]}" > "$out/clickd.log" 2>&1 &
  clickd_pid=$!
  for attempt in $(seq 50); do
    "$clickctl" loadgen --server="$server" --method=health --max_requests=1 --deadline_ms=500 \
      > /dev/null 2>&1 && break 2
    kill -0 "$clickd_pid" 2>/dev/null || break
    sleep 0.2
  done
  wait "$clickd_pid" 2>/dev/null || true
  clickd_pid=
  sleep 1
done
[[ -n $clickd_pid ]] || { echo "log_impressions.sh: clickd did not start: $out/clickd.log" >&2; exit 1; }
"$clickctl" models create --server="$server" --model=loop --feedback_ttl_seconds=3600 \
  --feedback_max_buffer_bytes=4294967296 > /dev/null

echo "# Predict with and without log_impressions, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs"
if [[ $mode == local ]]; then
  echo "# clickd --data_dir (update log synced per request), model with feedback TTL 3600 s"
else
  echo "# clickd replica on a 3-node JetStream cluster (R=3, file storage), model with feedback TTL 3600 s"
fi
results=$out/results.jsonl
: > "$results"
for rep in $(seq "$repeats"); do
  echo "repetition $rep, load: $(cut -d' ' -f1-3 /proc/loadavg)"
  for candidates in 1 10; do
    for concurrency in 1 8; do
      for log in false true; do
        line=$("$clickctl" loadgen --server="$server" --json --method=predict --model=loop \
          --candidates="$candidates" --candidate_features=40 --concurrency="$concurrency" \
          --duration_s="$duration" --warmup_s=0.5 --log_impressions="$log")
        echo "{\"rep\": $rep, \"candidates\": $candidates, \"concurrency\": $concurrency, \"log\": $log, \"run\": $line}" >> "$results"
      done
    done
  done
done
/usr/bin/python3 - "$results" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
def cps(r): return r["run"]["rate"]
print("| candidates x 40 | in flight | calls/s without | calls/s with | with / without | p50 us without | p50 us with |")
print("|---|---|---|---|---|---|---|")
for c in (1, 10):
    for k in (1, 8):
        pick = lambda log: [r for r in rows if r["candidates"] == c and r["concurrency"] == k and r["log"] == log]
        w, wo = pick(True), pick(False)
        a = statistics.median(cps(r) for r in wo); b = statistics.median(cps(r) for r in w)
        p_a = statistics.median(r["run"]["p50_us"] for r in wo)
        p_b = statistics.median(r["run"]["p50_us"] for r in w)
        assert all(r["run"]["errors"] == 0 for r in w + wo), "a run had errors"
        print(f"| {c} | {k} | {a:.0f} | {b:.0f} | {b / a:.2f}x | {p_a:.0f} | {p_b:.0f} |")
PY
