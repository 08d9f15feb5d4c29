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

void matmul_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  MatmulGeo g = matmul_geo(in[0], in[1]);
  dnnl_matmul(matmul_lhs_view(in[0]), matmul_rhs_view(in[1]), Tensor(), {}, matmul_out_view(out[0], g.full()));
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
  Tensor wt = linear_weight_view(w);
  Tensor x2 = matmul_lhs_view(x);
  Shape full = x2.shape();
  full.back() = w.shape()[0];
  dnnl_matmul(x2, wt, bias, ep, matmul_out_view(out, full));
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
