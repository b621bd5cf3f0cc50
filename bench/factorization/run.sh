#!/usr/bin/env bash
# The latent-interaction benchmark of docs/factorization.md (issue 37):
# generates a log whose truth is known (gen_latent.py), replays it through
# `clickctl replay --offline` with each model, and prints each model's
# progressive logloss (95% bootstrap interval) and its excess over the
# Bayes predictor's logloss on the same examples. Outputs under
# bench/out/factorization/.
#
#   bash bench/factorization/run.sh            # uses build/release
# Knobs: BUILD_DIR, EXAMPLES (default 500000), SEED (1), BOOTSTRAP (1000).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
clickctl=$build/client/clickctl
out=bench/out/factorization
examples=${EXAMPLES:-500000}
seed=${SEED:-1}
bootstrap=${BOOTSTRAP:-1000}
[[ -x $clickctl ]] || { echo "run.sh: $clickctl not found" >&2; exit 2; }
mkdir -p "$out"
log=$out/latent_${examples}_seed${seed}.vw
truth=$out/latent_${examples}_seed${seed}.truth
python3 bench/factorization/gen_latent.py --examples "$examples" --seed "$seed" \
  --out "$log" --truth "$truth" | tee "$out/bayes.txt"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) clickctl sha256 $(sha256sum "$clickctl" | cut -c1-16)" \
  >"$out/machine.txt"

# name, then clickctl flags. Every setting tried is a row here.
runs=(
  "linear|--optimizer=ftrl"
  "linear+true_crosses|--optimizer=ftrl --interactions=user:ad,site:ad,device:ad"
  "linear+true_crosses_alpha0.05|--optimizer=ftrl --alpha=0.05 --interactions=user:ad,site:ad,device:ad"
  "linear+true_crosses_alpha0.3|--optimizer=ftrl --alpha=0.3 --interactions=user:ad,site:ad,device:ad"
  "fm|--optimizer=ftrl --factorization=fm --factor_fields=user,site,device,ad"
  "ffm|--optimizer=ftrl --factorization=ffm --factor_fields=user,site,device,ad"
  "fm_eta0.2|--optimizer=ftrl --factorization=fm --factor_fields=user,site,device,ad --factor_eta=0.2"
  "ffm_eta0.2|--optimizer=ftrl --factorization=ffm --factor_fields=user,site,device,ad --factor_eta=0.2"
  "fm_unnormalized|--optimizer=ftrl --factorization=fm --factor_fields=user,site,device,ad --factor_normalize=false"
  "ffm_unnormalized|--optimizer=ftrl --factorization=ffm --factor_fields=user,site,device,ad --factor_normalize=false"
  "ffm_eta0.05|--optimizer=ftrl --factorization=ffm --factor_fields=user,site,device,ad --factor_eta=0.05"
  "ffm_eta0.5|--optimizer=ftrl --factorization=ffm --factor_fields=user,site,device,ad --factor_eta=0.5"
  "ffm_dim8|--optimizer=ftrl --factorization=ffm --factor_fields=user,site,device,ad --factor_dim=8"
  "ffm_alpha0.3|--optimizer=ftrl --alpha=0.3 --factorization=ffm --factor_fields=user,site,device,ad"
)
for run in "${runs[@]}"; do
  name=${run%%|*}
  flags=${run#*|}
  # shellcheck disable=SC2086
  "$clickctl" replay --offline --format=vw --bootstrap="$bootstrap" \
    --progress_every=0 --json $flags "$log" >"$out/$name.txt"
  tail -1 "$out/$name.txt" >"$out/$name.json"
done
python3 bench/factorization/latent_table.py "$out" "${runs[@]}"
