// Matrix-multiply kernel entry point shared by every matmul-like op (Matmul, Addmm, Linear,
// LinearFused):
//
//   dnnl_matmul(a, b, bias, epilogue, out):
//     out[..., m, n] = post_ops( alpha * sum_k a[..., m, k] * b[..., k, n] + bias[n] )
//
// a: [..., M, K], b: [..., K, N] with any strides (transposed views are consumed without a copy)
// and batch dims broadcast against each other; out: contiguous [batch..., M, N]. float32 and
// bfloat16 run on oneDNN matmul primitives (cached per shape/strides/dtype/epilogue in an LRU);
// float16 tries oneDNN and otherwise computes in float32; float64 and integers use a blocked C++
// loop. Products of at most 128 rows with a 2-D b read a cached copy of b in the primitive's
// preferred layout once b has been seen twice unchanged (packed_weights.h). Post-ops run in
// order: Sum adds scale * (the value `out` held before the call: the caller
// pre-fills it with the residual), Gelu/GeluTanh apply the activation. There is no ReLU post-op:
// oneDNN's maps NaN to 0 (see backends/cpu/fused_epilogue.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "lucid/core/tensor.h"

namespace lucid::cpu {

struct MatmulPostOp {
  enum Kind : uint8_t { Sum, Gelu, GeluTanh };
  Kind kind = Sum;
  double scale = 1.0;  // Sum only: out = value + scale * out_before
};

struct MatmulEpilogue {
  double alpha = 1.0;  // scales the product; must be 1 when a bias is given
  std::vector<MatmulPostOp> post_ops;
  bool has_sum() const {
    for (auto& p : post_ops) if (p.kind == MatmulPostOp::Sum) return true;
    return false;
  }
};

// Applies post-ops to one value in plain C++ (the loops' path; oneDNN applies them itself).
// `prev` is the element's value before the call (the residual for Sum).
template <class Acc>
Acc apply_post_ops(Acc v, const std::vector<MatmulPostOp>& ops, Acc prev) {
  for (auto& p : ops) {
    switch (p.kind) {
      case MatmulPostOp::Sum: v = v + static_cast<Acc>(p.scale) * prev; break;
      case MatmulPostOp::Gelu: {
        double x = static_cast<double>(v);
        v = static_cast<Acc>(0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440)));
        break;
      }
      case MatmulPostOp::GeluTanh: {
        double x = static_cast<double>(v);
        v = static_cast<Acc>(0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x))));
        break;
      }
    }
  }
  return v;
}

// a and b of out's dtype, or bfloat16 into a float32 out (float32 accumulation, no rounding of
// the product to bfloat16); bias: undefined, or 1-D [N] of out's dtype.
void dnnl_matmul(const Tensor& a, const Tensor& b, const Tensor& bias, const MatmulEpilogue& ep, const Tensor& out);

// Number of primitives in the matmul cache (tests and benchmarks read it).
size_t matmul_cache_size();

}  // namespace lucid::cpu
