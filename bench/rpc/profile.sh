#!/usr/bin/env bash
# Server instructions per RPC, counted by callgrind: a figure the machine's
# load hardly disturbs, to go with bench/rpc/run.sh's timings (~4 minutes):
#
#   bash bench/rpc/profile.sh                     # build/release
#   BUILD_DIR=build/h8 bash bench/rpc/profile.sh
#
# Runs clickd under valgrind --tool=callgrind on a free port of 127.0.0.1,
# teaches the default model as run.sh does, then for each case zeroes the
# counters, sends N calls with clickctl loadgen (closed loop, 1 in flight,
# not under valgrind) and dumps the counters: instructions per call = the
# dump's total / N, over every server thread. Also counts the client's
# instructions per call at 64 in flight (two runs of different lengths, the
# difference divided by the extra calls, so setup cancels out).
#
# The per-call totals include gRPC's timer and poller threads, whose work
# grows with wall time rather than with calls, so they vary by ~15 % from
# run to run: each case runs REPEATS (3) times and the median (min-max) is
# printed. The breakdown of Predict by function (inclusive instructions of
# request parsing, conversion, scoring, destruction) does not have that
# noise.
# Output: bench/out/rpc/profile.txt, and the callgrind dumps in
# bench/out/rpc/callgrind/ for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${BUILD_DIR:-build/release}
repeats=${REPEATS:-3}
clickd=$build/server/clickd
clickctl=$build/client/clickctl
source bench/lib/require_binaries.sh
require_binaries profile.sh "run 'bash scripts/build.sh release' or set BUILD_DIR" "$clickd" \
  "$clickctl"
if ! command -v valgrind > /dev/null || ! command -v callgrind_control > /dev/null; then
  echo "profile.sh: needs valgrind (apt-get install valgrind)" >&2
  exit 1
fi
out=bench/out/rpc
dumps=$out/callgrind
mkdir -p "$dumps"
rm -f "$dumps"/server.* "$dumps"/client.*
exec > >(tee "$out/profile.txt") 2>&1

source bench/rpc/callgrind_clickd.sh
start_clickd_under_callgrind "$dumps" profile.sh
echo "# server instructions per call (callgrind, all threads), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "build: $build; sources: sha256 of core/ server/ client/ proto/ $(find core server client proto \
  -name '*.h' -o -name '*.cc' -o -name '*.proto' | grep -v _test | LC_ALL=C sort | xargs cat |
  sha256sum | cut -c1-16)"
# Teach the model as run.sh does (the stream's deadline allows for valgrind).
loadgen --method=update_stream --context_features=20 --candidate_features=40 --batch_size=100 \
  --max_requests=300 --deadline_ms=600000 --request_seed=7 > /dev/null
loadgen --method=update_stream --candidate_features=40 --batch_size=100 --max_requests=300 \
  --deadline_ms=600000 --request_seed=8 > /dev/null
loadgen --method=update_stream --context_features=20 --candidate_features=40 --batch_size=100 \
  --max_requests=300 --deadline_ms=600000 --request_seed=9 --feature_ids > /dev/null

# phase NAME REP CALLS ARGS...: one dump of CALLS calls of one case.
phase() {
  local name=$1 rep=$2 calls=$3
  shift 3
  callgrind_control -z "$clickd_pid" > /dev/null 2>&1
  local line
  line=$(loadgen --max_requests="$calls" --deadline_ms=60000 "$@" | tail -1)
  callgrind_control -d "$name.$rep" "$clickd_pid" > /dev/null 2>&1
  python3 -c "import json,sys; r=json.loads(sys.argv[1]); assert r['errors']==0, r" "$line"
  echo "$name $rep $calls $(grep -l "^desc: Trigger: dump $name.$rep\$" "$dumps"/server.* | head -1)" \
    >> "$dumps/index.txt"
}

