#!/usr/bin/env bash
# The embedded replica's figures in docs/embedded.md, in one run (about a
# minute). Builds nothing:
#
#   JOBS=2 bash scripts/build.sh release embedded_bench clickd
#   bash bench/embedded/run.sh
#
# embedded_bench starts a 3-node nats-server cluster and one clickd replica
# on 127.0.0.1, trains the default model, opens an embedded replica in its
# own process and measures Predict latency and one caller's throughput
# in-process and over gRPC, and the freshness of the embedded replica under
# 512 open-loop writers offering 10,000 Updates/s in all (embedded_bench
# --help: fresh_*). Between latency and throughput it runs, against the
# same deployment and model, the Go binding's latency
# (client/go/examples/embedded_latency, built here with -tags
# clickd_embedded from the module cache), the Python binding's
# (python_latency.py) and the Java binding's (EmbeddedLatency in
# client/java, compiled here offline). Output: bench/out/embedded/run.txt and results.json.
# Environment: BUILD_DIR (build/release), WORK_DIR (bench/out/embedded/data),
# BINDINGS=0 to skip the Go, Python and Java parts.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
out=bench/out/embedded
work=${WORK_DIR:-$out/data}
bench=$build/bench/embedded/embedded_bench
source bench/lib/require_binaries.sh
require_binaries run.sh "build the targets embedded_bench and clickd (see above)" "$bench" \
  "$build/server/clickd"
mkdir -p "$out"
exec > >(tee "$out/run.txt") 2>&1
echo "# clickd embedded replica benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD)"
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'); every process shares them"
echo "top CPU users now:"
ps -eo pcpu,comm --sort=-pcpu | head -6
then_run=()
if [ "${BINDINGS:-1}" != 0 ]; then
  lib=$(realpath -m "$build/embedded/libclickd_embedded.so")
  [ -f "$lib" ] || { echo "run.sh: $lib is missing (a build without a sanitizer makes it)" >&2; exit 1; }
  export CLICKD_EMBEDDED_LIB=$lib PATH="$PATH:/usr/local/go/bin"
  (cd client/go && ./generate.sh && GOFLAGS=-mod=readonly GOPROXY=off \
    go build -tags clickd_embedded -o "$(realpath -m "../../$out/embedded_latency")" ./examples/embedded_latency)
  (cd client/java && mvn -B -q -o -Dstyle.color=never compile dependency:build-classpath \
    -Dmdep.outputFile=target/classpath.txt >&2)
  jcp="$PWD/client/java/target/classes:$(cat client/java/target/classpath.txt)"
  then_run=("--then_run=$out/embedded_latency,env PYTHONPATH=$build/client/python/stubs:client/python /usr/bin/python3 bench/embedded/python_latency.py,java -cp $jcp dev.clickd.client.examples.EmbeddedLatency")
fi
"$bench" --work_dir="$work" --clickd="$build/server/clickd" --out="$out/results.json" "${then_run[@]}" "$@"
rm -rf "$work"
