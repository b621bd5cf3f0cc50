#!/usr/bin/env bash
# Seed 001 Theorem 1 (Streeter & McMahan 2010, section 2.3): regret of a
# global learning rate (~T^(2/3)) against per-coordinate rates (~sqrt(T)) on
# the proof's interleaved construction, for T0 = k^3, C = T1 = k.
#
#   bash bench/seed001/theorem1.sh                       # builds build/release first
#   BUILD_DIR=build/hB bash bench/seed001/theorem1.sh    # another (Release) build dir
#
# Environment: BUILD_DIR (default build/release), THEOREM1 (use this binary,
# build nothing), OUT (default bench/out/seed001). Writes $OUT/theorem1.csv,
# prints the table and the fitted exponents, draws docs/img/seed001_theorem1.png.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build/release}
OUT=${OUT:-bench/out/seed001}
PY=/usr/bin/python3  # Debian's python3, which sees python3-matplotlib
SECONDS=0

if [[ -z ${THEOREM1:-} ]]; then
  if [[ $BUILD_DIR == build/release ]]; then
    bash scripts/build.sh release
  else
    [[ -f $BUILD_DIR/build.ninja ]] || cmake -S . -B "$BUILD_DIR" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
    cmake --build "$BUILD_DIR" --target theorem1
  fi
fi
THEOREM1=${THEOREM1:-$BUILD_DIR/bench/seed001/theorem1}
mkdir -p "$OUT" docs/img

# k = 10 .. 215: T = k^3 + k^2 from 1,100 to 9,984,600, about 2 per decade.
# The global_fixed grid: eta = 10^(-4 + j/8), j = 0..32.
"$THEOREM1" --k=10,15,22,32,46,68,100,147,215 --epsilon=1e-3 --eta_min=1e-4 --eta_max=1 \
  --etas_per_decade=8 --out="$OUT/theorem1.csv" >/dev/null
"$PY" bench/seed001/theorem1_report.py "$OUT/theorem1.csv" docs/img/seed001_theorem1.png
echo "theorem1: done in ${SECONDS}s"
