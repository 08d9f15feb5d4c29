// Matrix-product ops: Matmul (torch.matmul semantics; mm, bmm, mv and dot are validated wrappers
// of it), Addmm, Linear and LinearFused: records and C++ API. The CPU kernels
// (backends/cpu/kernels/matmul.cpp) go through cpu::dnnl_matmul; VJPs are written with these
// same ops so they serve eager autograd, double backward and traced backward alike.
#include "lucid/ops/core.h"
#include "lucid/ops/fused_activation.h"
#include "lucid/ops/linalg.h"
#include "lucid/ops/linalg_geometry.h"
#include "lucid/ops/movement_util.h"

namespace lucid {

namespace {

void check_operand_dtypes(const char* op, const Tensor& a, const char* an, const Tensor& b, const char* bn) {
  LUCID_CHECK(a.dtype() == b.dtype(), TypeError, op, ": argument '", bn, "' expected dtype ", dtype_name(a.dtype()),
              " (the dtype of '", an, "'), got ", dtype_name(b.dtype()));
  LUCID_CHECK(a.dtype() != DType::Bool, TypeError, op, ": argument '", an, "' has dtype bool, which is not supported");
}

}  // namespace

MatmulGeo matmul_geo(const Tensor& a, const Tensor& b, const char* op) {
  LUCID_CHECK(a.ndim() >= 1 && b.ndim() >= 1, ValueError, op, ": both arguments need at least 1 dim, got ", a.ndim(),
              "-D and ", b.ndim(), "-D tensors");
  MatmulGeo g;
  g.K = a.shape().back();
  int64_t kb = b.ndim() == 1 ? b.shape()[0] : b.shape()[b.ndim() - 2];
  LUCID_CHECK(g.K == kb, ValueError, op, ": argument 'other' expected size ", g.K, " at dim ",
              b.ndim() == 1 ? 0 : -2, " (input.shape[-1]), got ", kb, " (shapes ", shape_str(a.shape()), " and ",
              shape_str(b.shape()), " cannot be multiplied)");
  g.M = a.ndim() >= 2 ? a.shape()[a.ndim() - 2] : 1;
  g.N = b.ndim() >= 2 ? b.shape().back() : 1;
  Shape ab = a.ndim() > 2 ? Shape(a.shape().begin(), a.shape().end() - 2) : Shape{};
  Shape bb = b.ndim() > 2 ? Shape(b.shape().begin(), b.shape().end() - 2) : Shape{};
  g.batch = broadcast_shapes(ab, bb, op);
  g.out = g.batch;
  if (a.ndim() >= 2) g.out.push_back(g.M);
  if (b.ndim() >= 2) g.out.push_back(g.N);
  return g;
}

Tensor mT(const Tensor& t) { return transpose(t, -1, -2); }

// ---- Matmul -------------------------------------------------------------------------------
LUCID_REGISTER_OP(Matmul, "", [] {
  OpDef d;
  d.num_inputs = 2;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs&) {
    check_operand_dtypes("matmul", in[0], "input", in[1], "other");
    MatmulGeo g = matmul_geo(in[0], in[1]);
    return std::vector<TensorMeta>{{g.out, in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    const Tensor &a = c.inputs[0], &b = c.inputs[1];
    MatmulGeo geo = matmul_geo(a, b);
    Tensor a2 = a.ndim() == 1 ? reshape(a, {1, geo.K}) : a;
    Tensor b2 = b.ndim() == 1 ? reshape(b, {geo.K, 1}) : b;
    Tensor g2 = reshape(c.grads[0], geo.full());
    TensorList r(2);
    if (c.needs_grad[0]) r[0] = reshape(sum_to(matmul(g2, mT(b2)), a2.shape()), a.shape());
    if (c.needs_grad[1]) {
      Tensor gb;
      if (b2.ndim() == 2 && a2.ndim() > 2)  // fold the batch into one GEMM
        gb = matmul(mT(reshape(a2, {-1, geo.K})), reshape(g2, {-1, geo.N}));
      else
        gb = sum_to(matmul(mT(a2), g2), b2.shape());
      r[1] = reshape(gb, b.shape());
    }
    return r;
  };
  return d;
}());

Tensor matmul(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Matmul, {a, b}); }

Tensor mm(const Tensor& a, const Tensor& b) {
  LUCID_CHECK(a.ndim() == 2, ValueError, "mm: argument 'input' expected a 2-D tensor, got ", a.ndim(), "-D");
  LUCID_CHECK(b.ndim() == 2, ValueError, "mm: argument 'mat2' expected a 2-D tensor, got ", b.ndim(), "-D");
  return matmul(a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  LUCID_CHECK(a.ndim() == 3, ValueError, "bmm: argument 'input' expected a 3-D tensor, got ", a.ndim(), "-D");
  LUCID_CHECK(b.ndim() == 3, ValueError, "bmm: argument 'mat2' expected a 3-D tensor, got ", b.ndim(), "-D");
  LUCID_CHECK(a.shape()[0] == b.shape()[0], ValueError, "bmm: argument 'mat2' expected batch size ", a.shape()[0],
              ", got ", b.shape()[0]);
  return matmul(a, b);
}

Tensor mv(const Tensor& a, const Tensor& v) {
  LUCID_CHECK(a.ndim() == 2, ValueError, "mv: argument 'input' expected a 2-D tensor, got ", a.ndim(), "-D");
  LUCID_CHECK(v.ndim() == 1, ValueError, "mv: argument 'vec' expected a 1-D tensor, got ", v.ndim(), "-D");
  return matmul(a, v);
}

Tensor dot(const Tensor& a, const Tensor& b) {
  LUCID_CHECK(a.ndim() == 1 && b.ndim() == 1, ValueError, "dot: expected 1-D tensors, got ", a.ndim(), "-D and ",
              b.ndim(), "-D");
  return matmul(a, b);
}

// ---- Addmm --------------------------------------------------------------------------------
LUCID_REGISTER_OP(Addmm, "beta:float, alpha:float", [] {
  OpDef d;
  d.num_inputs = 3;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor &bias = in[0], &a = in[1], &b = in[2];
    LUCID_CHECK(a.ndim() == 2, ValueError, "addmm: argument 'mat1' expected a 2-D tensor, got ", a.ndim(), "-D");
    LUCID_CHECK(b.ndim() == 2, ValueError, "addmm: argument 'mat2' expected a 2-D tensor, got ", b.ndim(), "-D");
    check_operand_dtypes("addmm", a, "mat1", b, "mat2");
    check_operand_dtypes("addmm", a, "mat1", bias, "input");
    MatmulGeo g = matmul_geo(a, b, "addmm");
    LUCID_CHECK(broadcasts_to(bias.shape(), g.out), ValueError, "addmm: argument 'input' expected a shape broadcastable to ",
                shape_str(g.out), ", got ", shape_str(bias.shape()));
    return std::vector<TensorMeta>{{g.out, a.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    double beta = c.attrs.f("beta"), alpha = c.attrs.f("alpha");
    const Tensor& g = c.grads[0];
    TensorList r(3);
    if (c.needs_grad[0]) r[0] = beta == 1.0 ? g : mul_scalar(g, beta);
    if (c.needs_grad[1]) { r[1] = matmul(g, mT(c.inputs[2])); if (alpha != 1.0) r[1] = mul_scalar(r[1], alpha); }
    if (c.needs_grad[2]) { r[2] = matmul(mT(c.inputs[1]), g); if (alpha != 1.0) r[2] = mul_scalar(r[2], alpha); }
    return r;
  };
  return d;
}());

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, double beta, double alpha) {
  return dispatch1(OpId::Addmm, {bias, a, b}, {{"beta", beta}, {"alpha", alpha}});
}

// ---- Linear / LinearFused -----------------------------------------------------------------
namespace {

Shape linear_infer(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias) {
  LUCID_CHECK(x.ndim() >= 1, ValueError, op, ": argument 'input' expected at least 1 dim, got a 0-D tensor");
  LUCID_CHECK(w.ndim() == 2, ValueError, op, ": argument 'weight' expected a 2-D tensor [out_features, in_features], got ",
              w.ndim(), "-D ", shape_str(w.shape()));
  check_operand_dtypes(op, x, "input", w, "weight");
  LUCID_CHECK(x.shape().back() == w.shape()[1], ValueError, op, ": argument 'input' expected in_features = ",
              w.shape()[1], " (weight.shape[1]) in its last dim, got ", x.shape().back(), " (input shape ",
              shape_str(x.shape()), ", weight shape ", shape_str(w.shape()), ")");
  if (bias.defined()) {
    check_operand_dtypes(op, x, "input", bias, "bias");
    LUCID_CHECK(bias.ndim() == 1 && bias.shape()[0] == w.shape()[0], ValueError, op, ": argument 'bias' expected shape [",
                w.shape()[0], "], got ", shape_str(bias.shape()));
  }
  Shape out(x.shape().begin(), x.shape().end() - 1);
  out.push_back(w.shape()[0]);
  return out;
}

}  // namespace

LUCID_REGISTER_OP(Linear, "", [] {
  OpDef d;
  d.num_inputs = 3;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs&) {
    return std::vector<TensorMeta>{{linear_infer("linear", in[0], in[1], in[2]), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    const Tensor &x = c.inputs[0], &w = c.inputs[1];
    const Tensor& g = c.grads[0];
    int64_t in_f = w.shape()[1], out_f = w.shape()[0];
    TensorList r(3);
    if (c.needs_grad[0]) r[0] = matmul(g, w);
    if (c.needs_grad[1]) {
      int64_t rows = 1;  // explicit, not -1: a zero-width layer (in_f or out_f == 0) leaves -1 undefined
      for (int64_t i = 0; i + 1 < x.ndim(); ++i) rows *= x.shape()[i];
      r[1] = matmul(mT(reshape(g, {rows, out_f})), reshape(x, {rows, in_f}));
    }
    if (c.needs_grad[2]) {
      IntList dims;
      for (int64_t i = 0; i + 1 < g.ndim(); ++i) dims.push_back(i);
      r[2] = dims.empty() ? g : sum(g, dims);
    }
    return r;
  };
  return d;
}());

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  return dispatch1(OpId::Linear, {x, w, bias});
}

LUCID_REGISTER_OP(LinearFused, "activation:str, residual_first:bool?", [] {
  OpDef d;
  d.num_inputs = 4;
  d.differentiable = false;  // emitted by the compiler after autodiff; eager code uses Linear
  d.infer = [](const TensorList& in, const Attrs& a) {
    Shape out = linear_infer("linear_fused", in[0], in[1], in[2]);
    fused_activation(a, "linear_fused");  // validates the name
    if (in[3].defined()) {
      check_operand_dtypes("linear_fused", in[0], "input", in[3], "residual");
      LUCID_CHECK(broadcasts_to(in[3].shape(), out), ValueError, "linear_fused: argument 'residual' expected a shape broadcastable to ",
                  shape_str(out), ", got ", shape_str(in[3].shape()));
    }
    return std::vector<TensorMeta>{{out, in[0].dtype()}};
  };
  return d;
}());

Tensor linear_fused(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual,
                    const std::string& activation, bool residual_first) {
  return dispatch1(OpId::LinearFused, {x, w, bias, residual},
                   {{"activation", activation}, {"residual_first", residual_first}});
}

}  // namespace lucid
