#!/bin/sh
# Builds and runs the memory budget benchmark (docs/memory.md, "Cost" and
# "TTL eviction").
set -e
cd "$(dirname "$0")/../.."
cmake --build build/release -j2 --target memory_budget_bench
exec build/release/bench/memory_budget/memory_budget_bench "$@"
