#!/usr/bin/env bash
# Where an Update's server instructions go, by stage, counted by callgrind
# (docs/performance_rpc.md, "Where an Update's instructions go"); ~3 min:
#
#   bash bench/rpc/update_stages.sh                       # build/release
#   BUILD_DIR=build/rel LABEL=after bash bench/rpc/update_stages.sh
#
# As predict_stages.sh (whose helpers it shares), for unary Updates of one
# memory-only model: 2,000 Updates of 1 example x 40 features and 100 of
# 100 x 40, with each wire form. Prints the server's instructions per call
# and the inclusive instructions per call of each stage's functions: how
# much converting the proto into Examples costs beside hashing and
# learning them (issue 34 item 2).
# Output: bench/out/rpc/update-stages-$LABEL/ (dumps, stages.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${BUILD_DIR:-build/release}
label=${LABEL:-$(basename "$build")}
clickd=$build/server/clickd
clickctl=$build/client/clickctl
source bench/lib/require_binaries.sh
require_binaries update_stages.sh "build it or set BUILD_DIR" "$clickd" "$clickctl"
if ! command -v valgrind > /dev/null || ! command -v callgrind_control > /dev/null; then
  echo "update_stages.sh: needs valgrind (apt-get install valgrind)" >&2
  exit 1
fi
out=bench/out/rpc/update-stages-$label
mkdir -p "$out"
rm -f "$out"/server.*
exec > >(tee "$out/stages.txt") 2>&1

source bench/rpc/callgrind_clickd.sh
start_clickd_under_callgrind "$out" update_stages.sh
echo "# server instructions per Update by stage (callgrind), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "build: $build ($label)"

: > "$out/index.txt"  # stage_phase appends to it
stage_phase health 2000 --method=health
for wire in features packed keys; do
  stage_phase "update_1x40_$wire" 2000 --method=update --candidates=1 --candidate_features=40 \
    --wire="$wire"
  stage_phase "update_100x40_$wire" 100 --method=update --candidates=100 --candidate_features=40 \
    --wire="$wire"
done
/usr/bin/python3 bench/rpc/predict_stages.py "$out/index.txt"
