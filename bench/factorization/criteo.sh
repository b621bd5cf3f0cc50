#!/usr/bin/env bash
# Criteo 8k (../shared/data/criteo_8k) through `clickctl replay --offline`
# with each model of docs/factorization.md's Criteo table: progressive and
# test logloss and AUC with 95% bootstrap intervals. FM and FFM factor the
# first 16 categorical columns (16 is kMaxFactorFields). Outputs under
# bench/out/factorization/criteo/.
#
#   bash bench/factorization/criteo.sh           # uses build/release
# Knobs: BUILD_DIR, DATA (the criteo_8k directory), BOOTSTRAP (1000).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
clickctl=$build/client/clickctl
data=${DATA:-../shared/data/criteo_8k}
bootstrap=${BOOTSTRAP:-1000}
out=bench/out/factorization/criteo
[[ -x $clickctl ]] || { echo "criteo.sh: $clickctl not found" >&2; exit 2; }
[[ -f $data/train.csv && -f $data/test.csv ]] || { echo "criteo.sh: no $data/{train,test}.csv" >&2; exit 2; }
mkdir -p "$out"
fields=C1,C2,C3,C4,C5,C6,C7,C8,C9,C10,C11,C12,C13,C14,C15,C16
# name, then clickctl flags. Every setting tried is a row here.
runs=(
  "linear|--optimizer=ftrl"
  "fm|--optimizer=ftrl --factorization=fm --factor_fields=$fields"
  "ffm|--optimizer=ftrl --factorization=ffm --factor_fields=$fields"
  "fm_unnormalized|--optimizer=ftrl --factorization=fm --factor_fields=$fields --factor_normalize=false"
  "ffm_unnormalized|--optimizer=ftrl --factorization=ffm --factor_fields=$fields --factor_normalize=false"
  "ffm_eta0.5|--optimizer=ftrl --factorization=ffm --factor_fields=$fields --factor_eta=0.5"
  "fm_eta0.2|--optimizer=ftrl --factorization=fm --factor_fields=$fields --factor_eta=0.2"
  "ffm_eta0.2|--optimizer=ftrl --factorization=ffm --factor_fields=$fields --factor_eta=0.2"
)
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) clickctl sha256 $(sha256sum "$clickctl" | cut -c1-16)" \
  >"$out/machine.txt"
for run in "${runs[@]}"; do
  name=${run%%|*}
  flags=${run#*|}
  # shellcheck disable=SC2086
  "$clickctl" replay --offline --format=criteo --bootstrap="$bootstrap" --progress_every=0 \
    --json $flags --test_file="$data/test.csv" "$data/train.csv" >"$out/$name.txt"
  tail -1 "$out/$name.txt" >"$out/$name.json"
done
python3 - "$out" "${runs[@]}" <<'PY'
import json, sys
out = sys.argv[1]
def cell(m, key):
    ci = m["ci95"][key]
    return f"{m[key]:.5f} [{ci['lo']:.5f}, {ci['hi']:.5f}]"
print("| model | progressive logloss [95% CI] | AUC | test logloss [95% CI] | test AUC |")
print("|---|---|---|---|---|")
for run in sys.argv[2:]:
    name = run.split("|", 1)[0]
    j = json.load(open(f"{out}/{name}.json"))
    p, t = j.get("progressive", j), j["test"]
    print(f"| {name} | {cell(p, 'logloss')} | {p['auc']:.4f} | {cell(t, 'logloss')} | {t['auc']:.4f} |")
PY
