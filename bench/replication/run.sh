#!/usr/bin/env bash
# Replication benchmarks: every figure of docs/performance_replication.md in
# one command (about 5 minutes with the defaults). Builds nothing:
#
#   cmake -S . -B build/rel -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLICKD_BUILD_BENCH=ON
#   cmake --build build/rel -j2 --target replication_bench clickd clickctl
#   BUILD_DIR=build/rel bash bench/replication/run.sh
#
# replication_bench starts, on 127.0.0.1, a 3-node nats-server JetStream
# cluster (R=3, file storage), 3 clickd replicas (--replication=jetstream)
# and one clickd with the local file log (--update_log_sync=every_request),
# and measures in one run: Update throughput and ack latency (file log vs
# replicated), publish-to-applied lag under light and heavy write load, and
# Predict latency on an idle replica vs one applying the stream. The machine
# load is printed before every measurement. Every process is stopped by PID;
# every load loop is bounded in count and time (replication_bench --help).
#
# WORK_DIR (the NATS stores and clickd data) should be on a real disk; it is
# emptied first. Output: bench/out/replication/run.txt (this log),
# results.json. Environment: BUILD_DIR (build/release), WORK_DIR
# (bench/out/replication/data), SECONDS_PER_RUN (5), REPEATS (3),
# WRITERS (1,8), BATCH_SIZES (10,100), LAG_PROBES (300), CANDIDATES (40).
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${BUILD_DIR:-build/release}
out=bench/out/replication
work=${WORK_DIR:-$out/data}
bench=$build/bench/replication/replication_bench
clickd=$build/server/clickd
source bench/lib/require_binaries.sh
require_binaries run.sh "build the targets replication_bench and clickd (see above)" "$bench" \
  "$clickd"
if ! command -v "${NATS_SERVER:-/usr/local/bin/nats-server}" > /dev/null; then
  echo "run.sh: nats-server is missing (bash scripts/install_nats.sh, or set NATS_SERVER)" >&2
  exit 1
fi
mkdir -p "$out"
exec > >(tee "$out/run.txt") 2>&1

echo "# clickd replication benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/Mem:/{print $2}') GiB;" \
  "work dir on $(df -T "$(dirname "$work")" | awk 'NR==2{print $2 " " $1}')"
echo "nats-server: $("${NATS_SERVER:-/usr/local/bin/nats-server}" --version)"
echo "build: $build, $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")"
echo "every process (3 NATS nodes, 4 clickd, this client) shares these $(nproc) CPUs: absolute"
echo "numbers are pessimistic; compare the ratios within this run."
echo "top CPU users now:"
ps -eo pcpu,comm --sort=-pcpu | head -6
echo "command: $bench --work_dir=$work --clickd=$clickd --out=$out/results.json" \
  "--seconds=${SECONDS_PER_RUN:-5} --repeats=${REPEATS:-3} --writers=${WRITERS:-1,8}" \
  "--batch_sizes=${BATCH_SIZES:-10,100} --lag_probes=${LAG_PROBES:-300} --candidates=${CANDIDATES:-40}"

"$bench" --work_dir="$work" --clickd="$clickd" --out="$out/results.json" \
  --seconds="${SECONDS_PER_RUN:-5}" --repeats="${REPEATS:-3}" --writers="${WRITERS:-1,8}" \
  --batch_sizes="${BATCH_SIZES:-10,100}" --lag_probes="${LAG_PROBES:-300}" \
  --candidates="${CANDIDATES:-40}"
rm -rf "$work"
