// Smooth activation functions (torch.nn.functional names): elu, celu, selu, gelu, silu, mish,
// softplus, softsign, logsigmoid, tanhshrink. Each is a row of the functor table
// (ops/list/elementwise_functors.def) + the elementwise_op builder + a VJP written with ops
// following PyTorch's backward formulas, so double backward works. Parameters (alpha,
// approximate, beta/threshold) are attrs. Gelu and Silu's VJPs use their fused backward ops
// (elementwise_activation_backward.cpp) unless a higher-order graph is being built (grad mode on
// during backward means create_graph=True).
#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/elementwise_util.h"

namespace lucid {

static Tensor sc(double v) { return scalar_tensor(v); }

LUCID_REGISTER_OP(Elu, "alpha:float", [] {
  OpDef d = elementwise_op<OpId::Elu>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    Tensor neg_part = mul(g, mul(exp(x), sc(c.attrs.f("alpha"))));
    return TensorList{where(gt(x, sc(0.0)), g, neg_part)};
  };
  return d;
}());

LUCID_REGISTER_OP(Celu, "alpha:float", [] {
  OpDef d = elementwise_op<OpId::Celu>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    double alpha = c.attrs.f("alpha");
    return TensorList{where(gt(x, sc(0.0)), g, mul(g, exp(div(x, sc(alpha)))))};
  };
  return d;
}());

LUCID_REGISTER_OP(Selu, "", [] {
  OpDef d = elementwise_op<OpId::Selu>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    return TensorList{where(gt(x, sc(0.0)), mul(g, sc(scale)), mul(g, mul(exp(x), sc(scale * alpha))))};
  };
  return d;
}());

LUCID_REGISTER_OP(Gelu, "approximate:str", [] {
  OpDef d = elementwise_op<OpId::Gelu>();
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
  OpDef d = elementwise_op<OpId::Silu>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& x = c.inputs[0];
    if (!GradMode::is_enabled()) return TensorList{dispatch1(OpId::SiluBackward, {c.grads[0], x})};
    Tensor s = sigmoid(x);
    return TensorList{mul(c.grads[0], mul(s, add(mul(x, sub(sc(1.0), s)), sc(1.0))))};
  };
  return d;
}());

// d/dx x tanh(softplus(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)
LUCID_REGISTER_OP(Mish, "", [] {
  OpDef d = elementwise_op<OpId::Mish>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    Tensor t = tanh(softplus(x, 1.0, 20.0));
    Tensor r = add(t, mul(mul(x, sigmoid(x)), sub(sc(1.0), mul(t, t))));
    return TensorList{mul(g, r)};
  };
  return d;
}());

LUCID_REGISTER_OP(Softplus, "beta:float, threshold:float", [] {
  OpDef d = elementwise_op<OpId::Softplus>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    Tensor bx = mul(c.inputs[0], sc(c.attrs.f("beta")));
    return TensorList{where(gt(bx, sc(c.attrs.f("threshold"))), g, mul(g, sigmoid(bx)))};
  };
  return d;
}());

LUCID_REGISTER_OP(Softsign, "", [] {
  OpDef d = elementwise_op<OpId::Softsign>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    Tensor den = add(abs(c.inputs[0]), sc(1.0));
    return TensorList{div(c.grads[0], mul(den, den))};
  };
  return d;
}());

LUCID_REGISTER_OP(LogSigmoid, "", [] {
  OpDef d = elementwise_op<OpId::LogSigmoid>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{mul(c.grads[0], sigmoid(neg(c.inputs[0])))}; };
  return d;
}());

LUCID_REGISTER_OP(Tanhshrink, "", [] {
  OpDef d = elementwise_op<OpId::Tanhshrink>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    Tensor t = tanh(c.inputs[0]);
    return TensorList{mul(c.grads[0], mul(t, t))};
  };
  return d;
}());

Tensor elu(const Tensor& x, double alpha) { return dispatch1(OpId::Elu, {x}, {{"alpha", alpha}}); }
Tensor celu(const Tensor& x, double alpha) { return dispatch1(OpId::Celu, {x}, {{"alpha", alpha}}); }
Tensor selu(const Tensor& x) { return dispatch1(OpId::Selu, {x}); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  return dispatch1(OpId::Gelu, {x}, {{"approximate", approximate}});
}
Tensor silu(const Tensor& x) { return dispatch1(OpId::Silu, {x}); }
Tensor mish(const Tensor& x) { return dispatch1(OpId::Mish, {x}); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return dispatch1(OpId::Softplus, {x}, {{"beta", beta}, {"threshold", threshold}});
}
Tensor softsign(const Tensor& x) { return dispatch1(OpId::Softsign, {x}); }
Tensor logsigmoid(const Tensor& x) { return dispatch1(OpId::LogSigmoid, {x}); }
Tensor tanhshrink(const Tensor& x) { return dispatch1(OpId::Tanhshrink, {x}); }

}  // namespace lucid
