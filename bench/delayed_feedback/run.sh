#!/usr/bin/env bash
# Regenerates docs/results_delayed_feedback.md's tables and plots: the four
# ways of learning from delayed clicks (oracle, wait-for-TTL, fake negatives
# without correction, FNW) on criteo_8k, iPinYou and a synthetic log of
# SYNTHETIC examples, for exponential and log-normal click delays, SEEDS
# delay draws each, then report.py.
#
#   bash bench/delayed_feedback/run.sh          # builds build/release's targets
#   BUILD_DIR=build/rel JOBS=1 bash bench/delayed_feedback/run.sh
#
# Every setting is here, fixed before any run: an impression every 10 s;
# exponential delays of mean 600 s; log-normal delays with mu 5.272 and
# sigma 1.5 (median 195 s, mean 600 s, a heavier tail); the attribution
# window 7 x the mean delay (4,200 s) for both; TTLs of 300 s and 3,600 s;
# FTRL at clickd's defaults.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build/release}
DATA_DIR=${DATA_DIR:-../shared/data}
SEEDS=${SEEDS:-1,2,3}
SYNTHETIC=${SYNTHETIC:-500000}
JOBS=${JOBS:-1}
OUT=bench/out/delayed_feedback
mkdir -p "$OUT"
rm -f "$OUT"/summary_*.csv "$OUT"/curves_*.csv "$OUT"/reliability_*.csv
cmake --build "$BUILD_DIR" --target delayed_feedback_bench gen_click_log >/dev/null
bench="$BUILD_DIR/bench/delayed_feedback/delayed_feedback_bench"
synthetic="$OUT/synthetic_$SYNTHETIC.vw"
# gen_click_log's stationary log (bench/throughput; seed 1), as bench/variants uses it.
[ -s "$synthetic" ] || "$BUILD_DIR/bench/throughput/gen_click_log" --examples="$SYNTHETIC" \
  --seed=1 "$synthetic" >/dev/null
start=$(date +%s)
{ echo "start: $(date -Is) $(uptime)"; echo "commit: $(git rev-parse --short HEAD)"
  echo "binary: $(sha256sum "$bench" | cut -c1-16)"; } >"$OUT/machine.txt"

jobs=()
run() {  # name format file delay-flags...
  local name=$1 format=$2 file=$3; shift 3
  echo "$bench --log=$file --format=$format --name=$name --interval=10 --ttls=300,3600" \
    "--seeds=$SEEDS --out=$OUT $*" >>"$OUT/commands.txt"
  "$bench" --log="$file" --format="$format" --name="$name" --interval=10 --ttls=300,3600 \
    --seeds="$SEEDS" --out="$OUT" "$@" >>"$OUT/log.txt" 2>&1 &
  jobs+=($!)
  if [ ${#jobs[@]} -ge "$JOBS" ]; then wait "${jobs[0]}"; jobs=("${jobs[@]:1}"); fi
}
: >"$OUT/commands.txt"
: >"$OUT/log.txt"
for delay in exponential lognormal; do
  flags=(--delay=$delay --mean_delay=600 --mu=5.272 --sigma=1.5)
  run criteo_8k criteo "$DATA_DIR/criteo_8k/train.csv" "${flags[@]}"
  run ipinyou libsvm "$DATA_DIR/ipinyou/train.fm.txt" "${flags[@]}"
  run synthetic vw "$synthetic" "${flags[@]}"
done
for p in "${jobs[@]}"; do wait "$p"; done
echo "end: $(date -Is) $(uptime); $(( $(date +%s) - start )) s wall" >>"$OUT/machine.txt"
times >"$OUT/times.txt"  # here, not in $(...): a subshell's children are not the script's
echo "cpu of all the script's children (user, system): $(tail -1 "$OUT/times.txt")" >>"$OUT/machine.txt"
/usr/bin/python3 bench/delayed_feedback/report.py "$OUT"
cat "$OUT/log.txt" "$OUT/machine.txt"
