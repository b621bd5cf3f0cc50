#!/usr/bin/env bash
# Regenerates every seed 001 figure (Streeter & McMahan 2010, "Less Regret via
# Online Conditioning"): Table 1 (Global, Per-Coord, PA, CW) by `clickctl
# replay`, the Table 2 analogue by regret_synthetic, then prints the tables
# and draws docs/img/seed001_*.png; last, Theorem 1 by theorem1.sh.
#
#   bash bench/seed001/run.sh                      # builds build/release first
#   BUILD_DIR=build/h3 bash bench/seed001/run.sh   # another (Release) build dir
#
# Environment: BUILD_DIR (default build/release), CLICKCTL, REGRET_SYNTHETIC and
# THEOREM1 (use these binaries, build nothing), OUT (default bench/out/seed001),
# JOBS (parallel runs, default nproc), DATA (default ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build/release}
OUT=${OUT:-bench/out/seed001}
JOBS=${JOBS:-$(nproc)}
DATA=${DATA:-../shared/data}
PY=/usr/bin/python3  # Debian's python3, which sees python3-matplotlib
SECONDS=0

if [[ -z ${CLICKCTL:-} || -z ${REGRET_SYNTHETIC:-} || -z ${THEOREM1:-} ]]; then
  if [[ $BUILD_DIR == build/release ]]; then
    bash scripts/build.sh release
  else
    [[ -f $BUILD_DIR/build.ninja ]] || cmake -S . -B "$BUILD_DIR" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
    cmake --build "$BUILD_DIR" --target clickctl regret_synthetic theorem1
  fi
fi
export CLICKCTL=${CLICKCTL:-$BUILD_DIR/client/clickctl}
REGRET_SYNTHETIC=${REGRET_SYNTHETIC:-$BUILD_DIR/bench/seed001/regret_synthetic}
export THEOREM1=${THEOREM1:-$BUILD_DIR/bench/seed001/theorem1}
export OUT
rm -rf "$OUT/table1" "$OUT/table2"
mkdir -p "$OUT/table1" "$OUT/table2" docs/img

# ---- Table 1: one shuffled progressive pass, hinge loss, unit-length rows,
# no bias. `setting` is the searched hyperparameter:
# - pc_ogd, global_ogd: the learning-rate scale times R, F = [-100, 100]^n
#   (the paper: 0.6 per-coordinate, 0.2 global);
# - pa: PA-I's C (the paper gives none; clickd's default is 1);
# - cw: eta, with a = 1 (the paper: phi = 1, a = 1; phi = 1 is
#   eta = Phi(1) = 0.8413447460685429);
# - "-": the optimizer with clickd's defaults (not in the paper).
table1_run() {  # name format path optimizer setting seed
  local name=$1 format=$2 path=$3 optimizer=$4 setting=$5 seed=$6
  local flags=(--offline "--format=$format" --loss=hinge --bias=false --normalize
    "--optimizer=$optimizer" "--shuffle_seed=$seed" --progress_every=0 --json)
  case "$optimizer:$setting" in
    *:-) ;;
    pa:*) flags+=("--pa_c=$setting") ;;
    cw:*) flags+=("--cw_eta=$setting" --cw_a=1) ;;
    *) flags+=(--radius=100 "--scale=$(awk "BEGIN { printf \"%.6g\", $setting / 100 }")") ;;
  esac
  local json
  json=$("$CLICKCTL" replay "${flags[@]}" "$path" | tail -n 1)
  printf '{"dataset":"%s","optimizer":"%s","setting":"%s","seed":%s,"flags":"%s","result":%s}\n' \
    "$name" "$optimizer" "$setting" "$seed" "${flags[*]}" "$json" \
    >"$OUT/table1/$name.$optimizer.$setting.$seed.json"
}
export -f table1_run

datasets=(
  "books libsvm $DATA/blitzer/books_train.svmlight"
  "dvd libsvm $DATA/blitzer/dvd_train.svmlight"
  "electronics libsvm $DATA/blitzer/electronics_train.svmlight"
  "kitchen libsvm $DATA/blitzer/kitchen_train.svmlight"
  "rcv1_sample vw $DATA/rcv1_small/rcv1_small.dat"
)
scales_r=(0.1 0.2 0.3 0.4 0.6 1.0 2.0)
pa_c=(0.01 0.03 0.1 0.3 1 3 10)
cw_eta=(0.55 0.6 0.7 0.8 0.8413447460685429 0.9 0.95 0.99)
{
  for d in "${datasets[@]}"; do
    for seed in $(seq 1 10); do
      for s in "${scales_r[@]}"; do
        echo "$d pc_ogd $s $seed"
        echo "$d global_ogd $s $seed"
      done
      for c in "${pa_c[@]}"; do echo "$d pa $c $seed"; done
      for eta in "${cw_eta[@]}"; do echo "$d cw $eta $seed"; done
      echo "$d ftrl - $seed"
      echo "$d adagrad - $seed"
    done
  done
} >"$OUT/table1_jobs.txt"
echo "table 1: $(wc -l <"$OUT/table1_jobs.txt") replays on $JOBS cores ..."
xargs -P "$JOBS" -L 1 bash -c 'table1_run "$@"' _ <"$OUT/table1_jobs.txt"
cat "$OUT"/table1/*.json >"$OUT/table1_runs.jsonl"
echo "table 1 done after ${SECONDS}s"

# ---- Table 2 analogue: synthetic Zipf ads data, logistic loss, F = [-1, 1]^n,
# scale 0.1 (plus the sensitivity scales), regret against the best fixed model.
table2_run() {  # examples seed passes checkpoints
  "$REGRET_SYNTHETIC" --examples="$1" --seed="$2" --passes="$3" --checkpoints="$4" \
    --scale=0.1 --sensitivity_scales=0.01,0.03,0.3,1 --radius=1 --tolerance=1e-4 \
    --out="$OUT/table2/T$1_seed$2" >/dev/null
}
export -f table2_run
export REGRET_SYNTHETIC
prefixes=1000,3000,10000,30000,100000
# The longest run first, so that the short ones share the other core(s).
xargs -P "$JOBS" -L 1 bash -c 'table2_run "$@"' _ <<EOF
1000000 1 30 $prefixes,300000,1000000
300000 1 100 $prefixes,300000
100000 1 100 $prefixes
100000 2 100 $prefixes
100000 3 100 $prefixes
EOF
echo "table 2 done after ${SECONDS}s"

"$PY" bench/seed001/report.py "$OUT" docs/img
OUT=$OUT bash bench/seed001/theorem1.sh
echo "seed001: everything regenerated in ${SECONDS}s on $(nproc) cores"
