// Piecewise-linear activation functions (torch.nn.functional names): relu, relu6, leaky_relu,
// hardtanh, hardswish, hardsigmoid, softshrink, hardshrink, threshold. Each is a row of the functor
// table (ops/list/elementwise_functors.def) + the elementwise_op builder + a VJP written with ops
// following PyTorch's backward formulas, including the value at the kinks. Parameters (slope,
// bounds, lambd, threshold) are attrs. Relu's VJP uses the fused ReluBackward
// (elementwise_activation_backward.cpp) unless a higher-order graph is being built.
#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/elementwise_util.h"

namespace lucid {

static Tensor sc(double v) { return scalar_tensor(v); }

LUCID_REGISTER_OP(Relu, "", [] {
  OpDef d = elementwise_op<OpId::Relu>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    if (!GradMode::is_enabled()) return TensorList{dispatch1(OpId::ReluBackward, {c.grads[0], c.outputs[0]})};
    return TensorList{where(le(c.outputs[0], sc(0.0)), sc(0.0), c.grads[0])};  // as ReluBackward
  };
  return d;
}());

// relu6 is hardtanh(x, 0, 6): gradient where 0 < x < 6.
LUCID_REGISTER_OP(Relu6, "", [] {
  OpDef d = elementwise_op<OpId::Relu6>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& x = c.inputs[0];
    return TensorList{where(logical_and(gt(x, sc(0.0)), lt(x, sc(6.0))), c.grads[0], sc(0.0))};
  };
  return d;
}());

LUCID_REGISTER_OP(LeakyRelu, "negative_slope:float", [] {
  OpDef d = elementwise_op<OpId::LeakyRelu>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    return TensorList{where(gt(c.inputs[0], sc(0.0)), g, mul(g, sc(c.attrs.f("negative_slope"))))};
  };
  return d;
}());

LUCID_REGISTER_OP(Hardtanh, "min_val:float, max_val:float", [] {
  OpDef d = elementwise_op<OpId::Hardtanh>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& x = c.inputs[0];
    Tensor inside = logical_and(gt(x, sc(c.attrs.f("min_val"))), lt(x, sc(c.attrs.f("max_val"))));
    return TensorList{where(inside, c.grads[0], sc(0.0))};
  };
  return d;
}());

LUCID_REGISTER_OP(Hardswish, "", [] {
  OpDef d = elementwise_op<OpId::Hardswish>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    Tensor mid = mul(g, add(div(x, sc(3.0)), sc(0.5)));
    return TensorList{where(lt(x, sc(-3.0)), sc(0.0), where(le(x, sc(3.0)), mid, g))};
  };
  return d;
}());

LUCID_REGISTER_OP(Hardsigmoid, "", [] {
  OpDef d = elementwise_op<OpId::Hardsigmoid>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &x = c.inputs[0];
    return TensorList{where(logical_and(gt(x, sc(-3.0)), lt(x, sc(3.0))), div(g, sc(6.0)), sc(0.0))};
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
  OpDef d = elementwise_op<OpId::Softshrink>();
  d.save = kSaveInputs;
  d.vjp = shrink_vjp;
  return d;
}());

LUCID_REGISTER_OP(Hardshrink, "lambd:float", [] {
  OpDef d = elementwise_op<OpId::Hardshrink>();
  d.save = kSaveInputs;
  d.vjp = shrink_vjp;
  return d;
}());

LUCID_REGISTER_OP(Threshold, "threshold:float, value:float", [] {
  OpDef d = elementwise_op<OpId::Threshold>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    return TensorList{where(le(c.inputs[0], sc(c.attrs.f("threshold"))), sc(0.0), c.grads[0])};  // as PyTorch: NaN passes
  };
  return d;
}());

Tensor relu(const Tensor& x) { return dispatch1(OpId::Relu, {x}); }
Tensor relu6(const Tensor& x) { return dispatch1(OpId::Relu6, {x}); }
Tensor leaky_relu(const Tensor& x, double s) { return dispatch1(OpId::LeakyRelu, {x}, {{"negative_slope", s}}); }
Tensor hardtanh(const Tensor& x, double lo, double hi) {
  return dispatch1(OpId::Hardtanh, {x}, {{"min_val", lo}, {"max_val", hi}});
}
Tensor hardswish(const Tensor& x) { return dispatch1(OpId::Hardswish, {x}); }
Tensor hardsigmoid(const Tensor& x) { return dispatch1(OpId::Hardsigmoid, {x}); }
Tensor softshrink(const Tensor& x, double lambd) { return dispatch1(OpId::Softshrink, {x}, {{"lambd", lambd}}); }
Tensor hardshrink(const Tensor& x, double lambd) { return dispatch1(OpId::Hardshrink, {x}, {{"lambd", lambd}}); }
Tensor threshold(const Tensor& x, double th, double value) {
  return dispatch1(OpId::Threshold, {x}, {{"threshold", th}, {"value", value}});
}

}  // namespace lucid
