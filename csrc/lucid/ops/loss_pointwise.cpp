// Pointwise losses, the records: MseLoss, L1Loss, SmoothL1Loss, HuberLoss (shared backward op
// PointwiseLossBackward), BinaryCrossEntropy, BinaryCrossEntropyWithLogits and KlDiv (each with
// a fused backward giving d input and d target). One templated CPU loop computes every loss
// (backends/cpu/kernels/loss_pointwise.cpp); the kinds are numbered in ops/nn_layout.h.
// Broadcasting of target/weight to the input's shape is done by the C++ wrappers with expand (a
// view), so the engine sums gradients back to the original shapes.
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/core.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/nn_util.h"

namespace lucid {

namespace {

using nnutil::kBce;
using nnutil::kBceLogits;
using nnutil::kHuber;
using nnutil::kKlDiv;
using nnutil::kL1;
using nnutil::kMse;
using nnutil::kSmoothL1;

void check_same_shape(const TensorList& in, int64_t kind) {
  const char* op = nnutil::pointwise_loss_name(kind);
  const Tensor& x = in[0];
  nnutil::check_floating(x, op, "input");
  const char* names[] = {"input", "target", "weight", "pos_weight"};
  for (size_t i = 1; i < in.size(); ++i) {
    if (!in[i].defined()) continue;
    nnutil::check_floating(in[i], op, names[i]);
    LUCID_CHECK(in[i].shape() == x.shape(), ValueError, op, ": argument '", names[i], "' has shape ",
                shape_str(in[i].shape()), ", expected the input's shape ", shape_str(x.shape()));
  }
}

template <int64_t Kind>
OpDef loss_op(int num_inputs) {
  OpDef d;
  d.num_inputs = num_inputs;
  if (num_inputs > 2) d.nondiff_inputs = num_inputs == 3 ? std::vector<int>{2} : std::vector<int>{2, 3};
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_same_shape(in, Kind);
    return std::vector<TensorMeta>{{nnutil::reduced_loss_shape(in[0].shape(), a.i("reduction")), in[0].dtype()}};
  };
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    TensorList r(c.inputs.size());
    Attrs a = c.attrs;
    a.set("kind", Kind);
    if ((Kind == kBce || Kind == kBceLogits || Kind == kKlDiv) && GradMode::is_enabled()) {
      // Building a graph of the backward: the same gradients written with ops.
      const Tensor &x = c.inputs[0], &t = c.inputs[1];
      Tensor w = c.inputs.size() > 2 ? c.inputs[2] : Tensor();
      Tensor pw = c.inputs.size() > 3 ? c.inputs[3] : Tensor();
      double scale = a.i("reduction") == nnutil::kMean ? 1.0 / static_cast<double>(x.numel()) : 1.0;
      Tensor g = mul_scalar(c.grads[0], scale), one = scalar_tensor(1.0);
      Tensor gx, gt;
      if (Kind == kBce) {
        gx = div(sub(x, t), clamp(mul(sub(one, x), x), 1e-12, std::nullopt));
        gt = sub(clamp(log1p(neg(x)), -100.0, std::nullopt), clamp(log(x), -100.0, std::nullopt));
      } else if (Kind == kBceLogits) {
        Tensor sig = sigmoid(x);
        if (pw.defined()) {
          gx = sub(mul(add(one, mul(sub(pw, one), t)), sig), mul(pw, t));
          gt = add(neg(softplus(x)), mul(pw, softplus(neg(x))));  // logsigmoid(-x) - pw * logsigmoid(x)
        } else {
          gx = sub(sig, t);
          gt = neg(x);
        }
      } else if (a.f("beta", 0.0) != 0.0) {  // kl_div, log_target
        Tensor et = exp(t);
        gx = neg(et);
        gt = mul(et, add(sub(t, x), one));
      } else {
        gx = neg(t);
        gt = sub(add(log(t), one), x);
      }
      if (w.defined()) {
        gx = mul(gx, w);
        gt = mul(gt, w);
      }
      if (c.needs_grad[0]) r[0] = mul(gx, g);
      if (c.needs_grad[1]) r[1] = mul(gt, g);
      return r;
    }
    if (Kind == kBce || Kind == kBceLogits || Kind == kKlDiv) {
      TensorList in{c.grads[0]};
      for (const Tensor& t : c.inputs) in.push_back(t);
      while (in.size() < 5) in.push_back(Tensor());
      OpId bw = Kind == kBce ? OpId::BinaryCrossEntropyBackward
                             : (Kind == kKlDiv ? OpId::KlDivBackward : OpId::BceWithLogitsBackward);
      TensorList g = dispatch(bw, in, a);
      if (c.needs_grad[0]) r[0] = g[0];
      if (c.needs_grad[1]) r[1] = g[1];
      return r;
    }
    Tensor gx;
    if (GradMode::is_enabled()) {
      // Building a graph of the backward: gx = g * scale * f'(d), with f'(d) written as
      // f'(d0) + f''(d0) * (d - d0) (d0 = d detached: same value, slope f''), so it
      // differentiates again (the third derivative is zero almost everywhere for these losses).
      const Tensor &x = c.inputs[0], &t = c.inputs[1];
      Tensor one = full({}, 1.0, x.dtype()), xd = x.detach(), td = t.detach();
      Attrs a1 = a;
      a1.set("reduction", int64_t{nnutil::kSum});
      Tensor fp = dispatch1(OpId::PointwiseLossBackward, {one, xd, td}, a1);
      Tensor fpp = dispatch1(OpId::PointwiseLossBackward, {one, xd, td}, Attrs(a1).set("order", int64_t{2}));
      Tensor d = sub(x, t);
      Tensor fpd = add(fp, mul(fpp, sub(d, d.detach())));
      double scale = a.i("reduction") == nnutil::kMean ? 1.0 / static_cast<double>(x.numel()) : 1.0;
      gx = mul(mul_scalar(fpd, scale), c.grads[0]);
    } else {
      gx = dispatch1(OpId::PointwiseLossBackward, {c.grads[0], c.inputs[0], c.inputs[1]}, a);
    }
    if (c.needs_grad[0]) r[0] = gx;
    if (c.needs_grad[1]) r[1] = neg(gx);
    return r;
  };
  return d;
}

