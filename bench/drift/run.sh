#!/usr/bin/env bash
# Regenerates docs/drift.md's figures: FTRL at its defaults, a grid of FTRL
# settings and the drift option (ftrl.decay) on synthetic click streams with
# a known click probability (stationary, abrupt and gradual drift; SEEDS
# data seeds each), then the option against the defaults on the shared
# click logs through `clickctl replay --offline`, then tables and plots.
#
#   bash bench/drift/run.sh                 # builds build/release's targets
#   BUILD_DIR=build/rel EXAMPLES=1000000 SEEDS="1 2 3" bash bench/drift/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build/release}
EXAMPLES=${EXAMPLES:-1000000}
SEEDS=${SEEDS:-"1 2 3"}
KINDS=${KINDS:-"stationary abrupt gradual"}
DATA_DIR=${DATA_DIR:-../shared/data}
OUT=bench/out/drift
mkdir -p "$OUT"
cmake --build "$BUILD_DIR" --target drift_bench clickctl >/dev/null
start=$(date +%s)
{ echo "start: $(date -Is) $(uptime)"; echo "commit: $(git rev-parse --short HEAD)"; } >"$OUT/machine.txt"

# Two streams at a time (the machine has two cores).
pids=()
for kind in $KINDS; do
  for seed in $SEEDS; do
    "$BUILD_DIR/bench/drift/drift_bench" --kind="$kind" --seed="$seed" --examples="$EXAMPLES" \
      --out="$OUT" >"$OUT/log_${kind}_${seed}.txt" 2>&1 &
    pids+=($!)
    if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
done
for p in "${pids[@]}"; do wait "$p"; done

# The shared click logs: FTRL at its defaults, and with the option.
clickctl="$BUILD_DIR/client/clickctl"
real() {  # name format train test decay
  "$clickctl" replay --offline --format="$2" --loss=logistic --optimizer=ftrl --ftrl_decay="$5" \
    --test_file="$DATA_DIR/$4" --bootstrap=1000 --bootstrap_seed=1 --progress_every=0 --json \
    "$DATA_DIR/$3" | tail -1 >"$OUT/real_$1_decay$5.json"
}
for decay in 1 0.999; do
  real criteo_8k criteo criteo_8k/train.csv criteo_8k/test.csv "$decay"
  real ipinyou libsvm ipinyou/train.fm.txt ipinyou/test.fm.txt "$decay"
done
# The synthetic click log of the throughput benchmark (stationary, 2M
# examples; its held-back part is the last 10 %).
if [ -x "$BUILD_DIR/bench/throughput/gen_click_log" ]; then
  [ -s "$OUT/synthetic.vw" ] || "$BUILD_DIR/bench/throughput/gen_click_log" --examples=1000000 \
    --seed=1 "$OUT/synthetic.vw"
  head -n 900000 "$OUT/synthetic.vw" >"$OUT/synthetic_train.vw"
  tail -n 100000 "$OUT/synthetic.vw" >"$OUT/synthetic_test.vw"
  for decay in 1 0.999; do
    "$clickctl" replay --offline --format=vw --loss=logistic --optimizer=ftrl --ftrl_decay="$decay" \
      --test_file="$OUT/synthetic_test.vw" --bootstrap=200 --bootstrap_seed=1 --progress_every=0 \
      --json "$OUT/synthetic_train.vw" | tail -1 >"$OUT/real_synthetic_decay$decay.json"
  done
fi
echo "end: $(date -Is) $(uptime); $(( $(date +%s) - start )) s wall" >>"$OUT/machine.txt"
/usr/bin/python3 bench/drift/report.py "$OUT"
cat "$OUT/machine.txt"
