#!/usr/bin/env bash
# Regenerates clickdpb/ (the protobuf and gRPC code of proto/clickd/v1/clickd.proto)
# with Debian's protoc and the pinned protoc-gen-go / protoc-gen-go-grpc that
# scripts/install_client_deps.sh installs. The output is committed, so that the
# module builds with `go build` alone; scripts/test_clients.sh checks that it
# matches the proto.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:$(go env GOPATH)/bin"
out=${1:-clickdpb}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m=Mclickd/v1/clickd.proto=github.com/clickd/clickd/client/go/clickdpb
protoc -I ../../proto --go_out="$tmp" --go_opt=paths=source_relative --go_opt="$m" \
  --go-grpc_out="$tmp" --go-grpc_opt=paths=source_relative --go-grpc_opt="$m" \
  clickd/v1/clickd.proto
mkdir -p "$out"
cp "$tmp"/clickd/v1/clickd.pb.go "$tmp"/clickd/v1/clickd_grpc.pb.go "$out"/