: > "$dumps/index.txt"
for rep in $(seq "$repeats"); do
  phase health "$rep" 2000 --method=health
  phase predict_1x40 "$rep" 2000 --method=predict --candidates=1 --candidate_features=40
  phase predict_20+1x20 "$rep" 2000 --method=predict --context_features=20 --candidates=1 \
    --candidate_features=20
  phase predict_20+100x20 "$rep" 200 --method=predict --context_features=20 --candidates=100 \
    --candidate_features=20
  phase predict_1x40_ids "$rep" 2000 --method=predict --candidates=1 --candidate_features=40 \
    --feature_ids
  phase predict_20+100x20_ids "$rep" 200 --method=predict --context_features=20 --candidates=100 \
    --candidate_features=20 --feature_ids
  phase update_1x40 "$rep" 2000 --method=update --candidates=1 --candidate_features=40
  phase update_100x40 "$rep" 200 --method=update --candidates=100 --candidate_features=40
done
python3 - "$dumps/index.txt" <<'PY'
import collections, re, statistics, subprocess, sys

def totals(path):
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])

def inclusive(path, patterns):
    """Inclusive instructions of the functions matching each pattern (summed)."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                          capture_output=True, text=True, check=True).stdout
    out = {}
    for label, pattern in patterns:
        out[label] = sum(int(line.split()[0].replace(",", "")) for line in text.splitlines()
                         if re.search(pattern, line))
    return out

per_call = collections.defaultdict(list)
last = {}
for line in open(sys.argv[1]):
    name, rep, calls, path = line.split()
    per_call[name].append(totals(path) / int(calls))
    last[name] = (path, int(calls))
print("server instructions per call, median (min-max) over repetitions:")
for name, values in per_call.items():
    print(f"  {name:<20} {statistics.median(values):>11,.0f} "
          f"({min(values):,.0f}-{max(values):,.0f})  "
          f"{statistics.median(values) / statistics.median(per_call['health']):5.2f}x health")
patterns = [
    ("parse request (protobuf)", r"CallbackUnaryHandler<clickd::v1::PredictRequest.*::Deserialize"),
    ("ScorePredictRequest", r"ClickdService::ScorePredictRequest"),
    ("  of which ToExample (convert)", r"clickd::ToExample\("),
    ("  of which ScoreCandidates (hash + model)", r"clickd::ScoreCandidates\("),
    ("destroy request (~PredictRequest)", r"PredictRequest::~PredictRequest\(\)"),
    # The four-argument StrCat, which ToExample calls once per feature.
    ("absl::StrCat, 4 arguments (all callers)",
     r"::StrCat.*\((absl::[a-z0-9_]*::AlphaNum const&, ){3}absl::[a-z0-9_]*::AlphaNum const&\)"),
    ("malloc + free (all callers)", r"malloc\.c:(malloc|free) "),
]
for name in ("predict_1x40", "predict_1x40_ids", "predict_20+100x20", "predict_20+100x20_ids"):
    path, calls = last[name]
    parts = inclusive(path, patterns)
    print(f"{name}: inclusive instructions per call by function (last repetition)")
    for label, _ in patterns:
        print(f"  {label:<42} {parts[label] / calls:>11,.0f}")
PY
stop_clickd
trap - EXIT

echo
echo "# client (clickctl loadgen) instructions per call, 64 in flight"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=127.0.0.1:$port
"$clickd" --address="$server" > "$out/clickd_callgrind.log" 2>&1 &
clickd_pid=$!
trap stop_clickd EXIT
for attempt in $(seq 100); do
  if loadgen --method=health --max_requests=1 --deadline_ms=200 > /dev/null 2>&1; then break; fi
  sleep 0.2
done
client_cost() {
  local name=$1
  shift
  local totals=()
  for calls in 2000 6000; do
    valgrind --tool=callgrind --callgrind-out-file="$dumps/client.$name.$calls" "$clickctl" \
      loadgen --server="$server" --json --warmup_s=0 --duration_s=600 --concurrency=64 \
      --max_requests="$calls" "$@" > /dev/null 2>&1
    totals+=("$(sed -n 's/^totals: //p' "$dumps/client.$name.$calls")")
  done
  printf '  %-26s %12d instructions/call\n' "$name" $(((totals[1] - totals[0]) / 4000))
}
client_cost health --method=health
client_cost predict_1x40 --method=predict --candidates=1 --candidate_features=40