OpDef backward_op(int num_inputs, int num_outputs) {
  OpDef d;
  d.num_inputs = num_inputs;
  d.vjp = LUCID_NO_DOUBLE_BACKWARD("loss backward (mse/l1/smooth_l1/huber/binary_cross_entropy)");
  if (num_outputs == 1)
    d.infer = [](const TensorList& in, const Attrs&) { return std::vector<TensorMeta>{{in[1].shape(), in[1].dtype()}}; };
  else
    d.infer = [](const TensorList& in, const Attrs&) {
      return std::vector<TensorMeta>{{in[1].shape(), in[1].dtype()}, {in[1].shape(), in[1].dtype()}};
    };
  return d;
}

}  // namespace

LUCID_REGISTER_OP(MseLoss, "reduction:int, beta:float?", loss_op<kMse>(2));
LUCID_REGISTER_OP(L1Loss, "reduction:int, beta:float?", loss_op<kL1>(2));
LUCID_REGISTER_OP(SmoothL1Loss, "reduction:int, beta:float?", loss_op<kSmoothL1>(2));
LUCID_REGISTER_OP(HuberLoss, "reduction:int, beta:float?", loss_op<kHuber>(2));
LUCID_REGISTER_OP(PointwiseLossBackward, "reduction:int, beta:float?, kind:int, order:int?", backward_op(3, 1));
LUCID_REGISTER_OP(BinaryCrossEntropy, "reduction:int, beta:float?", loss_op<kBce>(3));
LUCID_REGISTER_OP(BinaryCrossEntropyBackward, "reduction:int, beta:float?, kind:int, order:int?", backward_op(5, 2));
LUCID_REGISTER_OP(BinaryCrossEntropyWithLogits, "reduction:int, beta:float?", loss_op<kBceLogits>(4));
LUCID_REGISTER_OP(BceWithLogitsBackward, "reduction:int, beta:float?, kind:int, order:int?", backward_op(5, 2));
LUCID_REGISTER_OP(KlDiv, "reduction:int, beta:float?", loss_op<kKlDiv>(2));
LUCID_REGISTER_OP(KlDivBackward, "reduction:int, beta:float?, kind:int, order:int?", backward_op(5, 2));

