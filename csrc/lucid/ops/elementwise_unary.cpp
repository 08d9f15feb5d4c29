// Unary elementwise math ops: abs, exp, log, log2, log10, log1p, expm1, sqrt, rsqrt, reciprocal, square, sin,
// cos, tanh, sigmoid, erf, sign, floor, ceil, round, trunc, isnan, isinf, logical_not,
// bitwise_not. Each is a row of the functor table (ops/list/elementwise_functors.def) + the
// elementwise_op builder + a VJP written with ops. Transcendental ops take floating inputs only; integer inputs promote to the default
// float (EwDType::Float), as in PyTorch.
#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/elementwise_util.h"

namespace lucid {

static Tensor sc(double v) { return scalar_tensor(v); }

// Ops whose derivative is zero almost everywhere (sign, floor, ...): PyTorch returns zeros.
static TensorList zero_grad(const VjpContext& c) { return TensorList{zeros_like(c.grads[0])}; }

LUCID_REGISTER_OP(Abs, "", [] {
  OpDef d = elementwise_op<OpId::Abs>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{mul(c.grads[0], sign(c.inputs[0]))}; };
  return d;
}());

LUCID_REGISTER_OP(Exp, "", [] {
  OpDef d = elementwise_op<OpId::Exp>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) { return TensorList{mul(c.grads[0], c.outputs[0])}; };
  return d;
}());

LUCID_REGISTER_OP(Log, "", [] {
  OpDef d = elementwise_op<OpId::Log>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{div(c.grads[0], c.inputs[0])}; };
  return d;
}());

// d/dx log_b(x) = 1 / (x ln b)
LUCID_REGISTER_OP(Log2, "", [] {
  OpDef d = elementwise_op<OpId::Log2>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{div(c.grads[0], mul(c.inputs[0], sc(0.6931471805599453)))}; };
  return d;
}());

LUCID_REGISTER_OP(Log10, "", [] {
  OpDef d = elementwise_op<OpId::Log10>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{div(c.grads[0], mul(c.inputs[0], sc(2.302585092994046)))}; };
  return d;
}());

LUCID_REGISTER_OP(Log1p, "", [] {
  OpDef d = elementwise_op<OpId::Log1p>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{div(c.grads[0], add(c.inputs[0], sc(1.0)))}; };
  return d;
}());

LUCID_REGISTER_OP(Expm1, "", [] {
  OpDef d = elementwise_op<OpId::Expm1>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) { return TensorList{mul(c.grads[0], add(c.outputs[0], sc(1.0)))}; };
  return d;
}());

LUCID_REGISTER_OP(Sqrt, "", [] {
  OpDef d = elementwise_op<OpId::Sqrt>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) { return TensorList{div(c.grads[0], mul(c.outputs[0], sc(2.0)))}; };
  return d;
}());

LUCID_REGISTER_OP(Rsqrt, "", [] {
  OpDef d = elementwise_op<OpId::Rsqrt>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& o = c.outputs[0];
    return TensorList{mul(c.grads[0], mul(mul(o, mul(o, o)), sc(-0.5)))};
  };
  return d;
}());

LUCID_REGISTER_OP(Reciprocal, "", [] {
  OpDef d = elementwise_op<OpId::Reciprocal>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& o = c.outputs[0];
    return TensorList{neg(mul(c.grads[0], mul(o, o)))};
  };
  return d;
}());

LUCID_REGISTER_OP(Square, "", [] {
  OpDef d = elementwise_op<OpId::Square>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{mul(c.grads[0], mul(c.inputs[0], sc(2.0)))}; };
  return d;
}());

LUCID_REGISTER_OP(Sin, "", [] {
  OpDef d = elementwise_op<OpId::Sin>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{mul(c.grads[0], cos(c.inputs[0]))}; };
  return d;
}());

LUCID_REGISTER_OP(Cos, "", [] {
  OpDef d = elementwise_op<OpId::Cos>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{neg(mul(c.grads[0], sin(c.inputs[0])))}; };
  return d;
}());

LUCID_REGISTER_OP(Tanh, "", [] {
  OpDef d = elementwise_op<OpId::Tanh>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& o = c.outputs[0];
    // Fused one-pass backward unless a higher-order graph is being built (create_graph).
    if (!GradMode::is_enabled()) return TensorList{dispatch1(OpId::TanhBackward, {c.grads[0], o})};
    return TensorList{mul(c.grads[0], sub(sc(1.0), mul(o, o)))};
  };
  return d;
}());

