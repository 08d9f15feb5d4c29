#!/usr/bin/env bash
# Development build: compiles the engine and puts lucid/_C*.so into python/lucid, so tests run
# with PYTHONPATH=python and no install. Usage: scripts/dev_build.sh [build-dir] [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/dev}
shift || true
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)" -DCMAKE_CUDA_COMPILER_LAUNCHER="$(command -v ccache || true)" \
    -DLUCID_BUILD_TESTS=ON "$@" >/dev/null
fi
cmake --build "$BUILD" -j"$(nproc)"
