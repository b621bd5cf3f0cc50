#!/usr/bin/env bash
# Configures and builds one flavour of the tree under build/<flavour>.
#   release  g++, optimised (what ships and what benchmarks measure)
#   asan     clang, ASan + UBSan, -Wthread-safety as an error
#   tsan     clang, ThreadSanitizer
#   fuzz     clang, libFuzzer + ASan + UBSan, the fuzz targets only
# Further arguments name the targets to build (default: all of them), e.g.
#   bash scripts/build.sh release clickd clickctl   # what scripts/run.sh needs
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
targets=("${@:2}")
jobs=${JOBS:-$(nproc)}
common=(-G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
command -v ccache >/dev/null && common+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
case "$flavour" in
  release)
    cmake -S . -B build/release "${common[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ >/dev/null ;;
  asan)
    cmake -S . -B build/asan "${common[@]}" -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCLICKD_SANITIZE=address -DCLICKD_THREAD_SAFETY=ON -DCLICKD_BUILD_BENCH=OFF >/dev/null ;;
  tsan)
    cmake -S . -B build/tsan "${common[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCLICKD_SANITIZE=thread -DCLICKD_BUILD_BENCH=OFF >/dev/null ;;
  fuzz)
    cmake -S . -B build/fuzz "${common[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCLICKD_SANITIZE=address -DCLICKD_FUZZ=ON -DCLICKD_BUILD_BENCH=OFF >/dev/null
    cmake --build build/fuzz -j "$jobs" --target snapshot_reader_fuzz update_log_reader_fuzz \
      libsvm_parser_fuzz vw_parser_fuzz criteo_parser_fuzz model_numeric_fuzz \
      log_record_reader_fuzz replica_snapshot_reader_fuzz feedback_state_fuzz
    exit 0 ;;
  *) echo "build.sh: unknown flavour $flavour (release|asan|tsan|fuzz)" >&2; exit 2 ;;
esac
if ((${#targets[@]})); then
  cmake --build "build/$flavour" -j "$jobs" --target "${targets[@]}"
else
  cmake --build "build/$flavour" -j "$jobs"
fi
