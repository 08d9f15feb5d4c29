// Activation functions (torch.nn.functional names): relu, relu6, leaky_relu, elu, gelu, silu,
// hardswish, hardsigmoid, hardtanh, softplus. Parameters (slope, alpha, approximate, bounds,
// beta/threshold) are attrs. VJPs are written with ops and follow PyTorch's backward formulas
// (including the value at the kinks). Relu, Gelu, Silu, Sigmoid and Tanh have fused one-pass
// backward ops (ReluBackward...); their VJPs use them unless a higher-order graph is being built
// (grad mode on during backward means create_graph=True), where the op compositions are used
// so that double backward works.
#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/elementwise_attr.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid {

static Tensor sc(double v) { return scalar_tensor(v); }

LUCID_REGISTER_OP(Relu, "", [] {
  OpDef d = elementwise_op<OpId::Relu, sm::Relu, 1, EwDType::Same, EwDomain::Numeric>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    if (!GradMode::is_enabled()) return TensorList{dispatch1(OpId::ReluBackward, {c.grads[0], c.outputs[0]})};
    return TensorList{where(le(c.outputs[0], sc(0.0)), sc(0.0), c.grads[0])};  // as ReluBackward
  };
  return d;
}());

// relu6 is hardtanh(x, 0, 6): gradient where 0 < x < 6.
LUCID_REGISTER_OP(Relu6, "", [] {
  OpDef d = elementwise_op<OpId::Relu6, sm::Relu6, 1, EwDType::Same, EwDomain::Numeric>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& x = c.inputs[0];
    return TensorList{where(logical_and(gt(x, sc(0.0)), lt(x, sc(6.0))), c.grads[0], sc(0.0))};
  };
  return d;
}());

LUCID_REGISTER_OP(LeakyRelu, "negative_slope:float", [] {
  OpDef d = elementwise_attr_op<OpId::LeakyRelu, sm::LeakyRelu, 1, EwDType::Same, EwDomain::Floating>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    return TensorList{where(gt(c.inputs[0], sc(0.0)), g, mul(g, sc(c.attrs.f("negative_slope"))))};
  };
  return d;
}());

LUCID_REGISTER_OP(Elu, "alpha:float", [] {
  OpDef d = elementwise_attr_op<OpId::Elu, sm::Elu, 1, EwDType::Same, EwDomain::Floating>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    Tensor neg_part = mul(g, mul(exp(x), sc(c.attrs.f("alpha"))));
    return TensorList{where(gt(x, sc(0.0)), g, neg_part)};
  };
  return d;
}());

LUCID_REGISTER_OP(Gelu, "approximate:str", [] {
  OpDef d = elementwise_attr_op<OpId::Gelu, sm::Gelu, 1, EwDType::Same, EwDomain::Floating>();
  d.infer = [](const TensorList& in, const Attrs& a) {
    const std::string& ap = a.s("approximate");
    LUCID_CHECK(ap == "none" || ap == "tanh", ValueError, "gelu: argument 'approximate' expected 'none' or 'tanh', got '",
                ap, "'");
    LUCID_CHECK(is_floating(in[0].dtype()), TypeError, "gelu: not implemented for dtype ", dtype_name(in[0].dtype()));
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    if (!GradMode::is_enabled()) return TensorList{dispatch1(OpId::GeluBackward, {g, x}, c.attrs)};
    if (c.attrs.s("approximate") == "tanh") {
      const double kBeta = 0.7978845608028654, kKappa = 0.044715;
      Tensor x2 = mul(x, x);
      Tensor inner = mul(add(x, mul(mul(x2, x), sc(kKappa))), sc(kBeta));
      Tensor t = tanh(inner);
      Tensor left_d = mul(add(t, sc(1.0)), sc(0.5));
      Tensor right_d = mul(sub(sc(1.0), mul(t, t)), mul(add(mul(x2, sc(3.0 * kKappa)), sc(1.0)), sc(kBeta)));
      return TensorList{mul(g, add(left_d, mul(mul(x, sc(0.5)), right_d)))};
    }
    // Phi(x) + x * phi(x)
    Tensor cdf = mul(add(erf(mul(x, sc(0.7071067811865476))), sc(1.0)), sc(0.5));
    Tensor pdf = mul(exp(mul(mul(x, x), sc(-0.5))), sc(0.3989422804014327));
    return TensorList{mul(g, add(cdf, mul(x, pdf)))};
  };
  return d;
}());

