#!/usr/bin/env bash
# Memory and file descriptors per empty model: starts clickd (memory-only,
# then with --data_dir), creates N empty FTRL models with `clickctl models
# create`, and prints the growth of the server's RSS and open descriptors
# per model. Results: docs/limits.md.
#   bash bench/limits/empty_models.sh [N=1000]
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-1000}
bin=build/release
[ -x "$bin/server/clickd" ] || bash scripts/build.sh release >/dev/null
port=$((20000 + RANDOM % 20000))
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
for mode in memory durable; do
  data_dir=$(mktemp -d)
  flags=(--address=127.0.0.1:$port --metrics_port=0 --default_model=false
         --max_models=$((n + 1)))
  [ "$mode" = durable ] && flags+=(--data_dir="$data_dir")
  "$bin/server/clickd" "${flags[@]}" >"$data_dir.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q serving "$data_dir.log" && break; sleep 0.1; done
  before_rss=$(rss_kb $pid); before_fds=$(fds $pid)
  for i in $(seq "$n"); do
    "$bin/client/clickctl" models create --server=127.0.0.1:$port --model="m$i" >/dev/null
  done
  after_rss=$(rss_kb $pid); after_fds=$(fds $pid)
  echo "$mode: $n empty models: RSS +$(( (after_rss - before_rss) / 1024 )) MiB," \
    "$(( (after_rss - before_rss) * 1024 / n )) bytes per model;" \
    "descriptors +$((after_fds - before_fds)) ($(awk -v a=$after_fds -v b=$before_fds -v n=$n 'BEGIN {printf "%.2f", (a-b)/n}') per model)"
  kill -TERM $pid; wait $pid || true
  rm -rf "$data_dir" "$data_dir.log"
done
