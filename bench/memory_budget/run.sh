#!/bin/sh
# Builds and runs the memory budget benchmark (docs/memory.md, "Cost").
set -e
cd "$(dirname "$0")/../.."
cmake --build build/rel -j2 --target memory_budget_bench
exec build/rel/bench/memory_budget/memory_budget_bench "$@"
