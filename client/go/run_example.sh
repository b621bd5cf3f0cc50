#!/usr/bin/env bash
# Runs the Go ad-server example (examples/adserver) against a running clickd:
#   client/go/run_example.sh --server=HOST:PORT --model=M [--pages=N] [--token=T]
# The last line of stdout is a JSON object with "updates", "joined" and
# "duplicate". Builds from the module cache (scripts/install_client_deps.sh
# fills it), so it does not download.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin"
export GOFLAGS=-mod=readonly
./generate.sh
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/adserver" ./examples/adserver
"$bin/adserver" "$@"
