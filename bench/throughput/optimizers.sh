#!/usr/bin/env bash
# Throughput of optimizers against each other (by default metagrad_diag
# against ftrl), end to end through `clickctl replay --offline` on the
# synthetic 2M click log, the optimizers alternated in one session:
#
#   bash scripts/build.sh release && bash bench/throughput/optimizers.sh
#   BUILD_DIR=build/hE OPTIMIZERS="ftrl metagrad_diag adagrad" bash bench/throughput/optimizers.sh
#
# Generates bench/out/click_2m.vw (the log of run.sh) if it is missing, then
# runs REPEATS (default 3) rounds, each running every optimizer once, pinned
# to CPU 1 under GNU time, with the load average and CPU pressure recorded
# before every run and `uptime` before and after the whole session. Prints
# summarize_e2e.py's table (examples/s, table bytes per coordinate, ...) and
# each optimizer's examples/s and CPU time per example relative to the first
# one, computed round by round. Runs go to bench/out/optimizers.jsonl, the
# output to bench/out/optimizers.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${BUILD_DIR:-build/release}
repeats=${REPEATS:-3}
read -r -a optimizers <<< "${OPTIMIZERS:-ftrl metagrad_diag}"
clickctl=$build/client/clickctl
gen=$build/bench/throughput/gen_click_log
for binary in "$clickctl" "$gen" /usr/bin/time; do
  if [[ ! -x $binary ]]; then
    echo "optimizers.sh: $binary is missing (bash scripts/build.sh release, or set BUILD_DIR)" >&2
    exit 1
  fi
done
out=bench/out
mkdir -p "$out"
log=$out/click_2m.vw
jsonl=$out/optimizers.jsonl

exec > >(tee "$out/optimizers.txt") 2>&1

echo "# optimizer throughput, $(date -u '+%Y-%m-%d %H:%M UTC'): ${optimizers[*]}"
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p')"
echo "build: $build, $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")," \
  "$($(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt") --version | head -1)"
echo "uptime before: $(uptime)"
if [[ ! -f $log ]]; then
  echo "generating $log"
  "$gen" --examples=2000000 --seed=1 "$log"
fi
echo "log: $log, $(stat -c %s "$log") bytes"

: > "$jsonl"
for run in $(seq "$repeats"); do
  for optimizer in "${optimizers[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    pressure=$(sed -n 's/^some avg10=\([0-9.]*\).*/\1/p' /proc/pressure/cpu 2>/dev/null || true)
    /usr/bin/time -f '%M %U %S %e' -o "$out/optimizers_time.txt" taskset -c 1 "$clickctl" replay \
      --offline --format=vw --optimizer="$optimizer" --progress_every=0 --json "$log" \
      > "$out/optimizers_replay.txt"
    read -r rss user sys elapsed < "$out/optimizers_time.txt"
    replay=$(tail -1 "$out/optimizers_replay.txt")
    echo "{\"dataset\":\"synthetic 2M (vw)\",\"optimizer\":\"$optimizer\",\"run\":$run," \
      "\"load1\":$load,\"cpu_pressure_avg10\":${pressure:-null},\"rss_kb\":$rss," \
      "\"user\":$user,\"sys\":$sys,\"elapsed\":$elapsed,\"replay\":$replay}" >> "$jsonl"
    echo "run $run $optimizer: load $load, pressure ${pressure:-?}%," \
      "$(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])["examples_per_second"]))' \
        "$replay") examples/s, ${user}+${sys} s CPU"
  done
done
echo "uptime after: $(uptime)"

python3 bench/throughput/summarize_e2e.py "$jsonl"
python3 - "$jsonl" "${optimizers[0]}" <<'EOF'
"""Each optimizer against the first, round by round: median (min-max)."""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(dict)  # run -> optimizer -> record
order = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs[r["run"]][r["optimizer"]] = r
    if r["optimizer"] not in order:
        order.append(r["optimizer"])
base = sys.argv[2]


def med_range(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})"


print(f"\nagainst {base}, per round; CPU = user+sys of the whole process / examples")
print("| optimizer | examples/s | CPU us/example | bytes/coord | examples/s ratio "
      "| CPU time ratio |")
print("|---|---|---|---|---|---|")
for opt in order:
    rs = [runs[k][opt] for k in sorted(runs) if opt in runs[k] and base in runs[k]]
    bs = [runs[k][base] for k in sorted(runs) if opt in runs[k] and base in runs[k]]
    eps = [r["replay"]["examples_per_second"] for r in rs]
    cpu = [(r["user"] + r["sys"]) / r["replay"]["examples"] * 1e6 for r in rs]
    speed = [a["replay"]["examples_per_second"] / b["replay"]["examples_per_second"]
             for a, b in zip(rs, bs)]
    cost = [(a["user"] + a["sys"]) / (b["user"] + b["sys"]) for a, b in zip(rs, bs)]
    print(f"| {opt} | {med_range(eps, lambda v: f'{v / 1e3:.0f}k')} "
          f"| {med_range(cpu, lambda v: f'{v:.2f}')} "
          f"| {rs[0]['replay']['bytes_per_coordinate']:.1f} "
          f"| {med_range(speed, lambda v: f'{v:.3f}')} | {med_range(cost, lambda v: f'{v:.2f}')} |")
EOF
