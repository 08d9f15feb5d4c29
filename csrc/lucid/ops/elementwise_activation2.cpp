// More activation functions (torch.nn.functional names): selu, celu, mish, softsign, logsigmoid,
// tanhshrink, softshrink, hardshrink, threshold. One functor (scalar_functors.h) + builder each; VJPs
// are compositions of ops following PyTorch's backward formulas, so double backward works.
#include "lucid/ops/elementwise.h"
#include "lucid/ops/elementwise_attr.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid {

static Tensor sc(double v) { return scalar_tensor(v); }

#define EW_ACT(Name, Functor) elementwise_op<OpId::Name, sm::Functor, 1, EwDType::Same, EwDomain::Floating>()
#define EW_ACT_ATTR(Name, Functor, Domain) \
  elementwise_attr_op<OpId::Name, sm::Functor, 1, EwDType::Same, EwDomain::Domain>()

LUCID_REGISTER_OP(Selu, "", [] {
  OpDef d = EW_ACT(Selu, Selu);
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    return TensorList{where(gt(x, sc(0.0)), mul(g, sc(scale)), mul(g, mul(exp(x), sc(scale * alpha))))};
  };
  return d;
}());

LUCID_REGISTER_OP(Celu, "alpha:float", [] {
  OpDef d = EW_ACT_ATTR(Celu, Celu, Floating);
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    double alpha = c.attrs.f("alpha");
    return TensorList{where(gt(x, sc(0.0)), g, mul(g, exp(div(x, sc(alpha)))))};
  };
  return d;
}());

// d/dx x tanh(softplus(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)
LUCID_REGISTER_OP(Mish, "", [] {
  OpDef d = EW_ACT(Mish, Mish);
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    Tensor t = tanh(softplus(x, 1.0, 20.0));
    Tensor r = add(t, mul(mul(x, sigmoid(x)), sub(sc(1.0), mul(t, t))));
    return TensorList{mul(g, r)};
  };
  return d;
}());

LUCID_REGISTER_OP(Softsign, "", [] {
  OpDef d = EW_ACT(Softsign, Softsign);
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    Tensor den = add(abs(c.inputs[0]), sc(1.0));
    return TensorList{div(c.grads[0], mul(den, den))};
  };
  return d;
}());

LUCID_REGISTER_OP(LogSigmoid, "", [] {
  OpDef d = EW_ACT(LogSigmoid, LogSigmoid);
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{mul(c.grads[0], sigmoid(neg(c.inputs[0])))}; };
  return d;
}());

LUCID_REGISTER_OP(Tanhshrink, "", [] {
  OpDef d = EW_ACT(Tanhshrink, Tanhshrink);
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    Tensor t = tanh(c.inputs[0]);
    return TensorList{mul(c.grads[0], mul(t, t))};
  };
  return d;
}());

// softshrink / hardshrink: gradient where |x| > lambd.
static TensorList shrink_vjp(const VjpContext& c) {
  const Tensor& x = c.inputs[0];
  double l = c.attrs.f("lambd");
  return TensorList{where(logical_or(gt(x, sc(l)), lt(x, sc(-l))), c.grads[0], sc(0.0))};
}

LUCID_REGISTER_OP(Softshrink, "lambd:float", [] {
  OpDef d = EW_ACT_ATTR(Softshrink, Softshrink, Floating);
  d.save = kSaveInputs;
  d.vjp = shrink_vjp;
  return d;
}());

LUCID_REGISTER_OP(Hardshrink, "lambd:float", [] {
  OpDef d = EW_ACT_ATTR(Hardshrink, Hardshrink, Floating);
  d.save = kSaveInputs;
  d.vjp = shrink_vjp;
  return d;
}());

LUCID_REGISTER_OP(Threshold, "threshold:float, value:float", [] {
  OpDef d = EW_ACT_ATTR(Threshold, Threshold, Numeric);
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    return TensorList{where(le(c.inputs[0], sc(c.attrs.f("threshold"))), sc(0.0), c.grads[0])};  // as PyTorch: NaN passes
  };
  return d;
}());

Tensor selu(const Tensor& x) { return dispatch1(OpId::Selu, {x}); }
Tensor celu(const Tensor& x, double alpha) { return dispatch1(OpId::Celu, {x}, {{"alpha", alpha}}); }
Tensor mish(const Tensor& x) { return dispatch1(OpId::Mish, {x}); }
Tensor softsign(const Tensor& x) { return dispatch1(OpId::Softsign, {x}); }
Tensor logsigmoid(const Tensor& x) { return dispatch1(OpId::LogSigmoid, {x}); }
Tensor tanhshrink(const Tensor& x) { return dispatch1(OpId::Tanhshrink, {x}); }
Tensor softshrink(const Tensor& x, double lambd) { return dispatch1(OpId::Softshrink, {x}, {{"lambd", lambd}}); }
Tensor hardshrink(const Tensor& x, double lambd) { return dispatch1(OpId::Hardshrink, {x}, {{"lambd", lambd}}); }
Tensor threshold(const Tensor& x, double th, double value) {
  return dispatch1(OpId::Threshold, {x}, {{"threshold", th}, {"value", value}});
}

}  // namespace lucid
