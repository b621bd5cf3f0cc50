#!/usr/bin/env bash
# Predict through every client against one clickd, in one run:
#   1x40    one candidate of 40 named features, 1 call in flight: p50 latency
#   100x40  100 such candidates, 1 call in flight: candidates/s
# and each client's own CPU per call (getrusage of its process; the JVM's
# counts every thread), for the C++ `clickctl loadgen`, Go, Java and Python,
# each in the features and the keys wire form. Every loop is bounded in calls
# (CALLS1, CALLS100) and in time (MAX_SECONDS per loop).
#   bash bench/clients/run.sh [OUT.jsonl]
# Needs build/release (scripts/build.sh release) and the clients' caches
# (scripts/install_client_deps.sh). The server is started here on 127.0.0.1
# and stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export PATH="$PATH:/usr/local/go/bin"
CALLS1=${CALLS1:-3000}
CALLS100=${CALLS100:-300}
MAX_SECONDS=${MAX_SECONDS:-10}
out=${1:-$(mktemp --suffix=.jsonl)}
: >"$out"
clickd="$root/build/release/server/clickd"
clickctl="$root/build/release/client/clickctl"
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$work/machine"
ps -eo pcpu,comm --sort=-pcpu | head -6 | tail -5 | sed 's/^/  busy: /' | tee -a "$work/machine"

(cd client/go && ./generate.sh && GOFLAGS=-mod=readonly go build -o "$work/gobench" ./examples/bench)
(cd client/java && mvn -B -q -o -Dstyle.color=never compile dependency:build-classpath \
  -Dmdep.outputFile=target/classpath.txt >&2)
jcp="$root/client/java/target/classes:$(cat client/java/target/classpath.txt)"

"$clickd" --address=127.0.0.1:0 --metrics_port=0 >"$work/clickd.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  port=$(grep -o '(port [0-9]*)' "$work/clickd.log" | grep -o '[0-9]*' || true)
  [ -n "$port" ] && break
  sleep 0.1
done
server="127.0.0.1:$port"

for wire in features keys; do
  # clickctl loadgen: two runs (1x40, 100x40), merged into one row.
  a=$("$clickctl" loadgen --server="$server" --wire="$wire" --candidates=1 --candidate_features=40 \
      --max_requests="$CALLS1" --duration_s="$MAX_SECONDS" --warmup_s=0.3 --json | tail -1)
  b=$("$clickctl" loadgen --server="$server" --wire="$wire" --candidates=100 --candidate_features=40 \
      --max_requests="$CALLS100" --duration_s="$MAX_SECONDS" --warmup_s=0.3 --json | tail -1)
  /usr/bin/python3 -c '
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(json.dumps({"client": "c++ clickctl loadgen", "wire": sys.argv[3], "p50_us_1x40": a["p50_us"],
  "calls_1x40": a["requests"], "cpu_us_per_call_1x40": a["client_cpu_us_per_call"],
  "candidates_per_s_100x40": b["candidates_per_second"], "calls_100x40": b["requests"],
  "cpu_us_per_call_100x40": b["client_cpu_us_per_call"]}))' "$a" "$b" "$wire" >>"$out"
  args=(--server="$server" --wire="$wire" --calls1="$CALLS1" --calls100="$CALLS100" --max_seconds="$MAX_SECONDS")
  "$work/gobench" "${args[@]}" | tail -1 >>"$out"
  java -cp "$jcp" dev.clickd.client.examples.Bench "${args[@]}" | tail -1 >>"$out"
  PYTHONPATH="$root/build/release/client/python/stubs:$root/client/python" \
    /usr/bin/python3 bench/clients/bench_python.py "${args[@]}" | tail -1 >>"$out"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$work/machine"

/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| client | wire | Predict 1x40 p50 (us) | client CPU/call 1x40 (us) | 100x40 candidates/s | client CPU/call 100x40 (us) | calls (1x40, 100x40) |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['client']} | {r['wire']} | {r['p50_us_1x40']:.0f} | {r['cpu_us_per_call_1x40']:.0f} | "
          f"{r['candidates_per_s_100x40']:,.0f} | {r['cpu_us_per_call_100x40']:.0f} | "
          f"{r['calls_1x40']}, {r['calls_100x40']} |")
PY
echo "results: $out"
