#!/usr/bin/env bash
# Regenerates the iPinYou and Criteo optimizer comparison of docs/results_ctr.md:
# runs the whole hyperparameter grid through `clickctl replay --offline`, keeps
# every run's output under bench/out/ctr/, draws docs/img/ctr_*.png and prints
# the tables.
#
#   bash bench/ctr/run.sh                         # uses build/release
#   BUILD_DIR=build/h4 bash bench/ctr/run.sh      # any other build of clickctl
#
# Other knobs: DATA_DIR (default ../shared/data), JOBS (default nproc),
# BOOTSTRAP (resamples for the 95% intervals, default 1000).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
data=${DATA_DIR:-../shared/data}
jobs=${JOBS:-$(nproc)}
clickctl=$build/client/clickctl
out=bench/out/ctr
python=/usr/bin/python3  # Debian's, which sees python3-matplotlib and python3-numpy

if [[ ! -x $clickctl ]]; then
  echo "run.sh: $clickctl not found; build it with 'bash scripts/build.sh release'" \
    "or point BUILD_DIR at another build" >&2
  exit 2
fi
for f in ipinyou/train.fm.txt ipinyou/test.fm.txt criteo_8k/train.csv criteo_8k/dev.csv \
  criteo_8k/test.csv; do
  [[ -r $data/$f ]] || { echo "run.sh: missing $data/$f (set DATA_DIR)" >&2; exit 2; }
done

start=$(date +%s)
rm -rf "$out/raw"
mkdir -p "$out"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "os: Debian $(cat /etc/debian_version 2>/dev/null || echo unknown), $(uname -srm)"
  echo "cpu: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "clickctl: $clickctl sha256 $(sha256sum "$clickctl" | cut -c1-16)"
  echo "jobs: $jobs, bootstrap: ${BOOTSTRAP:-1000}"
} >"$out/machine.txt"
cat "$out/machine.txt"

"$python" bench/ctr/sweep.py --clickctl "$clickctl" --data "$data" --out "$out" \
  --jobs "$jobs" --bootstrap "${BOOTSTRAP:-1000}"
"$python" bench/ctr/report.py --data "$data" --out "$out" --img docs/img

elapsed=$(($(date +%s) - start))
echo "wall time: ${elapsed} s" | tee -a "$out/machine.txt"
echo "outputs: $out/grid_ipinyou.csv $out/grid_criteo.csv $out/tables.md docs/img/ctr_*.png"
