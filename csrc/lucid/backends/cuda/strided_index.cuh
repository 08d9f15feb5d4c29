// Device-side addressing of strided tensors for the CUDA data-movement kernels (movement, indexing,
// embedding, fold): StridedIndexer maps a row-major position of a shape to element offsets in up to
// N operands' strides (broadcast = stride 0, negative strides for flips), after the host has merged
// dims that are contiguous in every operand (make_indexer), so most copies run with one or two dims.
// Index is int32_t when every position and offset fits (faster division), int64_t otherwise
// (fits_int32). by_width picks the unsigned type an element moves as. kMaxDims is offset_calculator.cuh's; the launch geometry is launch_geometry.cuh's.
//
// This is the INDEX lane's own minimal offset calculator; ELEMENTWISE's offset_calculator.cuh is
// the shared one once it is on main, and this file should then be folded into it.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>

#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/backends/cuda/offset_calculator.cuh"
#include "lucid/core/error.h"
#include "lucid/core/tensor.h"

namespace lucid::cuda {

// Calls f(U{}) with U the unsigned integer type of the dtype's width: the data-movement kernels
// move elements as their bits.
template <class F>
void by_width(DType t, const F& f) {
  switch (itemsize(t)) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

template <int N, class Index>
struct StridedIndexer {
  int ndim = 0;
  Index sizes[kMaxDims];
  Index strides[N][kMaxDims];

  // Element offsets of row-major position `linear` in each operand.
  __device__ void offsets(Index linear, Index (&out)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      Index i = linear % sizes[d];
      linear /= sizes[d];
#pragma unroll
      for (int k = 0; k < N; ++k) out[k] += i * strides[k][d];
    }
  }
};

// The merged geometry of `shape` seen through N operands' strides (size-1 dims dropped, a dim
// merged into the next when it is contiguous with it in every operand).
template <int N>
struct MergedDims {
  int ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[N][kMaxDims];
};

template <int N>
MergedDims<N> merge_dims(const Shape& shape, const std::array<const Strides*, N>& st) {
  MergedDims<N> m;
  int64_t sz[64];
  int64_t s[N][64];
  int n = 0;
  LUCID_CHECK(shape.size() <= 64, ValueError, "cuda: tensors of more than 64 dims are not supported");
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = n > 0;
    for (int k = 0; k < N && merge; ++k) merge = s[k][n - 1] == (*st[k])[d] * shape[d];
    if (merge) {
      sz[n - 1] *= shape[d];
      for (int k = 0; k < N; ++k) s[k][n - 1] = (*st[k])[d];
      continue;
    }
    sz[n] = shape[d];
    for (int k = 0; k < N; ++k) s[k][n] = (*st[k])[d];
    ++n;
  }
  LUCID_CHECK(n <= kMaxDims, ValueError, "cuda: a strided tensor with more than ", kMaxDims,
              " non-mergeable dims is not supported");
  m.ndim = n;
  for (int d = 0; d < n; ++d) {
    m.sizes[d] = sz[d];
    for (int k = 0; k < N; ++k) m.strides[k][d] = s[k][d];
  }
  return m;
}

// Whether every position (< numel) and every operand offset of the merged geometry fits int32
// (positions below 2^30, so a grid-stride step past the end cannot overflow either).
template <int N>
bool fits_int32(const MergedDims<N>& m, int64_t numel) {
  constexpr int64_t kMax = INT32_MAX;
  if (numel >= (int64_t{1} << 30)) return false;
  for (int k = 0; k < N; ++k) {
    int64_t span = 0;
    for (int d = 0; d < m.ndim; ++d) span += (m.sizes[d] - 1) * std::llabs(m.strides[k][d]);
    if (span > kMax) return false;
  }
  return true;
}

template <int N, class Index>
StridedIndexer<N, Index> make_indexer(const MergedDims<N>& m) {
  StridedIndexer<N, Index> ix;
  ix.ndim = m.ndim;
  for (int d = 0; d < m.ndim; ++d) {
    ix.sizes[d] = static_cast<Index>(m.sizes[d]);
    for (int k = 0; k < N; ++k) ix.strides[k][d] = static_cast<Index>(m.strides[k][d]);
  }
  return ix;
}

}  // namespace lucid::cuda
