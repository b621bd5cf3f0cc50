#!/usr/bin/env bash
# Reproduces seed 002 section 4.1 (Wan, Wei & Zhang, ADA-FD): online
# regression with the absolute loss, T = 10,000, d = 500, tau = 10, eta and
# delta on the paper's grid {1e-4, ..., 100}; writes the tables and
# docs/img/seed002_*.png (docs/results_seed002.md discusses them).
#
#   bash bench/seed002/run.sh                     # builds build/release first
#   BUILD_DIR=build/hA bash bench/seed002/run.sh  # another Release build dir
#
# Environment: BUILD_DIR (default build/release), SEED002_REGRESSION (use
# this binary, build nothing), OUT (default bench/out/seed002), JOBS (2: the
# ADA-FULL pass and the other grids run side by side; 1: one after the
# other), BUILD_JOBS (default 1), RADAGRAD_RUNS (default 5, the paper's
# number of runs averaged per RADAGRAD setting).
#
# Cost: the ADA-FULL pass eigendecomposes a 500 x 500 matrix 10,000 times
# (about 12 CPU minutes); RADAGRAD's 245 runs (49 settings x 5 seeds) a few
# more; everything else about 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build/release}
OUT=${OUT:-bench/out/seed002}
JOBS=${JOBS:-2}
PY=/usr/bin/python3  # Debian's python3, which sees python3-matplotlib
SECONDS=0

if [[ -z ${SEED002_REGRESSION:-} ]]; then
  [[ -f $BUILD_DIR/build.ninja ]] || cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
  cmake --build "$BUILD_DIR" -j "${BUILD_JOBS:-1}" --target seed002_regression
fi
BIN=${SEED002_REGRESSION:-$BUILD_DIR/bench/seed002/seed002_regression}
mkdir -p "$OUT" docs/img
rm -f "$OUT"/*.csv "$OUT"/*.log
{ echo "start: $(date -Is) $(uptime)"; echo "command: $0 BUILD_DIR=$BUILD_DIR JOBS=$JOBS"; } \
  >"$OUT/machine.txt"

# ADA-FULL, both forms, all 49 grid points in one pass (see the comment at
# the top of seed002_regression.cc for why one eigendecomposition per round
# serves every grid point).
full_pass() { "$BIN" --mode=lockstep --out="$OUT/full" >"$OUT/full.log" 2>"$OUT/full.progress"; }
# ADA-FD, ADA-DIAG (both forms) and FD-SON over the grid, each run by the
# real optimizer.
other_grids() {
  "$BIN" --mode=grid --algos=ada_fd_da,ada_diag_da,ada_fd,ada_diag,fd_son \
    --out="$OUT/grid" >"$OUT/grid.log"
}
# RADAGRAD (CMD) over the grid, each setting averaged over RADAGRAD_RUNS
# projection seeds; its own output files, so grid.* stay as they were.
radagrad_grid() {
  "$BIN" --mode=grid --algos=radagrad --radagrad_runs="${RADAGRAD_RUNS:-5}" \
    --out="$OUT/radagrad" >"$OUT/radagrad.log"
}
if ((JOBS >= 2)); then
  full_pass &
  full_pid=$!
  other_grids
  radagrad_grid
  wait "$full_pid"
else
  other_grids
  radagrad_grid
  full_pass
fi

# Cross-check of the shared pass: the real ada_full / ada_full_da optimizer
# at each form's best grid point for the first 300 rounds (also its time per
# round); report.py compares the cumulative losses.
best() {  # algo -> "eta delta" with the least final loss
  awk -F, -v a="$1" '$1 == a && $7 == 0 && (best == "" || $4 + 0 < best) { best = $4 + 0; e = $2; d = $3 }
    END { print e, d }' "$OUT/full.grid.csv"
}
for algo in ada_full ada_full_da; do
  read -r eta delta < <(best "$algo")
  "$BIN" --mode=full_class --full_algo="$algo" --eta="$eta" --delta="$delta" --rounds=300 \
    --out="$OUT/check_$algo" >"$OUT/check_$algo.log"
done

echo "end: $(date -Is) $(uptime); ${SECONDS} s wall" >>"$OUT/machine.txt"
"$PY" bench/seed002/report.py "$OUT" | tee "$OUT/report.md"
echo "seed002: done in ${SECONDS} s; raw results in $OUT"