LUCID_REGISTER_OP(Silu, "", [] {
  OpDef d = elementwise_op<OpId::Silu, sm::Silu, 1, EwDType::Same, EwDomain::Floating>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& x = c.inputs[0];
    if (!GradMode::is_enabled()) return TensorList{dispatch1(OpId::SiluBackward, {c.grads[0], x})};
    Tensor s = sigmoid(x);
    return TensorList{mul(c.grads[0], mul(s, add(mul(x, sub(sc(1.0), s)), sc(1.0))))};
  };
  return d;
}());

LUCID_REGISTER_OP(Hardswish, "", [] {
  OpDef d = elementwise_op<OpId::Hardswish, sm::Hardswish, 1, EwDType::Same, EwDomain::Floating>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    Tensor mid = mul(g, add(div(x, sc(3.0)), sc(0.5)));
    return TensorList{where(lt(x, sc(-3.0)), sc(0.0), where(le(x, sc(3.0)), mid, g))};
  };
  return d;
}());

LUCID_REGISTER_OP(Hardsigmoid, "", [] {
  OpDef d = elementwise_op<OpId::Hardsigmoid, sm::Hardsigmoid, 1, EwDType::Same, EwDomain::Floating>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    return TensorList{where(logical_and(gt(x, sc(-3.0)), lt(x, sc(3.0))), div(g, sc(6.0)), sc(0.0))};
  };
  return d;
}());

LUCID_REGISTER_OP(Hardtanh, "min_val:float, max_val:float", [] {
  OpDef d = elementwise_attr_op<OpId::Hardtanh, sm::Hardtanh, 1, EwDType::Same, EwDomain::Numeric>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& x = c.inputs[0];
    Tensor inside = logical_and(gt(x, sc(c.attrs.f("min_val"))), lt(x, sc(c.attrs.f("max_val"))));
    return TensorList{where(inside, c.grads[0], sc(0.0))};
  };
  return d;
}());

LUCID_REGISTER_OP(Softplus, "beta:float, threshold:float", [] {
  OpDef d = elementwise_attr_op<OpId::Softplus, sm::Softplus, 1, EwDType::Same, EwDomain::Floating>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    Tensor bx = mul(c.inputs[0], sc(c.attrs.f("beta")));
    return TensorList{where(gt(bx, sc(c.attrs.f("threshold"))), g, mul(g, sigmoid(bx)))};
  };
  return d;
}());

// ---- fused backwards (non-differentiable: only used when no higher-order graph is built) ----
#define EW_BACKWARD(Name)                                                                       \
  LUCID_REGISTER_OP(Name, "", [] {                                                              \
    OpDef d = elementwise_op<OpId::Name, sm::Name, 2, EwDType::Same, EwDomain::Floating>();     \
    d.differentiable = false;                                                                   \
    return d;                                                                                   \
  }())

EW_BACKWARD(ReluBackward);
EW_BACKWARD(SigmoidBackward);
EW_BACKWARD(TanhBackward);
EW_BACKWARD(SiluBackward);

LUCID_REGISTER_OP(GeluBackward, "approximate:str", [] {
  OpDef d = elementwise_attr_op<OpId::GeluBackward, sm::GeluBackward, 2, EwDType::Same, EwDomain::Floating>();
  d.differentiable = false;
  return d;
}());

Tensor relu(const Tensor& x) { return dispatch1(OpId::Relu, {x}); }
Tensor relu6(const Tensor& x) { return dispatch1(OpId::Relu6, {x}); }
Tensor leaky_relu(const Tensor& x, double s) { return dispatch1(OpId::LeakyRelu, {x}, {{"negative_slope", s}}); }
Tensor elu(const Tensor& x, double alpha) { return dispatch1(OpId::Elu, {x}, {{"alpha", alpha}}); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  return dispatch1(OpId::Gelu, {x}, {{"approximate", approximate}});
}
Tensor silu(const Tensor& x) { return dispatch1(OpId::Silu, {x}); }
Tensor hardswish(const Tensor& x) { return dispatch1(OpId::Hardswish, {x}); }
Tensor hardsigmoid(const Tensor& x) { return dispatch1(OpId::Hardsigmoid, {x}); }
Tensor hardtanh(const Tensor& x, double lo, double hi) {
  return dispatch1(OpId::Hardtanh, {x}, {{"min_val", lo}, {"max_val", hi}});
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return dispatch1(OpId::Softplus, {x}, {{"beta", beta}, {"threshold", threshold}});
}

}  // namespace lucid