LUCID_REGISTER_OP(Sigmoid, "", [] {
  OpDef d = elementwise_op<OpId::Sigmoid>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& o = c.outputs[0];
    if (!GradMode::is_enabled()) return TensorList{dispatch1(OpId::SigmoidBackward, {c.grads[0], o})};
    return TensorList{mul(c.grads[0], mul(o, sub(sc(1.0), o)))};
  };
  return d;
}());

LUCID_REGISTER_OP(Erf, "", [] {
  OpDef d = elementwise_op<OpId::Erf>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& x = c.inputs[0];
    // d/dx erf(x) = 2/sqrt(pi) * exp(-x^2)
    return TensorList{mul(c.grads[0], mul(exp(neg(mul(x, x))), sc(1.1283791670955126)))};
  };
  return d;
}());

LUCID_REGISTER_OP(Sign, "", [] {
  OpDef d = elementwise_op<OpId::Sign>();
  d.vjp = zero_grad;
  return d;
}());

LUCID_REGISTER_OP(Floor, "", [] {
  OpDef d = elementwise_op<OpId::Floor>();
  d.vjp = zero_grad;
  return d;
}());

LUCID_REGISTER_OP(Ceil, "", [] {
  OpDef d = elementwise_op<OpId::Ceil>();
  d.vjp = zero_grad;
  return d;
}());

LUCID_REGISTER_OP(Round, "", [] {
  OpDef d = elementwise_op<OpId::Round>();
  d.vjp = zero_grad;
  return d;
}());

LUCID_REGISTER_OP(Trunc, "", [] {
  OpDef d = elementwise_op<OpId::Trunc>();
  d.vjp = zero_grad;
  return d;
}());

LUCID_REGISTER_OP(IsNan, "", [] {
  OpDef d = elementwise_op<OpId::IsNan>();
  d.differentiable = false;
  return d;
}());

LUCID_REGISTER_OP(IsInf, "", [] {
  OpDef d = elementwise_op<OpId::IsInf>();
  d.differentiable = false;
  return d;
}());

LUCID_REGISTER_OP(LogicalNot, "", [] {
  OpDef d = elementwise_op<OpId::LogicalNot>();
  d.differentiable = false;
  return d;
}());

LUCID_REGISTER_OP(BitwiseNot, "", [] {
  OpDef d = elementwise_op<OpId::BitwiseNot>();
  d.differentiable = false;
  return d;
}());

Tensor abs(const Tensor& x) { return dispatch1(OpId::Abs, {x}); }
Tensor exp(const Tensor& x) { return dispatch1(OpId::Exp, {x}); }
Tensor log(const Tensor& x) { return dispatch1(OpId::Log, {x}); }
Tensor log1p(const Tensor& x) { return dispatch1(OpId::Log1p, {x}); }
Tensor log2(const Tensor& x) { return dispatch1(OpId::Log2, {x}); }
Tensor log10(const Tensor& x) { return dispatch1(OpId::Log10, {x}); }
Tensor expm1(const Tensor& x) { return dispatch1(OpId::Expm1, {x}); }
Tensor sqrt(const Tensor& x) { return dispatch1(OpId::Sqrt, {x}); }
Tensor rsqrt(const Tensor& x) { return dispatch1(OpId::Rsqrt, {x}); }
Tensor reciprocal(const Tensor& x) { return dispatch1(OpId::Reciprocal, {x}); }
Tensor square(const Tensor& x) { return dispatch1(OpId::Square, {x}); }
Tensor sin(const Tensor& x) { return dispatch1(OpId::Sin, {x}); }
Tensor cos(const Tensor& x) { return dispatch1(OpId::Cos, {x}); }
Tensor tanh(const Tensor& x) { return dispatch1(OpId::Tanh, {x}); }
Tensor sigmoid(const Tensor& x) { return dispatch1(OpId::Sigmoid, {x}); }
Tensor erf(const Tensor& x) { return dispatch1(OpId::Erf, {x}); }
Tensor sign(const Tensor& x) { return dispatch1(OpId::Sign, {x}); }
Tensor floor(const Tensor& x) { return dispatch1(OpId::Floor, {x}); }
Tensor ceil(const Tensor& x) { return dispatch1(OpId::Ceil, {x}); }
Tensor round(const Tensor& x) { return dispatch1(OpId::Round, {x}); }
Tensor trunc(const Tensor& x) { return dispatch1(OpId::Trunc, {x}); }
Tensor isnan(const Tensor& x) { return dispatch1(OpId::IsNan, {x}); }
Tensor isinf(const Tensor& x) { return dispatch1(OpId::IsInf, {x}); }
Tensor logical_not(const Tensor& x) { return dispatch1(OpId::LogicalNot, {x}); }
Tensor bitwise_not(const Tensor& x) { return dispatch1(OpId::BitwiseNot, {x}); }

}  // namespace lucid
