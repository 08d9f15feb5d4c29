// The one offset calculator of the CUDA backend: the geometry of a kernel that walks a shape
// through up to kMaxOperands operands' strides, in the manner of PyTorch's TensorIterator +
// OffsetCalculator.
//   - on the host, a Geometry holds sizes and strides with size-1 dims dropped and dims that are
//     contiguous for every operand coalesced, innermost dim first, and says whether every offset
//     fits 32 bits. Two builders: make_geometry, for the elementwise kernels, broadcasts every
//     input tensor to the output's shape (a missing or size-1 dim gets stride 0; a host scalar is
//     stride 0 everywhere) in byte strides and says whether the whole range is one contiguous run
//     for every tensor operand (the vectorised path); strided_geometry, for the data-movement
//     kernels (strided copies, fills, gathers and scatters, index checks), takes a shape and each
//     operand's strides in elements as given (negative ones too: flips), so offsets index typed
//     pointers;
//   - on the device, OffsetCalculator<N, Index> turns a linear index (row-major over the shape)
//     into each operand's offset in the strides' unit, with Index uint32_t (fast division by the
//     sizes, IntDivider<uint32_t>) when every offset fits, else int64_t; with_offset_calculator
//     launches with the one that fits.
// The elementwise launch helper built on it is elementwise_launch.cuh. Host-side parts compile with
// the host compiler too (tests/cpp/cuda/test_cuda_offset_calculator.cpp checks them without a GPU).
#pragma once
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "lucid/core/error.h"
#include "lucid/core/host_device.h"
#include "lucid/core/tensor.h"

namespace lucid::cuda {

// Full unrolling of the loops over dims and operands, in device code only (the host compiler
// does not know the pragma).
#ifdef __CUDA_ARCH__
#define LUCID_CUDA_UNROLL _Pragma("unroll")
#else
#define LUCID_CUDA_UNROLL
#endif

constexpr int kMaxDims = 16;     // dims left after coalescing (a geometry with more raises)
constexpr int kMaxOperands = 8;  // the output and up to 7 inputs

// Division by a divisor fixed at launch. The 32-bit one replaces the division by a multiply-high,
// an add and a shift (Granlund and Montgomery's round-up method, as PyTorch's IntDivider): exact
// for 1 <= divisor <= 2^31 and every dividend n < 2^31, which the 32-bit path guarantees
// (numel <= INT32_MAX).
template <class Index> struct IntDivider {
  Index divisor = 1;
  IntDivider() = default;
  explicit IntDivider(Index d) : divisor(d) {}
  LUCID_HOST_DEVICE Index div(Index n) const { return n / divisor; }
};

template <> struct IntDivider<uint32_t> {
  uint32_t divisor = 1;
  uint32_t magic = 0;
  uint32_t shift = 0;
  IntDivider() = default;
  explicit IntDivider(uint32_t d) : divisor(d) {
    LUCID_CHECK(d >= 1 && d <= (1u << 31), Error, "IntDivider: divisor ", d, " out of range");
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }
  LUCID_HOST_DEVICE uint32_t div(uint32_t n) const {
#ifdef __CUDA_ARCH__
    uint32_t t = __umulhi(n, magic);
#else
    uint32_t t = static_cast<uint32_t>((static_cast<uint64_t>(n) * magic) >> 32);
#endif
    return (t + n) >> shift;
  }
};

// Sizes and strides of an iteration (innermost dim first), built on the host.
struct Geometry {
  int nops = 0;
  int ndim = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  // make_geometry: bytes, 0 for broadcast dims and host scalars; strided_geometry: elements.
  int64_t strides[kMaxDims][kMaxOperands] = {};
  // Every operand covers the range with one unit stride (0 or 1 dims): make_geometry, every
  // tensor operand's element i is at data_ptr + i * itemsize; strided_geometry, at element i.
  bool contiguous = false;
  // Every operand's offsets fit 32 bits (non-negative strides, largest offset < 2^31) and
  // numel <= INT32_MAX: the uint32_t OffsetCalculator is exact.
  bool fits_32bit = false;
};

// Per-dim strides of every operand (outermost dim first), before coalescing.
using DimStrides = std::vector<std::array<int64_t, kMaxOperands>>;

// g's sizes, strides and fits_32bit from `shape` and its per-dim strides `st` (g.nops and
// g.numel > 0 set): size-1 dims dropped, a dim merged into the one outside it when that is
// contiguous with it for every operand (outer stride == inner stride * inner size).
inline void coalesce_into(Geometry& g, const Shape& shape, const DimStrides& st, const char* what) {
  std::vector<int64_t> sizes;
  DimStrides strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!sizes.empty()) {
      bool can = true;
      for (int k = 0; k < g.nops; ++k)
        if (strides.back()[k] != st[d][k] * shape[d]) { can = false; break; }
      if (can) {
        sizes.back() *= shape[d];
        strides.back() = st[d];
        continue;
      }
    }
    sizes.push_back(shape[d]);
    strides.push_back(st[d]);
  }
  g.ndim = static_cast<int>(sizes.size());
  LUCID_CHECK(g.ndim <= kMaxDims, NotImplementedError, what, ": ", g.ndim,
              " dims that cannot be merged, more than the CUDA kernels' ", kMaxDims);
  for (int i = 0; i < g.ndim; ++i) {  // innermost first
    g.sizes[i] = sizes[g.ndim - 1 - i];
    for (int k = 0; k < g.nops; ++k) g.strides[i][k] = strides[g.ndim - 1 - i][k];
  }
  g.fits_32bit = g.numel <= std::numeric_limits<int32_t>::max();
  for (int k = 0; k < g.nops && g.fits_32bit; ++k) {
    int64_t span = 0;  // largest offset of operand k; overflow-safe while it stays < 2^31
    for (int i = 0; i < g.ndim && g.fits_32bit; ++i) {
      const int64_t s = g.strides[i][k];
      if (s < 0 || (s > 0 && (g.sizes[i] - 1) > (std::numeric_limits<int32_t>::max() - span) / s)) g.fits_32bit = false;
      else span += (g.sizes[i] - 1) * s;
    }
  }
}

