// Strided elementwise iteration for CPU kernels. Operand 0 is the output; inputs are viewed at
// the output's shape (broadcast dims get stride 0). Dims are coalesced, the range is split
// across threads above kParallelGrain, and the inner loop sees (pointers, byte strides, n), so a
// contiguous inner loop can be specialised and vectorised.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "lucid/core/parallel.h"
#include "lucid/core/tensor.h"

namespace lucid::cpu {

constexpr int kMaxOperands = 6;

struct StridedIter {
  int nops = 0;
  int ndim = 0;
  std::vector<int64_t> shape;                                  // innermost last
  std::vector<std::array<int64_t, kMaxOperands>> strides;      // bytes, per dim per operand
  std::array<char*, kMaxOperands> base{};
  int64_t numel = 1;

  // ops[0] is the output; all others are broadcast to its shape.
  StridedIter(const Tensor* const* ops, int n);
  StridedIter(std::initializer_list<const Tensor*> ops) : StridedIter(ops.begin(), static_cast<int>(ops.size())) {}

  bool inner_contiguous(int op, int64_t elem) const {
    return ndim == 0 || strides[ndim - 1][op] == elem;
  }

  // f(char** ptrs, const int64_t* inner_strides, int64_t n) over each inner row.
  template <class F>
  void for_each(const F& f, int64_t grain = kParallelGrain) const {
    if (numel == 0) return;
    if (ndim == 0) {
      std::array<char*, kMaxOperands> p = base;
      std::array<int64_t, kMaxOperands> s{};
      f(p.data(), s.data(), 1);
      return;
    }
    int64_t inner = shape[ndim - 1];
    int64_t rows = numel / inner;
    int64_t row_grain = std::max<int64_t>(1, grain / std::max<int64_t>(inner, 1));
    if (rows == 1) {
      // One long row: split it.
      parallel_for(0, inner, grain, [&](int64_t b, int64_t e) {
        std::array<char*, kMaxOperands> p;
        for (int k = 0; k < nops; ++k) p[k] = base[k] + b * strides[ndim - 1][k];
        f(p.data(), strides[ndim - 1].data(), e - b);
      });
      return;
    }
    parallel_for(0, rows, row_grain, [&](int64_t rb, int64_t re) {
      std::vector<int64_t> idx(ndim > 1 ? ndim - 1 : 1, 0);
      int64_t r = rb;
      for (int d = ndim - 2; d >= 0; --d) { idx[d] = r % shape[d]; r /= shape[d]; }
      for (int64_t row = rb; row < re; ++row) {
        std::array<char*, kMaxOperands> p;
        for (int k = 0; k < nops; ++k) {
          char* q = base[k];
          for (int d = 0; d < ndim - 1; ++d) q += idx[d] * strides[d][k];
          p[k] = q;
        }
        f(p.data(), strides[ndim - 1].data(), inner);
        for (int d = ndim - 2; d >= 0; --d) {
          if (++idx[d] < shape[d]) break;
          idx[d] = 0;
        }
      }
    });
  }
};

// Copy src into dst (same shape after broadcasting src), converting dtype.
void copy_into(const Tensor& dst, const Tensor& src);
// `x` cast to `dt` on the CPU, without dispatch (no copy when it already has that dtype; a copy
// is contiguous).
inline Tensor as_dtype(const Tensor& x, DType dt) {
  if (x.dtype() == dt) return x;
  Tensor t = Tensor::empty(x.shape(), dt);
  copy_into(t, x);
  return t;
}

}  // namespace lucid::cpu
