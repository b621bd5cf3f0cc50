#!/usr/bin/env bash
# Installs what is missing, builds, and starts the clickd server on
# 127.0.0.1:50051 with the embedded default model ("default": FTRL-Proximal,
# logistic loss). Extra arguments go to clickd, e.g. --address=0.0.0.0:50051
# or --config=models.json. Stop it with Ctrl-C (SIGINT drains and exits 0).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh release
exec build/release/server/clickd "$@"
