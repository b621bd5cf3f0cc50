#!/usr/bin/env bash
# Offline training against Vowpal Wabbit, in one run (issue 16, item 4):
# `clickctl replay --offline` with and without --read_ahead (and with it in
# the compact encoding, --state_encoding=compact) and `vw` on the
# same synthetic click log (2M examples x 40 features + bias, VW text),
# FTRL-Proximal with logistic loss at the same alpha and beta, text parsing
# included, alternated REPEATS times so that each figure has the others
# measured just before it. Wall time, user + sys CPU and peak RSS come from
# /usr/bin/time; the load average is printed before each run.
#
#   bash scripts/build.sh release
#   VW_BIN=/path/to/vw bash bench/throughput/vs_vw.sh     # ~2 min
#   bash bench/throughput/vs_vw.sh                        # no VW_BIN: clickd rows only
#
# Vowpal Wabbit is not part of this repository and is not built by it (see
# bench/vw_compare/README.md for the version tested, 9.11.2). Its settings:
# --ftrl --ftrl_alpha 0.1 --ftrl_beta 1 (clickd's FTRL defaults),
# --loss_function logistic, -b 24 (16M slots: few collisions among the log's
# 496k features); its parser runs on a thread of its own, as clickd's does
# with --read_ahead. Output: stdout and bench/out/vs_vw.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
repeats=${REPEATS:-3}
clickctl=$build/client/clickctl
gen=$build/bench/throughput/gen_click_log
for binary in "$clickctl" "$gen"; do
  if [[ ! -x $binary ]]; then
    echo "vs_vw.sh: $binary is missing: build with -DCLICKD_BUILD_BENCH=ON or set BUILD_DIR" >&2
    exit 1
  fi
done
mkdir -p bench/out
log=bench/out/click_2m.vw
[[ -f $log ]] || "$gen" --examples=2000000 --seed=1 "$log" >/dev/null
exec > >(tee bench/out/vs_vw.txt) 2>&1

echo "# vs_vw, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $build"
if [[ -n ${VW_BIN:-} ]]; then "$VW_BIN" --version | sed 's/^/# vw /'; else echo "# VW_BIN not set: VW skipped"; fi
echo "| round | run | wall s | examples/s | user+sys s | peak RSS MiB | load before |"
echo "|---|---|---|---|---|---|---|"
timed() {  # NAME COMMAND...: one table row
  local name=$1 load t
  shift
  load=$(cut -d' ' -f1 /proc/loadavg)
  t=$(mktemp)
  /usr/bin/time -f "%e %U %S %M" -o "$t" "$@" >/dev/null 2>&1
  read -r wall user sys rss <"$t"
  rm -f "$t"
  awk -v r="$round" -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" -v l="$load" \
    'BEGIN { printf "| %d | %s | %.2f | %.0f | %.2f | %.0f | %s |\n", r, n, w, 2000000 / w, u + s, m / 1024, l }'
}
for round in $(seq 1 "$repeats"); do
  timed "clickd --read_ahead" "$clickctl" replay --offline --format=vw --optimizer=ftrl \
    --progress_every=0 --json --read_ahead=true "$log"
  timed "clickd --read_ahead compact" "$clickctl" replay --offline --format=vw --optimizer=ftrl \
    --progress_every=0 --json --read_ahead=true --state_encoding=compact "$log"
  timed "clickd one thread" "$clickctl" replay --offline --format=vw --optimizer=ftrl \
    --progress_every=0 --json --read_ahead=false "$log"
  if [[ -n ${VW_BIN:-} ]]; then
    timed "vw" "$VW_BIN" --quiet --ftrl --ftrl_alpha 0.1 --ftrl_beta 1 \
      --loss_function logistic -b 24 -d "$log"
  fi
done