// ---- C++ API: promote input/target, broadcast (expand) target and weights to the input -----
namespace {

Tensor pointwise(OpId id, const char* op, const Tensor& x, const Tensor& t, TensorList extra, const std::string& reduction,
                 double beta, bool same_shape_target) {
  int64_t red = nnutil::parse_reduction(reduction, op);
  DType dt = result_type({x, t});
  LUCID_CHECK(is_floating(dt), TypeError, op, ": expected floating point input and target, got ", dtype_name(x.dtype()),
              " and ", dtype_name(t.dtype()));
  Tensor xx = x.dtype() == dt ? x : cast(x, dt), tt = t.dtype() == dt ? t : cast(t, dt);
  Shape shape = xx.shape();
  if (same_shape_target) {
    LUCID_CHECK(tt.shape() == xx.shape(), ValueError, op, ": using a target size (", shape_str(tt.shape()),
                ") that is different to the input size (", shape_str(xx.shape()), ") is not supported");
  } else {
    shape = broadcast_shapes(xx.shape(), tt.shape(), op);
    xx = expand(xx, shape);
    tt = expand(tt, shape);
  }
  TensorList in{xx, tt};
  for (Tensor& e : extra) {
    if (e.defined()) {
      Shape b = broadcast_shapes(e.shape(), shape, op);
      LUCID_CHECK(b == shape, ValueError, op, ": weight of shape ", shape_str(e.shape()), " does not broadcast to the input shape ",
                  shape_str(shape));
      e = expand(e.dtype() == dt ? e : cast(e, dt), shape);
    }
    in.push_back(e);
  }
  return dispatch1(id, in, {{"reduction", red}, {"beta", beta}});
}

// As torch: these losses take a floating-point target and do not convert an integer or bool one
// (binary_cross_entropy not even another floating dtype); mse/l1/smooth_l1/huber promote it.
void check_float_target(const char* op, const Tensor& x, const Tensor& t, bool same_dtype) {
  if (same_dtype && is_floating(x.dtype()))
    LUCID_CHECK(t.dtype() == x.dtype(), TypeError, op, ": argument 'target' expected dtype ", dtype_name(x.dtype()),
                " (the input's), got ", dtype_name(t.dtype()), "; convert it with target.to(input.dtype)");
  LUCID_CHECK(is_floating(t.dtype()), TypeError, op, ": argument 'target' expected a floating-point tensor, got ",
              dtype_name(t.dtype()), "; convert it with target.float()");
}

}  // namespace

Tensor mse_loss(const Tensor& x, const Tensor& t, const std::string& r) { return pointwise(OpId::MseLoss, "mse_loss", x, t, {}, r, 1.0, false); }
Tensor l1_loss(const Tensor& x, const Tensor& t, const std::string& r) { return pointwise(OpId::L1Loss, "l1_loss", x, t, {}, r, 1.0, false); }
Tensor smooth_l1_loss(const Tensor& x, const Tensor& t, const std::string& r, double beta) {
  LUCID_CHECK(beta >= 0, ValueError, "smooth_l1_loss: argument 'beta' must be non-negative, got ", beta);
  return pointwise(OpId::SmoothL1Loss, "smooth_l1_loss", x, t, {}, r, beta, false);
}
Tensor huber_loss(const Tensor& x, const Tensor& t, const std::string& r, double delta) {
  LUCID_CHECK(delta > 0, ValueError, "huber_loss: argument 'delta' must be positive, got ", delta);
  return pointwise(OpId::HuberLoss, "huber_loss", x, t, {}, r, delta, false);
}
Tensor kl_div(const Tensor& x, const Tensor& t, const std::string& r, bool log_target) {
  check_float_target("kl_div", x, t, false);
  return pointwise(OpId::KlDiv, "kl_div", x, t, {}, r, log_target ? 1.0 : 0.0, false);
}
Tensor binary_cross_entropy(const Tensor& x, const Tensor& t, const Tensor& w, const std::string& r) {
  check_float_target("binary_cross_entropy", x, t, true);
  return pointwise(OpId::BinaryCrossEntropy, "binary_cross_entropy", x, t, {w}, r, 1.0, true);
}
Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& pw, const std::string& r) {
  check_float_target("binary_cross_entropy_with_logits", x, t, false);
  return pointwise(OpId::BinaryCrossEntropyWithLogits, "binary_cross_entropy_with_logits", x, t, {w, pw}, r, 1.0, true);
}

}  // namespace lucid
