#!/usr/bin/env bash
# Training throughput and memory: the figures of docs/performance.md
# ("Current figures") and of the dated tables in
# docs/archive/performance_training.md, in one command (~8 minutes of
# CPU; more wall time when other work shares the cores):
#
#   bash scripts/build.sh release && bash bench/throughput/run.sh
#   BUILD_DIR=build/h5 bash bench/throughput/run.sh       # another build tree
#
# Generates bench/out/click_2m.vw (2M examples, ~460 MB) if it is missing,
# then: (a) clickctl replay end to end per optimizer, (b) train_bench's stage
# breakdown and memory tables, (d) the same on iPinYou, (e) 1 vs 2 learner
# threads, (f) instruction profiles (callgrind, if installed) of a replay of
# the first 50k synthetic lines and of iPinYou. Single-threaded runs are
# pinned to CPU 1.
# The whole output is also kept in bench/out/throughput.txt.
# Environment: REPEATS (default 3) runs/repetitions per synthetic-log figure,
# IPINYOU_RUNS (default 5), IPINYOU_PASSES (default 20, in-memory passes).
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${BUILD_DIR:-build/release}
repeats=${REPEATS:-3}
ipinyou_runs=${IPINYOU_RUNS:-5}
ipinyou_passes=${IPINYOU_PASSES:-20}
clickctl=$build/client/clickctl
gen=$build/bench/throughput/gen_click_log
bench=$build/bench/throughput/train_bench
for binary in "$clickctl" "$gen" "$bench"; do
  if [[ ! -x $binary ]]; then
    echo "run.sh: $binary is missing: run 'bash scripts/build.sh release' or set BUILD_DIR" >&2
    exit 1
  fi
done
out=bench/out
mkdir -p "$out"
log=$out/click_2m.vw
ipinyou=../shared/data/ipinyou/train.fm.txt
optimizers=(ftrl adagrad adagrad_da pc_ogd global_ogd sgd)

exec > >(tee "$out/throughput.txt") 2>&1

machine_load() {
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), cpu pressure:" \
    "$(head -1 /proc/pressure/cpu 2>/dev/null || echo unknown)"
}

echo "# clickd training throughput, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/Mem:/{print $2}') GiB," \
  "$(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release), kernel $(uname -r)"
echo "build: $build, $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")," \
  "$($(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt") --version | head -1)," \
  "flags $(sed -n 's/^CMAKE_CXX_FLAGS_RELEASE:STRING=//p' "$build/CMakeCache.txt")"
echo "core sources: sha256 $(find core -name '*.h' -o -name '*.cc' | grep -v _test | LC_ALL=C sort |
  xargs cat | sha256sum | cut -c1-16) (figures belong to this state of core/)"
machine_load

if [[ ! -f $log ]]; then
  echo; echo "## generating $log"
  "$gen" --examples=2000000 --seed=1 "$log"
fi

# Runs a command, keeping its peak RSS (KiB), user, system and wall seconds
# in $out/time.txt when GNU time is installed.
timed() {
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f '%M %U %S %e' -o "$out/time.txt" "$@"
  else
    "$@"
  fi
}

# e2e SLUG TITLE FORMAT FILE RUNS: clickctl replay per optimizer, RUNS rounds
# (each round runs every optimizer once, so that a noisy minute is shared);
# the runs are kept in $out/e2e.SLUG.jsonl.
e2e() {
  local dataset=$2 format=$3 file=$4 runs=$5 jsonl=$out/e2e.$1.jsonl
  : > "$jsonl"
  for run in $(seq "$runs"); do
    for optimizer in "${optimizers[@]}"; do
      timed taskset -c 1 "$clickctl" replay --offline --format="$format" \
        --optimizer="$optimizer" --progress_every=0 --json "$file" > "$out/replay.txt"
      local rss=null user=0 sys=0 elapsed=0
      if [[ -x /usr/bin/time ]]; then read -r rss user sys elapsed < "$out/time.txt"; fi
      echo "{\"dataset\":\"$dataset\",\"optimizer\":\"$optimizer\",\"run\":$run,\"rss_kb\":$rss," \
        "\"user\":$user,\"sys\":$sys,\"elapsed\":$elapsed,\"replay\":$(tail -1 "$out/replay.txt")}" \
        >> "$jsonl"
    done
  done
  python3 bench/throughput/summarize_e2e.py "$jsonl"
}

echo; echo "## (a) end to end: clickctl replay, text parsing included"
machine_load
e2e synthetic "synthetic 2M (vw)" vw "$log" "$repeats"
e2e ipinyou "iPinYou train (libsvm)" libsvm "$ipinyou" "$ipinyou_runs"
machine_load

echo; echo "## (b, c) stages and memory, synthetic 2M log (pinned to CPU 1)"
taskset -c 1 "$bench" --format=vw --repeats="$repeats" "$log"
echo; echo "## (d) stages and memory, iPinYou, $ipinyou_passes passes in memory (pinned to CPU 1)"
taskset -c 1 "$bench" --format=libsvm --passes="$ipinyou_passes" --repeats="$ipinyou_runs" \
  "$ipinyou"

echo; echo "## (e) one model, 1 vs 2 learner threads (CPUs 0,1)"
taskset -c 0,1 "$bench" --format=vw --repeats="$repeats" --stages=mt "$log"
taskset -c 0,1 "$bench" --format=libsvm --passes="$ipinyou_passes" --repeats="$ipinyou_runs" \
  --stages=mt "$ipinyou"
if command -v valgrind >/dev/null; then
  echo; echo "## (f) where the instructions go: callgrind, clickctl replay of the first 50k lines"
  head -n 50000 "$log" > "$out/click_50k.vw"
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" "$clickctl" replay \
    --offline --format=vw --progress_every=0 "$out/click_50k.vw" > /dev/null 2>&1
  python3 bench/throughput/profile_shares.py "$out/callgrind.out" 50000
  echo; echo "## (f) the same for iPinYou (LIBSVM, $(wc -l < "$ipinyou") lines)"
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.ipinyou.out" "$clickctl" replay \
    --offline --format=libsvm --progress_every=0 "$ipinyou" > /dev/null 2>&1
  python3 bench/throughput/profile_shares.py "$out/callgrind.ipinyou.out" "$(wc -l < "$ipinyou")"
fi
echo; machine_load
