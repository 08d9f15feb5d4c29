// More elementwise math: tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, erfc, erfinv,
// atan2, lgamma, digamma and polygamma (torch.* names; the arc* aliases are bound to the same
// functions in Python). Each is a row of the functor table (ops/list/elementwise_functors.def) +
// the elementwise_op builder + a VJP written with ops, so eager, the fused interpreter and the
// compiled backward share them. Integer inputs promote to the default
// float (EwDType::Float), as in PyTorch. Kept apart from elementwise_unary.cpp to stay small.
#include "lucid/ops/elementwise.h"
#include "lucid/ops/elementwise_util.h"

namespace lucid {

static Tensor one() { return scalar_tensor(1.0); }

// Unary op whose VJP is grad * Deriv{}(x, out); Deriv is a captureless lambda's type (VJPs are
// plain function pointers).
template <OpId Id, class Deriv>
static OpDef unary(uint8_t save, Deriv) {
  OpDef d = elementwise_op<Id>();
  d.save = save;
  d.vjp = [](const VjpContext& c) {
    Tensor x = c.inputs.empty() ? Tensor() : c.inputs[0];
    Tensor o = c.outputs.empty() ? Tensor() : c.outputs[0];
    return TensorList{mul(c.grads[0], Deriv{}(x, o))};
  };
  return d;
}

LUCID_REGISTER_OP(Tan, "", (unary<OpId::Tan>(kSaveOutputs, [](const Tensor&, const Tensor& o) {
  return add(mul(o, o), one());  // 1 + tan^2
})));
LUCID_REGISTER_OP(Asin, "", (unary<OpId::Asin>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return rsqrt(sub(one(), mul(x, x)));
})));
LUCID_REGISTER_OP(Acos, "", (unary<OpId::Acos>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return neg(rsqrt(sub(one(), mul(x, x))));
})));
LUCID_REGISTER_OP(Atan, "", (unary<OpId::Atan>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return reciprocal(add(mul(x, x), one()));
})));
LUCID_REGISTER_OP(Sinh, "", (unary<OpId::Sinh>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return cosh(x);
})));
LUCID_REGISTER_OP(Cosh, "", (unary<OpId::Cosh>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return sinh(x);
})));
LUCID_REGISTER_OP(Asinh, "", (unary<OpId::Asinh>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return rsqrt(add(mul(x, x), one()));
})));
LUCID_REGISTER_OP(Acosh, "", (unary<OpId::Acosh>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return rsqrt(sub(mul(x, x), one()));
})));
LUCID_REGISTER_OP(Atanh, "", (unary<OpId::Atanh>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return reciprocal(sub(one(), mul(x, x)));
})));
LUCID_REGISTER_OP(Erfc, "", (unary<OpId::Erfc>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return mul(exp(neg(mul(x, x))), scalar_tensor(-1.1283791670955126));  // -2/sqrt(pi) exp(-x^2)
})));
LUCID_REGISTER_OP(Erfinv, "", (unary<OpId::Erfinv>(kSaveOutputs, [](const Tensor&, const Tensor& o) {
  return mul(exp(mul(o, o)), scalar_tensor(0.88622692545275801));  // sqrt(pi)/2 exp(erfinv(x)^2)
})));

LUCID_REGISTER_OP(Atan2, "", [] {
  OpDef d = elementwise_op<OpId::Atan2>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &a = c.inputs[0], &b = c.inputs[1];
    Tensor r2 = add(mul(a, a), mul(b, b));
    TensorList r(2);
    if (c.needs_grad[0]) r[0] = div(mul(g, b), r2);
    if (c.needs_grad[1]) r[1] = neg(div(mul(g, a), r2));
    return r;
  };
  return d;
}());

LUCID_REGISTER_OP(Lgamma, "", (unary<OpId::Lgamma>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return digamma(x);
})));
LUCID_REGISTER_OP(Digamma, "", (unary<OpId::Digamma>(kSaveInputs, [](const Tensor& x, const Tensor&) {
  return polygamma(1, x);
})));
LUCID_REGISTER_OP(Polygamma, "n:int", [] {
  OpDef d = elementwise_op<OpId::Polygamma>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    return TensorList{mul(c.grads[0], polygamma(c.attrs.i("n") + 1, c.inputs[0]))};
  };
  return d;
}());

Tensor tan(const Tensor& x) { return dispatch1(OpId::Tan, {x}); }
Tensor asin(const Tensor& x) { return dispatch1(OpId::Asin, {x}); }
Tensor acos(const Tensor& x) { return dispatch1(OpId::Acos, {x}); }
Tensor atan(const Tensor& x) { return dispatch1(OpId::Atan, {x}); }
Tensor sinh(const Tensor& x) { return dispatch1(OpId::Sinh, {x}); }
Tensor cosh(const Tensor& x) { return dispatch1(OpId::Cosh, {x}); }
Tensor asinh(const Tensor& x) { return dispatch1(OpId::Asinh, {x}); }
Tensor acosh(const Tensor& x) { return dispatch1(OpId::Acosh, {x}); }
Tensor atanh(const Tensor& x) { return dispatch1(OpId::Atanh, {x}); }
Tensor erfc(const Tensor& x) { return dispatch1(OpId::Erfc, {x}); }
Tensor erfinv(const Tensor& x) { return dispatch1(OpId::Erfinv, {x}); }
Tensor atan2(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Atan2, {a, b}); }
Tensor lgamma(const Tensor& x) { return dispatch1(OpId::Lgamma, {x}); }
Tensor digamma(const Tensor& x) { return dispatch1(OpId::Digamma, {x}); }
Tensor polygamma(int64_t n, const Tensor& x) { return dispatch1(OpId::Polygamma, {x}, {{"n", n}}); }

}  // namespace lucid