// ops[0] is the output; ops[k] (k >= 1) an input broadcast to the output's shape, or null for a
// host scalar (passed to the kernel by value). `what` names the kernel in errors.
inline Geometry make_geometry(const Tensor* const* ops, int nops, const char* what) {
  LUCID_CHECK(nops >= 1 && nops <= kMaxOperands, Error, what, ": ", nops, " operands, at most ", kMaxOperands);
  Geometry g;
  g.nops = nops;
  const Shape& out_shape = ops[0]->shape();
  g.numel = numel_of(out_shape);
  if (g.numel == 0) return g;  // nothing to visit (an empty tensor's strides may not fit in bytes)
  const int nd = static_cast<int>(out_shape.size());
  // Per dim (outermost first) per operand byte strides, with broadcasting.
  DimStrides st(nd);
  for (int k = 0; k < nops; ++k) {
    const Tensor* t = ops[k];
    if (!t) {
      for (int d = 0; d < nd; ++d) st[d][k] = 0;
      continue;
    }
    const int64_t isz = static_cast<int64_t>(itemsize(t->dtype()));
    const int off = nd - static_cast<int>(t->ndim());
    LUCID_CHECK(off >= 0, Error, what, ": operand ", k, " has more dims than the output");
    for (int d = 0; d < nd; ++d) {
      const int td = d - off;
      if (td < 0 || t->shape()[td] == 1) { st[d][k] = 0; continue; }
      LUCID_CHECK(t->shape()[td] == out_shape[d], Error, what, ": operand ", k, " of shape ", shape_str(t->shape()),
                  " does not broadcast to ", shape_str(out_shape));
      st[d][k] = t->strides()[td] * isz;
    }
  }
  coalesce_into(g, out_shape, st, what);
  g.contiguous = g.ndim <= 1;
  if (g.ndim == 1)
    for (int k = 0; k < nops; ++k)
      if (ops[k] && g.strides[0][k] != static_cast<int64_t>(itemsize(ops[k]->dtype()))) g.contiguous = false;
  return g;
}

// The geometry of walking `shape` through N operands' element strides (`st[k]` has shape's
// rank; broadcast dims have stride 0, flipped ones a negative stride), for the data-movement
// kernels. contiguous: every operand is one run of stride 1 (a plain copy).
template <int N>
Geometry strided_geometry(const Shape& shape, const std::array<const Strides*, N>& st, const char* what) {
  static_assert(N >= 1 && N <= kMaxOperands, "strided_geometry: 1 to kMaxOperands operands");
  Geometry g;
  g.nops = N;
  g.numel = numel_of(shape);
  if (g.numel == 0) return g;
  DimStrides ds(shape.size());
  for (int k = 0; k < N; ++k) {
    LUCID_CHECK(st[k]->size() == shape.size(), Error, what, ": operand ", k, " has ", st[k]->size(), " strides for ",
                shape.size(), " dims");
    for (size_t d = 0; d < shape.size(); ++d) ds[d][k] = (*st[k])[d];
  }
  coalesce_into(g, shape, ds, what);
  g.contiguous = g.ndim == 0;
  if (g.ndim == 1) {
    g.contiguous = true;
    for (int k = 0; k < N; ++k) g.contiguous = g.contiguous && g.strides[0][k] == 1;
  }
  return g;
}

// Byte offsets of N operands at a linear index (row-major over the output's shape).
template <int N, class Index> struct OffsetCalculator {
  int ndim = 0;
  IntDivider<Index> sizes[kMaxDims];
  Index strides[kMaxDims][N];

  OffsetCalculator() = default;
  explicit OffsetCalculator(const Geometry& g) : ndim(g.ndim) {
    LUCID_CHECK(g.nops == N, Error, "OffsetCalculator: geometry of ", g.nops, " operands, expected ", N);
    for (int i = 0; i < g.ndim; ++i) {
      sizes[i] = IntDivider<Index>(static_cast<Index>(g.sizes[i]));
      for (int k = 0; k < N; ++k) strides[i][k] = static_cast<Index>(g.strides[i][k]);
    }
  }

  LUCID_HOST_DEVICE void get(Index linear, Index (&off)[N]) const {
LUCID_CUDA_UNROLL
    for (int k = 0; k < N; ++k) off[k] = 0;
LUCID_CUDA_UNROLL
    for (int i = 0; i < kMaxDims; ++i) {
      if (i == ndim) break;
      const Index q = sizes[i].div(linear);
      const Index r = linear - q * sizes[i].divisor;
LUCID_CUDA_UNROLL
      for (int k = 0; k < N; ++k) off[k] += r * strides[i][k];
      linear = q;
    }
  }
};

// Calls launch(oc, n) with oc the OffsetCalculator<N, Index> of g and n = g.numel as an Index:
// uint32_t when every offset fits 32 bits, else int64_t.
template <int N, class Launch>
void with_offset_calculator(const Geometry& g, const Launch& launch) {
  if (g.fits_32bit) launch(OffsetCalculator<N, uint32_t>(g), static_cast<uint32_t>(g.numel));
  else launch(OffsetCalculator<N, int64_t>(g), g.numel);
}

}  // namespace lucid::cuda
