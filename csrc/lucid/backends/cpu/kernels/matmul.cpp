// CPU kernels of the matrix-product ops (records in ops/linalg_ops.cpp): Matmul, Addmm, Linear
// and LinearFused, all through cpu::dnnl_matmul (oneDNN for float32/bfloat16, blocked loops for
// float64/integers). 1-D operands are viewed as matrices, the output as batch + [M, N], and
// Linear's weight as its transpose, so no operand is copied here.
#include <vector>

#include "lucid/backends/cpu/dnnl_matmul.h"
#include "lucid/backends/cpu/loops.h"
#include "lucid/backends/cpu/fused_epilogue.h"
#include "lucid/ops/linalg_geometry.h"

namespace lucid::cpu {

namespace {

// a as [..., M, K] and b as [..., K, N] (1-D operands get a unit dim), as views.
Tensor as_matrix_lhs(const Tensor& a) {
  if (a.ndim() >= 2) return a;
  return Tensor::make_view(a, {1, a.shape()[0]}, {a.shape()[0] * a.strides()[0], a.strides()[0]}, a.offset());
}
Tensor as_matrix_rhs(const Tensor& b) {
  if (b.ndim() >= 2) return b;
  return Tensor::make_view(b, {b.shape()[0], 1}, {b.strides()[0], 1}, b.offset());
}
Tensor out_view(const Tensor& out, const Shape& full) {
  return Tensor::make_view(out, full, contiguous_strides(full), out.offset());
}

void matmul_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  MatmulGeo g = matmul_geo(in[0], in[1]);
  dnnl_matmul(as_matrix_lhs(in[0]), as_matrix_rhs(in[1]), Tensor(), {}, out_view(out[0], g.full()));
}

void addmm_kernel(const TensorList& in, const TensorList& out, const Attrs& at) {
  double beta = at.f("beta"), alpha = at.f("alpha");
  MatmulEpilogue ep;
  ep.alpha = alpha;
  if (beta != 0.0) {
    copy_into(out[0], in[0]);
    ep.post_ops.push_back({MatmulPostOp::Sum, beta});
  }
  dnnl_matmul(in[1], in[2], Tensor(), ep, out[0]);
}

// x @ w^T + bias with the epilogue ep, into out (x's leading dims kept).
void linear_product(const Tensor& x, const Tensor& w, const Tensor& bias, const MatmulEpilogue& ep, const Tensor& out) {
  Tensor wt = Tensor::make_view(w, {w.shape()[1], w.shape()[0]}, {w.strides()[1], w.strides()[0]}, w.offset());
  Tensor x2 = as_matrix_lhs(x);
  Shape full = x2.shape();
  full.back() = w.shape()[0];
  dnnl_matmul(x2, wt, bias, ep, out_view(out, full));
}

void linear_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  linear_product(in[0], in[1], in[2], {}, out[0]);
}

void linear_fused_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  run_fused_epilogue(a, "linear_fused", in[3], out[0], [&](const std::vector<MatmulPostOp>& post) {
    MatmulEpilogue ep;
    ep.post_ops = post;
    linear_product(in[0], in[1], in[2], ep, out[0]);
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Matmul, CPU, matmul_kernel);
LUCID_REGISTER_KERNEL(Addmm, CPU, addmm_kernel);
LUCID_REGISTER_KERNEL(Linear, CPU, linear_kernel);
LUCID_REGISTER_KERNEL(LinearFused, CPU, linear_fused_kernel);

}  // namespace lucid::cpu
