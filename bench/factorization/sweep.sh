#!/usr/bin/env bash
# How FM and FFM compare with the true crosses as the latent log changes
# (docs/factorization.md, "How the comparison depends on the log"; issue
# 37). For each regime of a fixed list (examples, ads, users, popularity,
# sites, devices; gen_latent.py otherwise at its defaults, seed 1) it
# generates the log and replays it through `clickctl replay --offline` with
# linear, linear + the true crosses at four FTRL rates, and FM and FFM at
# the factor rates 0.2 (libffm's), 0.5 and 1 (clickd's default), the
# factorization's defaults otherwise; it prints each regime's table and a
# summary line (the best crosses row's excess over the Bayes logloss and
# FM's and FFM's ratios to it at each rate). Every regime and
# row of the lists is run and published: none is picked after the fact,
# and no setting is tuned per regime.
#
#   bash bench/factorization/sweep.sh        # build/release; about 70 min
# Knobs: BUILD_DIR, BOOTSTRAP (1000; a regime gets at most 10^9 / examples
# resamples, so 100 for 10M examples: the bootstrap costs resamples x
# examples), JOBS (2 replays at a time), REGIMES and ROWS (regular
# expressions: only the regimes and rows whose name matches), TABLES_ONLY
# (1: print the tables from the outputs of an earlier run, run nothing).
# Outputs under bench/out/factorization/sweep/<regime>/.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
clickctl=$build/client/clickctl
bootstrap=${BOOTSTRAP:-1000}
jobs=${JOBS:-2}
[[ -x $clickctl ]] || { echo "sweep.sh: $clickctl not found" >&2; exit 2; }
root=bench/out/factorization/sweep
mkdir -p "$root"
[[ -n ${TABLES_ONLY:-} ]] ||
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) clickctl sha256 $(sha256sum "$clickctl" | cut -c1-16)" \
    "load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$root/machine.txt"

# examples, ads, users, popularity (gen_latent.py's power-law exponent of
# users, sites and ads; 0 is uniform), sites, devices. The three uniform
# regimes were added after the first five had run, and the last three
# (users and ads seen thousands of times, a user-ad pair a few times)
# after those eight: docs/factorization.md says so.
regimes=(
  "500000 2000 20000 1 300 8"
  "500000 20000 20000 1 300 8"
  "2000000 2000 20000 1 300 8"
  "2000000 20000 20000 1 300 8"
  "2000000 2000 200000 1 300 8"
  "500000 2000 20000 0 300 8"
  "2000000 2000 20000 0 300 8"
  "2000000 20000 20000 0 300 8"
  "2000000 2000 2000 0 300 8"
  "10000000 2000 2000 0 300 8"
  "10000000 2000 2000 0 1 1"
)
fields=--factor_fields=user,site,device,ad
crosses=--interactions=user:ad,site:ad,device:ad
runs=(
  "linear|--optimizer=ftrl"
  "crosses_alpha0.05|--optimizer=ftrl --alpha=0.05 $crosses"
  "crosses_alpha0.1|--optimizer=ftrl $crosses"
  "crosses_alpha0.3|--optimizer=ftrl --alpha=0.3 $crosses"
  "crosses_alpha1|--optimizer=ftrl --alpha=1 $crosses"
  "fm_eta0.2|--optimizer=ftrl --factorization=fm $fields --factor_eta=0.2"
  "ffm_eta0.2|--optimizer=ftrl --factorization=ffm $fields --factor_eta=0.2"
  "fm_eta0.5|--optimizer=ftrl --factorization=fm $fields --factor_eta=0.5"
  "ffm_eta0.5|--optimizer=ftrl --factorization=ffm $fields --factor_eta=0.5"
  "fm_eta1|--optimizer=ftrl --factorization=fm $fields --factor_eta=1"
  "ffm_eta1|--optimizer=ftrl --factorization=ffm $fields --factor_eta=1"
)
summary=()
for regime in "${regimes[@]}"; do
  read -r examples ads users popularity sites devices <<<"$regime"
  name="examples${examples}_ads${ads}_users${users}"
  [[ $popularity == 1 ]] || name+="_popularity${popularity}"
  [[ $sites == 300 && $devices == 8 ]] || name+="_sites${sites}_devices${devices}"
  if [[ -n ${REGIMES:-} && ! $name =~ $REGIMES ]]; then continue; fi
  out=$root/$name
  if [[ -z ${TABLES_ONLY:-} ]]; then
    mkdir -p "$out"
    python3 bench/factorization/gen_latent.py --examples "$examples" --ads "$ads" \
      --users "$users" --popularity "$popularity" --sites "$sites" --devices "$devices" --seed 1 --out "$out/log.vw" --truth "$out/log.truth" >"$out/bayes.txt"
    resamples=$((bootstrap < 1000000000 / examples ? bootstrap : 1000000000 / examples))
    echo "$resamples" >"$out/resamples.txt"
    pids=()
    for run in "${runs[@]}"; do
      run_name=${run%%|*}
      flags=${run#*|}
      if [[ -n ${ROWS:-} && ! $run_name =~ $ROWS ]]; then continue; fi
      # shellcheck disable=SC2086
      ("$clickctl" replay --offline --format=vw --bootstrap="$resamples" --progress_every=0 \
        --json $flags "$out/log.vw" | tail -1 >"$out/$run_name.json") &
      pids+=($!)
      if ((${#pids[@]} >= jobs)); then
        wait "${pids[0]}"
        pids=("${pids[@]:1}")
      fi
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    rm -f "$out/log.vw" "$out/log.truth"  # regenerated from the seed on demand
  fi
  echo "## $name"
  cat "$out/bayes.txt"
  echo "bootstrap resamples: $(cat "$out/resamples.txt")"
  python3 bench/factorization/latent_table.py "$out" "${runs[@]}"
  summary+=("$(python3 bench/factorization/latent_table.py --summary "$out" "${runs[@]}")")
done
echo
echo "| regime | Bayes logloss | best crosses excess (row) | FM / best crosses at eta 0.2, 0.5, 1 | FFM / best crosses at eta 0.2, 0.5, 1 |"
echo "|---|---|---|---|---|"
printf '%s\n' "${summary[@]}"
