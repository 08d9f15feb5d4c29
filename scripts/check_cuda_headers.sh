#!/usr/bin/env bash
# Compile check of the device-neutral headers: nvcc builds tests/cuda/neutral_headers.cu (the
# elementwise functor table, csrc/lucid/ops/list/elementwise_functors.def, expanded over the scalar
# functors of csrc/lucid/ops/scalar_functors.h into a __global__ kernel per row and dtype) and
# tests/cuda/random_stream.cu (the Philox stream, core/philox.h, and the random ops' draw rules,
# ops/random_draws.h) and tests/cuda/pointwise_loss.cu (the pointwise losses' math,
# ops/pointwise_loss_math.h) for sm_90 with -c only, so no GPU is needed. Every nvcc warning is an
# error (a device-side call into a host-only function, constexpr ones included, is only a
# warning by default), except #186 "pointless comparison of unsigned integer with zero": the same
# generic code runs for uint8 on the CPU too. It also checks that the headers, compiled by the
# host compiler, pull in no x86 intrinsics and no Sleef. Exit status 0 when both pass.
# Usage: scripts/check_cuda_headers.sh   (NVCC=/path/to/nvcc to choose the compiler)
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CXX=${CXX:-c++}
[ -x "$NVCC" ] || { echo "check_cuda_headers: nvcc not found (set NVCC)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

for tu in neutral_headers random_stream pointwise_loss; do
  "$NVCC" -arch=sm_90 -std=c++20 -Werror all-warnings -diag-suppress 186 -Icsrc \
    -c "tests/cuda/$tu.cu" -o "$TMP/$tu.o"
done

for header in ops/scalar_functors.h core/philox.h ops/random_draws.h; do
  echo "#include \"lucid/$header\"" > "$TMP/host.cpp"
  "$CXX" -std=c++20 -Icsrc -M "$TMP/host.cpp" > "$TMP/host.d"
  if grep -E -q 'immintrin\.h|sleef\.h' "$TMP/host.d"; then
    echo "check_cuda_headers: $header includes x86 intrinsics or Sleef:" >&2
    grep -E -o '[^ ]*(immintrin|sleef)\.h' "$TMP/host.d" >&2
    exit 1
  fi
done
echo "check_cuda_headers: ok ($("$NVCC" --version | tail -1))"
