#!/usr/bin/env bash
# Installs the Debian 12 packages clickd needs to build, test and benchmark.
# Idempotent: does nothing when everything is already installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache clang-14 lld libclang-rt-14-dev
  clang-format
  libabsl-dev libxxhash-dev libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev  # the metrics' registry, counters, gauges, histograms and text format
  libcpp-httplib-dev  # /metrics; the metrics tests use prometheus and promtool (below) too
  libssl-dev openssl  # TLS certificate checks and token digests; the security tests make certificates
  python3 python3-xxhash python3-matplotlib
  prometheus python3-yaml nodejs  # deploy tests: promtool, YAML, node for deploy/validate
  python3-grpcio python3-protobuf python3-pytest python3-setuptools python3-pip  # the Python client (client/python); its stubs come from protobuf-compiler + protobuf-compiler-grpc (python3-grpc-tools' protoc predates proto3 optional)
  libnats-dev nlohmann-json3-dev  # --replication=jetstream (the C client); the replication tests start a nats-server cluster (scripts/install_nats.sh: a pinned nats-server from the Go module proxy; JSON: its monitoring endpoint)
  librdkafka-dev kcat  # the Kafka source (kafka/); its tests produce with kcat. The broker comes from Maven Central (scripts/kafka_broker.sh) and needs default-jre-headless or any Java 17+
  chromium  # the status page's integration test loads it in headless Chromium (nlohmann-json3-dev above: /status.json)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's nodejs comes without npm; NodeSource's bundles it (and conflicts with Debian's).
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -ne 0 ]; then
  echo "install_deps: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The pinned nats-server, built from the Go module proxy (not Debian's 2.9.10).
bash "$(dirname "$0")/install_nats.sh" >/dev/null
# The Go and Java clients' code generators, modules and Maven artifacts (cached).
bash "$(dirname "$0")/install_client_deps.sh"
