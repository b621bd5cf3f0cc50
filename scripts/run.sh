#!/usr/bin/env bash
# Installs what is missing, builds, and runs clickd.
# Until the gRPC server lands (issue 3) this trains the embedded default
# model (FTRL-Proximal, logistic loss) offline on the iPinYou sample and
# prints its progressive and test metrics.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh release
data=../shared/data/ipinyou
exec build/release/client/clickctl replay --offline --format=libsvm \
  --test_file="$data/test.fm.txt" "$data/train.fm.txt" "$@"
