#!/usr/bin/env bash
# Installs what is missing, builds, and starts the clickd server on
# 127.0.0.1:50051 with the embedded default model ("default": FTRL-Proximal,
# logistic loss). Extra arguments go to clickd, e.g. --address=0.0.0.0:50051
# or --config=models.json. Stop it with Ctrl-C (SIGINT drains, snapshots the
# models and exits 0).
#
# The models are kept in a data directory, so that a restart keeps what they
# learned: $CLICKD_DATA_DIR, else $XDG_DATA_HOME/clickd (~/.local/share/clickd),
# created if missing. Passing --data_dir yourself overrides it (--data_dir=
# keeps the models in memory only). A per-user directory rather than one in
# the checkout: the models outlive `git clean`, `rm -rf build` and a fresh
# clone, and the checkout stays clean.
set -euo pipefail
data_dir=${CLICKD_DATA_DIR:-${XDG_DATA_HOME:-${HOME:?}/.local/share}/clickd}
[[ "$data_dir" = /* ]] || data_dir="$PWD/$data_dir"  # relative to the caller, not the checkout
data_dir_given=false
for arg in "$@"; do
  case "$arg" in
    --) break ;;
    --data_dir | --data_dir=* | -data_dir | -data_dir=*) data_dir_given=true ;;
  esac
done

cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
# Only the server and clickctl (the tests and benchmarks are scripts/test.sh's):
# on a cold machine 152 of the 379 build steps (135 of 298 compiles).
bash scripts/build.sh release clickd clickctl
if ! $data_dir_given; then
  mkdir -p "$data_dir"
  # One server per data directory: a second one would restore the models from
  # files the first is still writing. clickd inherits the locked descriptor,
  # so the lock lasts as long as it runs.
  exec 9<"$data_dir"
  if ! flock -n 9; then
    echo "clickd: $data_dir is in use by another clickd started by scripts/run.sh;" \
      "set CLICKD_DATA_DIR or pass --data_dir to use another directory" >&2
    exit 1
  fi
  echo "clickd: models are kept in $data_dir (set CLICKD_DATA_DIR or pass --data_dir to change)"
  set -- --data_dir="$data_dir" "$@"
fi
exec build/release/server/clickd "$@"
