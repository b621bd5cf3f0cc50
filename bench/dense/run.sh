#!/usr/bin/env bash
# Step time and state memory of the dense optimizers (core/optim/dense) as d
# and tau grow: ADA-FD, FD-SON and ADA-DIAG at d in {500, 2000, 8000}, tau in
# {10, 40}; ADA-FULL and ONS at the sizes they can handle. Writes
# $OUT/step.tsv and prints the table for docs/performance_dense.md, and
# draws docs/img/dense_step_time.png.
#
#   bash bench/dense/run.sh                     # builds build/release first
#   BUILD_DIR=build/hA bash bench/dense/run.sh  # another Release build dir
#
# Environment: BUILD_DIR (default build/release), DENSE_STEP_BENCH (use this
# binary, build nothing), OUT (default bench/out/dense), BUILD_JOBS
# (default 1). Runs on one core, about 3 minutes (ADA-FULL at d = 2000 takes
# about 10 s per round; it gets 1 + 2 warm-up + 3 timed rounds).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build/release}
OUT=${OUT:-bench/out/dense}
PY=/usr/bin/python3  # Debian's python3, which sees python3-matplotlib
SECONDS=0

if [[ -z ${DENSE_STEP_BENCH:-} ]]; then
  [[ -f $BUILD_DIR/build.ninja ]] || cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
  cmake --build "$BUILD_DIR" -j "${BUILD_JOBS:-1}" --target dense_step_bench
fi
BIN=${DENSE_STEP_BENCH:-$BUILD_DIR/bench/dense/dense_step_bench}
mkdir -p "$OUT" docs/img
{ echo "start: $(date -Is) $(uptime)"; echo "command: $0 BUILD_DIR=$BUILD_DIR"; } >"$OUT/machine.txt"

{
  "$BIN" --optimizers=ada_diag,ada_diag_da,ada_fd,ada_fd_da,fd_son --dims=500,2000,8000 \
    --taus=10,40
  "$BIN" --optimizers=ada_full,ada_full_da,ons --dims=500 | tail -n +2
  # ADA-FULL at d = 2000 takes ~10 s a round: 1 round per timed run.
  "$BIN" --optimizers=ada_full,ons --dims=2000,8000 --max_step_seconds=40 --min_steps=1 \
    | tail -n +2
} | tee "$OUT/step.tsv"

echo "end: $(date -Is) $(uptime); ${SECONDS} s wall" >>"$OUT/machine.txt"
"$PY" bench/dense/report.py "$OUT" | tee "$OUT/report.md"
