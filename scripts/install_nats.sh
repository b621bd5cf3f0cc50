#!/usr/bin/env bash
# Installs the pinned nats-server that replication is tested with, built the
# ordinary Go way from the Go module proxy, to
#   /usr/local/lib/clickd/nats-server-<version>/nats-server
# and links /usr/local/bin/nats-server to it. Idempotent: does nothing when
# that version is already there. Debian's nats-server (2.9.10) is not used:
# under NATS faults its copies of a stream could diverge (docs/replication.md).
#   NATS_SERVER_VERSION  another version (the soak compares versions)
#   NATS_SERVER_PREFIX   install under this directory instead
set -euo pipefail
version=${NATS_SERVER_VERSION:-v2.15.3}
prefix=${NATS_SERVER_PREFIX:-/usr/local/lib/clickd}
dir="$prefix/nats-server-$version"
if [ ! -x "$dir/nats-server" ]; then
  go=$(command -v go || true)
  [ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
  if [ -z "$go" ]; then
    echo "install_nats: no Go toolchain (go on PATH or /usr/local/go/bin/go) to build nats-server $version" >&2
    exit 1
  fi
  echo "install_nats: building nats-server $version from the Go module proxy" >&2
  mkdir -p "$dir.tmp"
  # The module cache (go env GOMODCACHE) keeps the sources: a rerun builds offline.
  GOBIN="$dir.tmp" CGO_ENABLED=0 "$go" install "github.com/nats-io/nats-server/v2@$version" >&2
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
fi
if [ -z "${NATS_SERVER_PREFIX:-}" ] && [ -z "${NATS_SERVER_VERSION:-}" ]; then
  ln -sf "$dir/nats-server" /usr/local/bin/nats-server
fi
echo "$dir/nats-server"
