#!/usr/bin/env bash
# Held-out excess on three latent logs (docs/factorization.md, "Why eta is
# 1"; issue 37): each log is generated (gen_latent.py, seed 1), its first
# 80% replayed once through `clickctl replay --offline` and the last 20%
# scored without learning (--test_file). Prints, per log and row, the test
# logloss's excess over the Bayes logloss of the test lines, so it shows
# what the model holds after one pass, not what it lost while learning.
#
#   bash bench/factorization/heldout.sh      # build/release; about 10 min
# Knobs: BUILD_DIR. Outputs under bench/out/factorization/heldout/.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
clickctl=$build/client/clickctl
[[ -x $clickctl ]] || { echo "heldout.sh: $clickctl not found" >&2; exit 2; }
root=bench/out/factorization/heldout
mkdir -p "$root"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) clickctl sha256 $(sha256sum "$clickctl" | cut -c1-16)" \
  "load: $(cut -d' ' -f1-3 /proc/loadavg)"

# name, then gen_latent.py's flags.
logs=(
  "examples500000|--examples 500000"
  "examples2000000_ads2000_users2000_popularity0|--examples 2000000 --ads 2000 --users 2000 --popularity 0"
  "examples10000000_ads2000_users2000_popularity0_sites1_devices1|--examples 10000000 --ads 2000 --users 2000 --popularity 0 --sites 1 --devices 1"
)
fields=--factor_fields=user,site,device,ad
runs=(
  "linear|--optimizer=ftrl"
  "crosses_alpha0.3|--optimizer=ftrl --alpha=0.3 --interactions=user:ad,site:ad,device:ad"
  "ffm_eta0.2|--optimizer=ftrl --factorization=ffm $fields --factor_eta=0.2"
  "ffm_eta0.5|--optimizer=ftrl --factorization=ffm $fields --factor_eta=0.5"
  "ffm_eta1|--optimizer=ftrl --factorization=ffm $fields --factor_eta=1"
  "ffm_eta2|--optimizer=ftrl --factorization=ffm $fields --factor_eta=2"
)
for entry in "${logs[@]}"; do
  name=${entry%%|*}
  # shellcheck disable=SC2086
  gen_flags=(${entry#*|})
  out=$root/$name
  mkdir -p "$out"
  python3 bench/factorization/gen_latent.py "${gen_flags[@]}" --seed 1 --out "$out/log.vw" \
    --truth "$out/log.truth" >/dev/null
  lines=$(wc -l <"$out/log.vw")
  train=$((lines * 4 / 5))
  head -n "$train" "$out/log.vw" >"$out/train.vw"
  tail -n +"$((train + 1))" "$out/log.vw" >"$out/test.vw"
  bayes=$(tail -n +"$((train + 1))" "$out/log.truth" | paste - "$out/test.vw" | python3 -c '
import math, sys
total = n = 0
for line in sys.stdin:
    p, label = line.split("\t", 1)
    p = float(p)
    total -= math.log(p) if label.startswith("1 ") else math.log(1 - p)
    n += 1
print(f"{total / n:.6f}")')
  echo "## $name: train $train lines, test $((lines - train)), Bayes test logloss $bayes"
  echo "| model | flags | test logloss | excess over Bayes |"
  echo "|---|---|---|---|"
  for run in "${runs[@]}"; do
    run_name=${run%%|*}
    flags=${run#*|}
    # shellcheck disable=SC2086
    "$clickctl" replay --offline --format=vw --progress_every=0 --json $flags \
      --test_file="$out/test.vw" "$out/train.vw" | tail -1 >"$out/$run_name.json"
    python3 -c '
import json, sys
loss = json.load(open(sys.argv[1]))["test"]["logloss"]
print(f"| {sys.argv[2]} | `{sys.argv[3]}` | {loss:.5f} | {loss - float(sys.argv[4]):.5f} |")' \
      "$out/$run_name.json" "$run_name" "$flags" "$bayes"
  done
  rm -f "$out/log.vw" "$out/log.truth" "$out/train.vw" "$out/test.vw"
done
