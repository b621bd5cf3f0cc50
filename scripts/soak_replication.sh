#!/usr/bin/env bash
# The long replication fault loop (tests/fault/fault_loop.py): kills,
# freezes and network partitions of NATS nodes and clickd replicas, then the
# exactness checks. Needs root (network namespaces) and a release build.
#
#   ROUNDS=60 SEED=1 bash scripts/soak_replication.sh            # the pinned nats-server
#   NATS_SERVER=/usr/sbin/nats-server NATS_SYNC_INTERVAL= MIN_SERVER_VERSION=2.9.0 \
#     bash scripts/soak_replication.sh                            # another one, e.g. Debian's 2.9.10
#
# Prints the loop's JSON summary (last line) and exits non-zero when a check
# failed. docs/replication.md#fault-loop has the published figures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/release}
rounds=${ROUNDS:-60}
seed=${SEED:-1}
work=${WORK:-/tmp/clickd-soak-$$}
export PYTHONPATH="$build/client/python/stubs"
export CLICKD_BINARY="$build/server/clickd" CLICKCTL_BINARY="$build/client/clickctl"
export NATS_SERVER=${NATS_SERVER:-/usr/local/bin/nats-server}
args=(--rounds="$rounds" --seed="$seed" --work="$work")
[ -n "${MIN_SERVER_VERSION:-}" ] && args+=(--min_server_version="$MIN_SERVER_VERSION")
exec /usr/bin/python3 tests/fault/fault_loop.py "${args[@]}"
