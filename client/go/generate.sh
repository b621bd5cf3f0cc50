#!/usr/bin/env bash
# Generates clickdpb/ (the protobuf and gRPC code of proto/clickd/v1/clickd.proto)
# with Debian's protoc and the pinned protoc-gen-go / protoc-gen-go-grpc that
# scripts/install_client_deps.sh installs. Not committed: the proto changes
# with the server, and the Go code must follow it, so every build path
# (run_example.sh, scripts/test_clients.sh, bench/clients/run.sh) runs this
# first. Rewrites the files only when their content changes.
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
for f in clickd.pb.go clickd_grpc.pb.go; do
  cmp -s "$tmp/clickd/v1/$f" "$out/$f" || cp "$tmp/clickd/v1/$f" "$out/$f"
done
