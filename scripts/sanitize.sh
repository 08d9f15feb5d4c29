#!/usr/bin/env bash
# Builds lucid with AddressSanitizer + UndefinedBehaviorSanitizer (build/asan) and runs the C++
# tests and the Python suite (or the pytest args given) against that build.
# Usage: bash scripts/sanitize.sh [pytest args]   (default: the whole tests/python suite)
#        e.g. bash scripts/sanitize.sh tests/python/test_autograd.py -x
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/asan
if [ ! -f "$B/CMakeCache.txt" ]; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUCID_SANITIZE=ON -DLUCID_BUILD_TESTS=ON \
        -DLUCID_EXT_OUTPUT_DIR="$PWD/$B/ext" -DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)" >/dev/null
fi
cmake --build "$B" -j"$(nproc)"
# allocator_may_return_null: a huge allocation returns null as malloc does, so lucid's own
# out-of-memory error is what is tested (ASan would abort instead).
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# No buffer recycling (backends/cpu/cpu_allocator.cpp): every freed buffer goes back to malloc, so ASan sees
# a use after free instead of a reused buffer (unless the caller asks otherwise).
export LUCID_CPU_CACHE_MB=${LUCID_CPU_CACHE_MB:-0}
export LUCID_SANITIZED=1  # tests of allocator behaviour skip (tests/python/harness.py)
"$B/lucid_cpp_tests" --gtest_brief=1
# A package tree whose lucid/_C is the sanitized build.
PKG="$B/pkg"
rm -rf "$PKG" && mkdir -p "$PKG"
cp -r python/lucid "$PKG/lucid"
rm -f "$PKG"/lucid/_C*.so
cp "$B"/ext/_C*.so "$PKG/lucid/"
LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)" \
  PYTHONPATH="$PWD/$PKG" python3 -m pytest -q -p no:cacheprovider "${@:-tests/python}"
