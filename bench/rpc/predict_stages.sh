#!/usr/bin/env bash
# Where a Predict's server instructions go, by stage, counted by callgrind
# (docs/performance_rpc.md, "Where a Predict's instructions go"); ~3 min:
#
#   bash bench/rpc/predict_stages.sh                       # build/release
#   BUILD_DIR=build/rel LABEL=after bash bench/rpc/predict_stages.sh
#   WIRE=features BUILD_DIR=build/old bash bench/rpc/predict_stages.sh   # before --wire
#
# Runs clickd under valgrind --tool=callgrind on a free port of 127.0.0.1,
# teaches the default model as profile.sh does, then for each case zeroes
# the counters, sends CALLS calls with clickctl loadgen (closed loop, 1 in
# flight, not under valgrind) and dumps: a health check (2,000 calls), a
# Predict of 1 candidate x 40 features (2,000) and one of 100 x 40 (100),
# no context. Prints the server's instructions per call (all threads) and
# the inclusive instructions per call of each stage's functions; "the rest"
# is gRPC (transport, polling, the call's reactor) and the server's own
# bookkeeping (metrics, access check). Functions missing from a build (the
# Example path before issue 12, HashPredictRequest after) print 0.
# Output: bench/out/rpc/stages-$LABEL/ (dumps, stages.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${BUILD_DIR:-build/release}
label=${LABEL:-$(basename "$build")}
clickd=$build/server/clickd
clickctl=$build/client/clickctl
source bench/lib/require_binaries.sh
require_binaries predict_stages.sh "build it or set BUILD_DIR" "$clickd" "$clickctl"
if ! command -v valgrind > /dev/null || ! command -v callgrind_control > /dev/null; then
  echo "predict_stages.sh: needs valgrind (apt-get install valgrind)" >&2
  exit 1
fi
out=bench/out/rpc/stages-$label
mkdir -p "$out"
rm -f "$out"/server.*
exec > >(tee "$out/stages.txt") 2>&1

source bench/rpc/callgrind_clickd.sh
start_clickd_under_callgrind "$out" predict_stages.sh
echo "# server instructions per Predict by stage (callgrind), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "build: $build ($label)"
loadgen --method=update_stream --candidate_features=40 --batch_size=100 --max_requests=300 \
  --deadline_ms=600000 --request_seed=8 > /dev/null

: > "$out/index.txt"  # stage_phase appends to it
stage_phase health 2000 --method=health
# WIRE: how the Predicts carry their features (clickctl loadgen --wire):
# Feature messages, packed names, client-hashed packed keys; a build before
# the packed forms takes WIRE=features only (its phases keep the old names).
wires=${WIRE:-features packed keys}
for wire in $wires; do
  suffix=$([[ $wires == features ]] && echo "" || echo "_$wire")
  wire_flag=$([[ $wires == features ]] && echo "" || echo "--wire=$wire")
  stage_phase "predict_1x40$suffix" 2000 --method=predict --candidates=1 --candidate_features=40 $wire_flag
  stage_phase "predict_100x40$suffix" 100 --method=predict --candidates=100 --candidate_features=40 \
    $wire_flag
done
/usr/bin/python3 bench/rpc/predict_stages.py "$out/index.txt"
