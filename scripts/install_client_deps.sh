#!/usr/bin/env bash
# Fetches what the Go and Java clients (client/go, client/java) need to build
# and test, once: the pinned protoc-gen-go / protoc-gen-go-grpc, the Go
# module cache, and every Maven artifact and plugin the build uses, into
# ~/go and ~/.m2. Idempotent and cached: when everything is already there it
# downloads nothing (stamps keyed on go.sum and pom.xml), so a rerun of
# scripts/test.sh builds both clients offline.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
PROTOC_GEN_GO=v1.36.12       # google.golang.org/protobuf, as in client/go/go.mod
PROTOC_GEN_GO_GRPC=v1.6.0    # google.golang.org/grpc/cmd/protoc-gen-go-grpc
for tool in go java mvn protoc openssl; do
  command -v "$tool" >/dev/null || { echo "install_client_deps: $tool is missing" >&2; exit 1; }
done
gobin="$(go env GOPATH)/bin"
have() { [ -x "$gobin/$1" ] && go version -m "$gobin/$1" 2>/dev/null | grep -q "mod.*$2"; }
have protoc-gen-go "$PROTOC_GEN_GO" ||
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO"
have protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC" ||
  go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC"

stamp_dir="${XDG_CACHE_HOME:-$HOME/.cache}/clickd"
mkdir -p "$stamp_dir"
go_stamp="$stamp_dir/go-$(sha256sum client/go/go.sum | cut -c1-16)"
if [ ! -e "$go_stamp" ]; then
  (cd client/go && go mod download)
  touch "$go_stamp"
fi
# Maven resolves a plugin only when a build first runs it: run once every
# phase and goal that scripts/test_clients.sh, run_example.sh and the
# benchmark use (the hashing test needs no server).
mvn_stamp="$stamp_dir/mvn-$(sha256sum client/java/pom.xml | cut -c1-16)"
if [ ! -e "$mvn_stamp" ]; then
  (cd client/java && mvn -B -q -Dstyle.color=never clean test -Dtest=HashingTest \
    dependency:build-classpath -Dmdep.outputFile=target/classpath.txt)
  touch "$mvn_stamp"
fi
