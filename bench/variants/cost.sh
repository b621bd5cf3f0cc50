#!/usr/bin/env bash
# What each extra variant costs (docs/variants.md): `clickctl replay
# --offline` over the synthetic click log (bench/throughput's gen_click_log,
# EXAMPLES lines, seed 1) with 0, 1, 2, 4 and 8 FTRL variants (alphas
# 0.02-0.5), each run REPEATS times; prints wall and CPU seconds, peak RSS
# and the store's bytes, and the cost per extra variant.
#
#   bash bench/variants/cost.sh          # BUILD_DIR=build/release EXAMPLES=500000 REPEATS=3
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build/release}
EXAMPLES=${EXAMPLES:-500000}
REPEATS=${REPEATS:-3}
OUT=bench/out/variants
mkdir -p "$OUT"
log="$OUT/synthetic_${EXAMPLES}.vw"
[ -s "$log" ] || "$BUILD_DIR/bench/throughput/gen_click_log" --examples="$EXAMPLES" --seed=1 "$log"
all="v1:alpha=0.02;v2:alpha=0.05;v3:alpha=0.2;v4:alpha=0.5;v5:alpha=0.03;v6:alpha=0.3;v7:alpha=0.07;v8:alpha=0.15"
echo "start: $(date -Is) $(uptime)"
printf "variants\trepeat\twall_s\tcpu_s\tmax_rss_kb\tstore_bytes\tcoordinates\n" | tee "$OUT/cost.tsv"
for rep in $(seq "$REPEATS"); do
  for k in 0 1 2 4 8; do
    variants=""
    [ "$k" -gt 0 ] && variants=$(echo "$all" | cut -d';' -f1-"$k")
    json=$( { /usr/bin/time -f "TIME %e %U %S %M" "$BUILD_DIR/client/clickctl" replay --offline \
      --format=vw --progress_every=0 --json --variants="$variants" "$log" ; } 2>"$OUT/time.txt" \
      | tail -1)
    read -r _ wall user sys rss < <(grep '^TIME' "$OUT/time.txt")
    bytes=$(echo "$json" | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["bytes"], j["coordinates"])')
    printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$k" "$rep" "$wall" "$(echo "$user + $sys" | bc)" "$rss" \
      "${bytes// /	}" | tee -a "$OUT/cost.tsv"
  done
done
echo "end: $(date -Is) $(uptime)"
/usr/bin/python3 - "$OUT/cost.tsv" "$EXAMPLES" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
n = int(sys.argv[2])
by = {}
for r in rows:
    by.setdefault(int(r["variants"]), []).append(r)
base = statistics.median(float(r["cpu_s"]) for r in by[0])
base_rss = statistics.median(int(r["max_rss_kb"]) for r in by[0])
print("| variants | CPU s (median) | us per example | x one model | peak RSS MB | store MB | "
      "CPU per extra variant | RSS per extra variant MB |")
print("|---|---|---|---|---|---|---|---|")
for k in sorted(by):
    cpu = statistics.median(float(r["cpu_s"]) for r in by[k])
    rss = statistics.median(int(r["max_rss_kb"]) for r in by[k])
    store = statistics.median(int(r["store_bytes"]) for r in by[k]) / 1e6
    extra = "" if k == 0 else "%.2fx one model" % ((cpu - base) / k / base)
    extra_rss = "" if k == 0 else "%.1f" % ((rss - base_rss) / k / 1024)
    print("| %d | %.2f | %.2f | %.2fx | %.0f | %.0f | %s | %s |" % (
        k, cpu, cpu / n * 1e6, cpu / base, rss / 1024, store, extra, extra_rss))
PY
