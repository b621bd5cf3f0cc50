#!/usr/bin/env bash
# Builds and tests the Go and Java clients (client/go, client/java) against
# the real clickd of build/release (scripts/build.sh release first), offline
# from the caches scripts/install_client_deps.sh fills:
#   - Go: code generated from proto/, gofmt and go vet clean, go test; then
#     the embedded replica's binding (build tag clickd_embedded, cgo) against
#     build/release/embedded/libclickd_embedded.so, one nats-server and one
#     clickd replica
#   - Java: mvn test (compiles with -Xlint:all -Werror), JUnit against clickd,
#     EmbeddedReplicaTest (JNA) against libclickd_embedded.so as the Go one
#   - the cross-language digest check: the same examples learned through the
#     Go, Java and Python clients, each in the features and the keys form,
#     leave one state digest
#   - both run_example.sh against one clickd: last line JSON with
#     "updates", "joined" and "duplicate"
# Every clickd is started by the tests on 127.0.0.1 and stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$PATH:/usr/local/go/bin"
bash scripts/install_client_deps.sh
export CLICKD_BINARY="$root/build/release/server/clickd"
stubs="$root/build/release/client/python/stubs"
[ -x "$CLICKD_BINARY" ] || { echo "test_clients: build clickd first (scripts/build.sh release)" >&2; exit 1; }
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
export CLICKD_DIGEST_DIR="$work/digests"
mkdir -p "$CLICKD_DIGEST_DIR"

echo "-- Go client"
(
  cd client/go
  export GOFLAGS=-mod=readonly GOPROXY=off   # offline: the module cache must hold everything
  ./generate.sh
  unformatted=$(gofmt -l .)
  [ -z "$unformatted" ] || { echo "gofmt: $unformatted" >&2; exit 1; }
  go vet ./...
  go vet -tags clickd_embedded ./...
  go test -count=1 -timeout 300s ./...
  CLICKD_EMBEDDED_LIB="$root/build/release/embedded/libclickd_embedded.so" \
    go test -count=1 -timeout 120s -tags clickd_embedded -run '^TestEmbedded' .
)

echo "-- Java client"
(cd client/java && mvn -B -q -o -Dstyle.color=never test -Dclickd.binary="$CLICKD_BINARY" \
  -Dclickd.embedded.lib="$root/build/release/embedded/libclickd_embedded.so" 2>&1 | sed "s/\x1b\[[0-9;]*m//g" | tail -40)
[ -s "$CLICKD_DIGEST_DIR/java" ] || { echo "test_clients: the Java tests failed" >&2; exit 1; }

# One clickd for the Python digest and the examples, on a port the kernel picks.
"$CLICKD_BINARY" --address=127.0.0.1:0 --metrics_port=0 >"$work/clickd.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  port=$(grep -o 'serving [0-9]* model(s) on [^ ]* (port [0-9]*)' "$work/clickd.log" | grep -o '[0-9]*)$' | tr -d ')' || true)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "${port:-}" ] || { cat "$work/clickd.log" >&2; echo "test_clients: clickd did not start" >&2; exit 1; }

echo "-- cross-language digest (Go, Java, Python; features and keys forms)"
PYTHONPATH="$stubs:$root/client/python" /usr/bin/python3 tests/client_digest_python.py \
  --server="127.0.0.1:$port" --out="$CLICKD_DIGEST_DIR"
digests=$(cat "$CLICKD_DIGEST_DIR"/go "$CLICKD_DIGEST_DIR"/java "$CLICKD_DIGEST_DIR"/python | sort -u)
if [ "$(echo "$digests" | wc -l)" -ne 1 ]; then
  grep . "$CLICKD_DIGEST_DIR"/* >&2
  echo "test_clients: the clients left different state digests" >&2
  exit 1
fi
echo "state digest $digests from go, java and python"

echo "-- examples"
for lang in go java; do
  last=$(client/$lang/run_example.sh --server="127.0.0.1:$port" --model="example-$lang" --pages=30 | tail -1)
  echo "$lang: $last"
  /usr/bin/python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert d["updates"] > 0 and d["joined"] == 10 and d["duplicate"] == 10, d' "$last"
done
echo "test_clients: all passed"
