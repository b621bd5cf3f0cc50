#!/usr/bin/env bash
# Before/after comparison of two builds in one run, for a core change:
#
#   git worktree add /tmp/clickd_before <commit before the change>
#   # if it lacks the bench (before 2a1adf2): take 2a1adf2's, whose fused_vw.cc
#   # still sorts (later ones call MergeDuplicates, which older cores lack)
#   git archive 2a1adf2 bench/throughput | tar -x -C /tmp/clickd_before
#   cmake -S /tmp/clickd_before -B /tmp/clickd_before/build -G Ninja -DCMAKE_BUILD_TYPE=Release
#   cmake --build /tmp/clickd_before/build --target clickctl train_bench
#   bash bench/throughput/ab.sh /tmp/clickd_before/build build/release
#
# Runs clickctl replay (ftrl and adagrad) on the synthetic 2M log and on
# iPinYou (IPINYOU_LOOP replays per measurement, it is short), ROUNDS rounds,
# the two builds interleaved (before, after, then after, before: ABBA, so a
# steady drift in load hits both equally), pinned to CPU 1, under GNU time.
# The load average and CPU pressure are recorded before every run. Then
# train_bench's stages for each build, alternated (before, after, ...), TRAIN_BENCH_REPEATS
# repetitions. Every run goes to bench/out/ab.jsonl; ab_summary.py prints the
# ratios. Environment: ROUNDS (5), IPINYOU_LOOP (10), TRAIN_BENCH_ROUNDS (1),
# TRAIN_BENCH_REPEATS (3), SKIP_E2E, SKIP_TRAIN_BENCH.
set -euo pipefail
cd "$(dirname "$0")/../.."

before=${1:?usage: ab.sh BEFORE_BUILD AFTER_BUILD}
after=${2:?usage: ab.sh BEFORE_BUILD AFTER_BUILD}
rounds=${ROUNDS:-5}
loop=${IPINYOU_LOOP:-10}
tb_rounds=${TRAIN_BENCH_ROUNDS:-1}
tb_repeats=${TRAIN_BENCH_REPEATS:-3}
out=bench/out
mkdir -p "$out"
log=$out/click_2m.vw
ipinyou=../shared/data/ipinyou/train.fm.txt
jsonl=$out/ab.jsonl
[[ -f $log ]] || "$after/bench/throughput/gen_click_log" --examples=2000000 --seed=1 "$log"
[[ -x /usr/bin/time ]] || { echo "ab.sh: needs GNU time (/usr/bin/time)" >&2; exit 1; }

load_json() {
  local pressure
  pressure=$(sed -n 's/^some avg10=\([0-9.]*\).*/\1/p' /proc/pressure/cpu 2>/dev/null || true)
  echo "\"load1\":$(cut -d' ' -f1 /proc/loadavg),\"cpu_some_avg10\":${pressure:-null}"
}

# one VERSION BUILD DATASET FORMAT FILE OPTIMIZER N ROUND: N replays in one
# timed shell; the last JSON line of each replay is kept.
one() {
  local version=$1 build=$2 dataset=$3 format=$4 file=$5 optimizer=$6 n=$7 round=$8 load
  load=$(load_json)
  /usr/bin/time -f '%M %U %S %e' -o "$out/ab_time.txt" taskset -c 1 bash -c '
    for i in $(seq "$1"); do
      "$2" replay --offline --format="$3" --optimizer="$4" --progress_every=0 --json "$5" | tail -1
    done' _ "$n" "$build/client/clickctl" "$format" "$optimizer" "$file" > "$out/ab_replay.txt"
  local rss user sys elapsed
  read -r rss user sys elapsed < "$out/ab_time.txt"
  echo "{\"version\":\"$version\",\"dataset\":\"$dataset\",\"optimizer\":\"$optimizer\"," \
    "\"round\":$round,\"replays\":$n,$load,\"rss_kb\":$rss,\"user\":$user,\"sys\":$sys," \
    "\"elapsed\":$elapsed,\"replay\":[$(paste -sd, "$out/ab_replay.txt")]}" >> "$jsonl"
  echo "$version $dataset $optimizer round $round: user ${user}s wall ${elapsed}s ($load)"
}

echo "# before: $before, after: $after, $(date -u '+%Y-%m-%d %H:%M UTC')"
if [[ -z ${SKIP_E2E:-} ]]; then
  : > "$jsonl"
  for round in $(seq "$rounds"); do
    if (( round % 2 )); then order=(before after); else order=(after before); fi
    for spec in "synthetic vw $log ftrl 1" "synthetic vw $log adagrad 1" \
                "ipinyou libsvm $ipinyou ftrl $loop" "ipinyou libsvm $ipinyou adagrad $loop"; do
      read -r dataset format file optimizer n <<< "$spec"
      for version in "${order[@]}"; do
        if [[ $version == before ]]; then build=$before; else build=$after; fi
        one "$version" "$build" "$dataset" "$format" "$file" "$optimizer" "$n" "$round"
      done
    done
  done
  python3 bench/throughput/ab_summary.py "$jsonl"
fi

if [[ -z ${SKIP_TRAIN_BENCH:-} ]]; then
  for round in $(seq "$tb_rounds"); do
    for version in before after; do
      if [[ $version == before ]]; then build=$before; else build=$after; fi
      echo; echo "## train_bench, $version ($build), synthetic, round $round"
      echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(head -1 /proc/pressure/cpu)"
      taskset -c 1 "$build/bench/throughput/train_bench" --format=vw --repeats="$tb_repeats" "$log"
      echo; echo "## train_bench, $version ($build), iPinYou 20 passes, round $round"
      echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(head -1 /proc/pressure/cpu)"
      taskset -c 1 "$build/bench/throughput/train_bench" --format=libsvm --passes=20 \
        --repeats=5 "$ipinyou"
    done
  done
fi
