#!/usr/bin/env bash
# iPinYou (../shared/data/ipinyou, advertiser 2997) through `clickctl replay
# --offline` with each model of docs/factorization.md's iPinYou table:
# progressive and test logloss and AUC with 95% bootstrap intervals.
# ipinyou_to_vw.py gives each featindex field a namespace (f<field>); FM
# and FFM factor the 11 fields that occur in more than 0.1% of the
# training rows besides f1 (a constant). Outputs under
# bench/out/factorization/ipinyou/.
#
#   bash bench/factorization/ipinyou.sh           # uses build/release
# Knobs: BUILD_DIR, DATA (the ipinyou directory), BOOTSTRAP (1000).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
clickctl=$build/client/clickctl
data=${DATA:-../shared/data/ipinyou}
bootstrap=${BOOTSTRAP:-1000}
out=bench/out/factorization/ipinyou
[[ -x $clickctl ]] || { echo "ipinyou.sh: $clickctl not found" >&2; exit 2; }
python3 bench/factorization/ipinyou_to_vw.py "$data" "$out" >/dev/null
fields=f2,f6,f7,f8,f9,f10,f11,f12,f15,f18,f26
# name, then clickctl flags. Every setting tried is a row here.
runs=(
  "linear|--optimizer=ftrl"
  "fm|--optimizer=ftrl --factorization=fm --factor_fields=$fields"
  "ffm|--optimizer=ftrl --factorization=ffm --factor_fields=$fields"
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
  "$clickctl" replay --offline --format=vw --bootstrap="$bootstrap" --progress_every=0 \
    --json $flags --test_file="$out/test.vw" "$out/train.vw" >"$out/$name.txt"
  tail -1 "$out/$name.txt" >"$out/$name.json"
done
python3 - "$out" "${runs[@]}" <<'PY'
import json, sys
out = sys.argv[1]
def cell(m, key):
    ci = m["ci95"][key]
    return f"{m[key]:.5f} [{ci['lo']:.5f}, {ci['hi']:.5f}]"
print("| model | progressive logloss [95% CI] | AUC [95% CI] | test logloss [95% CI] | test AUC [95% CI] |")
print("|---|---|---|---|---|")
for run in sys.argv[2:]:
    name = run.split("|", 1)[0]
    j = json.load(open(f"{out}/{name}.json"))
    p, t = j.get("progressive", j), j["test"]
    print(f"| {name} | {cell(p, 'logloss')} | {cell(p, 'auc')} | {cell(t, 'logloss')} | {cell(t, 'auc')} |")
PY
