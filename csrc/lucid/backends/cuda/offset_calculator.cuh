// Geometry of an elementwise CUDA kernel over up to kMaxOperands operands (operand 0 the output),
// in the manner of PyTorch's TensorIterator + OffsetCalculator:
//   - on the host, make_geometry broadcasts every input to the output's shape (a missing or
//     size-1 dim gets stride 0; a host scalar is stride 0 everywhere), drops size-1 dims and
//     coalesces dims that are contiguous for every operand, giving sizes and byte strides with
//     the innermost dim first; it also says whether the whole range is one contiguous run for
//     every tensor operand (the vectorised path) and whether every offset fits 32 bits;
//   - on the device, OffsetCalculator<N, Index> turns a linear index (row-major over the output's
//     shape) into each operand's byte offset, with Index uint32_t (fast division by the sizes,
//     IntDivider<uint32_t>) when every offset fits, else int64_t.
// The launch helper built on it is elementwise_launch.cuh. Host-side parts compile with the host
// compiler too (tests/cpp/cuda/test_cuda_offset_calculator.cpp checks them without a GPU).
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

// Sizes and byte strides of an elementwise iteration (innermost dim first), built on the host.
struct Geometry {
  int nops = 0;
  int ndim = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims][kMaxOperands] = {};  // bytes; 0 for broadcast dims and host scalars
  // Every tensor operand covers the range with its item size as the one stride (0 or 1 dims):
  // operand k's element i is at data_ptr + i * itemsize.
  bool contiguous = false;
  // Every operand's offsets fit 32 bits (non-negative strides, largest offset < 2^31) and
  // numel <= INT32_MAX: the uint32_t OffsetCalculator is exact.
  bool fits_32bit = false;
};

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
  std::vector<std::array<int64_t, kMaxOperands>> st(nd);
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
  // Drop size-1 dims; merge a dim into the one outside it when that is contiguous with it for
  // every operand (outer stride == inner stride * inner size).
  std::vector<int64_t> sizes;
  std::vector<std::array<int64_t, kMaxOperands>> strides;
  for (int d = 0; d < nd; ++d) {
    if (out_shape[d] == 1) continue;
    if (!sizes.empty()) {
      bool can = true;
      for (int k = 0; k < nops; ++k)
        if (strides.back()[k] != st[d][k] * out_shape[d]) { can = false; break; }
      if (can) {
        sizes.back() *= out_shape[d];
        strides.back() = st[d];
        continue;
      }
    }
    sizes.push_back(out_shape[d]);
    strides.push_back(st[d]);
  }
  g.ndim = static_cast<int>(sizes.size());
  LUCID_CHECK(g.ndim <= kMaxDims, NotImplementedError, what, ": ", g.ndim,
              " dims that cannot be merged, more than the CUDA kernels' ", kMaxDims);
  for (int i = 0; i < g.ndim; ++i) {  // innermost first
    g.sizes[i] = sizes[g.ndim - 1 - i];
    for (int k = 0; k < nops; ++k) g.strides[i][k] = strides[g.ndim - 1 - i][k];
  }
  g.contiguous = g.ndim <= 1;
  if (g.ndim == 1)
    for (int k = 0; k < nops; ++k)
      if (ops[k] && g.strides[0][k] != static_cast<int64_t>(itemsize(ops[k]->dtype()))) g.contiguous = false;
  g.fits_32bit = g.numel <= std::numeric_limits<int32_t>::max();
  for (int k = 0; k < nops && g.fits_32bit; ++k) {
    int64_t span = 0;  // largest byte offset of operand k; overflow-safe while it stays < 2^31
    for (int i = 0; i < g.ndim && g.fits_32bit; ++i) {
      const int64_t s = g.strides[i][k];
      if (s < 0 || (s > 0 && (g.sizes[i] - 1) > (std::numeric_limits<int32_t>::max() - span) / s)) g.fits_32bit = false;
      else span += (g.sizes[i] - 1) * s;
    }
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

}  // namespace lucid::cuda
