#!/usr/bin/env bash
# The durability soak: the kill -9 crash loop of tests/crash_loop_test.cc
# (restored model == offline replay of exactly what was made durable, every
# acknowledged update present) for many more rounds than the test command
# runs, over several seeds and every --update_log_sync mode, on a longer log.
#
#   bash scripts/soak.sh          # 3 modes x 3 seeds x 100 rounds, release build
#   SYNC_MODES=every_request SEEDS="1 2" ROUNDS=50 bash scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build/release}
[[ -x $BUILD_DIR/tests/crash_loop_test ]] || bash scripts/build.sh release
for sync in ${SYNC_MODES:-every_request interval none}; do
for seed in ${SEEDS:-1 2 3}; do
  echo "== crash loop, --update_log_sync=$sync, seed $seed, ${ROUNDS:-100} rounds"
  CLICKD_CRASH_SYNC=$sync CLICKD_CRASH_SEED=$seed CLICKD_CRASH_ROUNDS=${ROUNDS:-100} \
    CLICKD_CRASH_EXAMPLES=${EXAMPLES:-2000000} \
    "$BUILD_DIR/tests/crash_loop_test" 2>&1 | grep -E 'rounds|OK|FAILED|Failure' -A3
done
done
