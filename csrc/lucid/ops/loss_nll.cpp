// NllLoss and CrossEntropy and their backward ops: the records. Inputs are (N, C), (N, C, d1, ...)
// or (C,); the class dim is 1 (0 for 1-D input) and is read with stride D (ClassLayout,
// ops/nn_layout.h). CrossEntropy's kernel fuses log_softmax with the nll / probability-target sum
// and supports label smoothing and class weights exactly like PyTorch (mean over class-index
// targets divides by the summed target weights; mean over probability targets divides by the
// number of rows); the CPU kernels are in backends/cpu/kernels/loss_nll.cpp. Target indices are
// validated up front: an out-of-range index raises IndexError naming the op, index and classes.
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/core.h"
#include "lucid/ops/creation.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/movement.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/nn_util.h"

namespace lucid {

namespace {

using nnutil::class_layout;
using nnutil::ClassLayout;

Shape target_shape_of(const Shape& s) {
  if (s.size() == 1) return {};
  Shape t{s[0]};
  for (size_t i = 2; i < s.size(); ++i) t.push_back(s[i]);
  return t;
}

void check_input(const TensorList& in, const char* op, bool allow_prob) {
  const Tensor &x = in[0], &t = in[1];
  nnutil::check_floating(x, op, "input");
  LUCID_CHECK(x.ndim() >= 1, ValueError, op, ": expected input with 1 or more dims, got a 0-d tensor");
  ClassLayout L = class_layout(x.shape());
  if (in.size() > 2 && in[2].defined()) {
    nnutil::check_floating(in[2], op, "weight");
    LUCID_CHECK(in[2].shape() == (Shape{L.C}), ValueError, op, ": argument 'weight' expected shape [", L.C,
                "] (one weight per class), got ", shape_str(in[2].shape()));
  }
  // As torch: a target of the input's shape holds class probabilities (floating); any other target
  // holds class indices, of dtype int64 or uint8 (torch rejects int32, floats and bool there too).
  if (allow_prob && t.shape() == x.shape()) {
    LUCID_CHECK(is_floating(t.dtype()), TypeError, op, ": argument 'target' has the input's shape ", shape_str(x.shape()),
                ", so it holds class probabilities and must be floating point, got ", dtype_name(t.dtype()));
    return;
  }
  LUCID_CHECK(!(allow_prob && is_floating(t.dtype()) && t.ndim() == x.ndim()), ValueError, op,
              ": probability targets must have the input's shape ", shape_str(x.shape()), ", got ", shape_str(t.shape()));
  LUCID_CHECK(t.dtype() == DType::Int64 || t.dtype() == DType::UInt8, TypeError, op,
              ": argument 'target' expected class indices of dtype int64 (or uint8), as torch, got ", dtype_name(t.dtype()),
              allow_prob && is_floating(t.dtype()) ? " (class probabilities need the input's shape)" : "");
  LUCID_CHECK(t.shape() == target_shape_of(x.shape()), ValueError, op, ": expected target of shape ",
              shape_str(target_shape_of(x.shape())), " for input of shape ", shape_str(x.shape()), ", got ",
              shape_str(t.shape()));
}

}  // namespace

// ---- double-backward helpers ------------------------------------------------------------------
// When a graph of the backward is built (create_graph=True) the class-index gradients are
// written with ops: gx = gs * (A * softmax(x) - B) for cross_entropy and gx = -gs * B for
// nll_loss, where A (input shape with 1 at the class dim) and B (input shape) are constants
// built here from the targets, class weights, ignore_index and label smoothing.
namespace {

int64_t class_dim(const Tensor& x) { return x.ndim() == 1 ? 0 : 1; }

Shape keep_class_dim(const Shape& s) {
  Shape r = s;
  r[s.size() == 1 ? 0 : 1] = 1;
  return r;
}

// Returns the 'mean' denominator (sum of target weights over non-ignored rows) as a 0-d tensor.
// Written with ops in float64 (the targets and weights stay on their device; the forward kernel
// has already validated the targets), then cast to the input's dtype.
Tensor class_consts(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore, double eps, Tensor& A,
                    Tensor& B) {
  ClassLayout L = class_layout(x.shape());
  int64_t cd = class_dim(x);
  Tensor t = nnutil::as_dtype(target, DType::Int64);
  Tensor valid = nnutil::as_dtype(ne(t, scalar_tensor(ignore)), DType::Float64);
  Tensor tc = where(ne(t, scalar_tensor(ignore)), t, zeros_like(t));  // ignored rows read class 0, weighted 0
  Tensor wd = weight.defined() ? nnutil::as_dtype(weight, DType::Float64) : Tensor();
  Tensor wt = wd.defined() ? mul(reshape(index_select(wd, 0, reshape(tc, {tc.numel()})), t.shape()), valid) : valid;
  Tensor W = wd.defined() ? sum(wd) : full({}, static_cast<double>(L.C), DType::Float64);
  double Cd = static_cast<double>(L.C);
  Tensor wt_c = unsqueeze(wt, cd), valid_c = unsqueeze(valid, cd);  // the class dim kept as 1
  A = add(mul_scalar(wt_c, 1.0 - eps), mul(mul_scalar(valid_c, eps / Cd), W));
  Shape cls(x.ndim(), 1);
  cls[cd] = L.C;
  Tensor onehot = nnutil::as_dtype(eq(unsqueeze(tc, cd), reshape(arange(0, Cd, 1, DType::Int64), cls)), DType::Float64);
  Tensor Bd = mul(onehot, mul_scalar(wt_c, 1.0 - eps));
  if (eps > 0) {
    Tensor wc = wd.defined() ? reshape(wd, cls) : full({}, 1.0, DType::Float64);
    Bd = add(Bd, mul(mul_scalar(valid_c, eps / Cd), wc));
  }
  A = nnutil::as_dtype(A, x.dtype());
  B = nnutil::as_dtype(expand(Bd, x.shape()), x.dtype());
  return sum(wt);
}

// The incoming gradient broadcast against the input: 'none' -> per row (class dim kept as 1);
// 'mean' divides by denom (a 0-d tensor).
Tensor grad_scale(const Tensor& g, const Tensor& x, int64_t red, const Tensor& denom) {
  if (red == nnutil::kNone) return reshape(g, keep_class_dim(x.shape()));
  return red == nnutil::kMean ? div(g, nnutil::as_dtype(denom, g.dtype())) : g;
}

}  // namespace

// ---- NllLoss: inputs (input, target, weight) -> (loss, total_weight) -----------------------
LUCID_REGISTER_OP(NllLoss, "reduction:int, ignore_index:int", [] {
  OpDef d;
  d.num_inputs = 3;
  d.nondiff_inputs = {1, 2};
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_input(in, "nll_loss", false);
    Shape ts = target_shape_of(in[0].shape());
    return std::vector<TensorMeta>{{nnutil::reduced_loss_shape(ts, a.i("reduction")), in[0].dtype()}, {{}, in[0].dtype()}};
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    TensorList r(3);
    if (!c.grads[0].defined() || !c.needs_grad[0]) return r;
    if (GradMode::is_enabled()) {
      Tensor A, B;
      Tensor denom = class_consts(c.inputs[0], c.inputs[1], c.inputs[2], c.attrs.i("ignore_index"), 0.0, A, B);
      r[0] = neg(mul(grad_scale(c.grads[0], c.inputs[0], c.attrs.i("reduction"), denom), B));
      return r;
    }
    r[0] = dispatch1(OpId::NllLossBackward, {c.grads[0], c.inputs[0], c.inputs[1], c.inputs[2], c.outputs[1]}, c.attrs);
    return r;
  };
  return d;
}());

// inputs (grad, input, target, weight, total_weight) -> d input
LUCID_REGISTER_OP(NllLossBackward, "reduction:int, ignore_index:int", [] {
  OpDef d;
  d.num_inputs = 5;
  d.vjp = LUCID_NO_DOUBLE_BACKWARD("nll_loss backward");
  d.infer = [](const TensorList& in, const Attrs&) { return std::vector<TensorMeta>{{in[1].shape(), in[1].dtype()}}; };
  return d;
}());

// ---- CrossEntropy: inputs (input, target, weight) -------------------------------------------

LUCID_REGISTER_OP(CrossEntropy, "reduction:int, ignore_index:int, label_smoothing:float", [] {
  OpDef d;
  d.num_inputs = 3;
  d.nondiff_inputs = {2};
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_input(in, "cross_entropy", true);
    double eps = a.f("label_smoothing");
    LUCID_CHECK(eps >= 0.0 && eps <= 1.0, ValueError, "cross_entropy: label_smoothing must be between 0.0 and 1.0, got ", eps);
    Shape ts = target_shape_of(in[0].shape());
    return std::vector<TensorMeta>{{nnutil::reduced_loss_shape(ts, a.i("reduction")), in[0].dtype()}};
  };
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    TensorList r(3);
    if (!c.grads[0].defined()) return r;
    if (GradMode::is_enabled()) {
      const Tensor &x = c.inputs[0], &t = c.inputs[1], &w = c.inputs[2];
      double eps = c.attrs.f("label_smoothing");
      int64_t red = c.attrs.i("reduction"), cd = class_dim(x);
      Tensor p = softmax(x, cd);
      if (!is_floating(t.dtype())) {
        Tensor A, B;
        Tensor denom = class_consts(x, t, w, c.attrs.i("ignore_index"), eps, A, B);
        if (c.needs_grad[0]) r[0] = mul(grad_scale(c.grads[0], x, red, denom), sub(mul(A, p), B));
        return r;
      }
      double C = static_cast<double>(x.shape()[cd]);
      Tensor tp = add(mul_scalar(t, 1.0 - eps), scalar_tensor(eps / C));
      Tensor wb;
      if (w.defined()) {
        Shape ws(x.ndim(), 1);
        ws[cd] = static_cast<int64_t>(C);
        wb = reshape(w, ws);
      }
      Tensor wt = wb.defined() ? mul(tp, wb) : tp;
      Tensor gs = grad_scale(c.grads[0], x, red, full({}, static_cast<double>(x.numel()) / C, DType::Float64));
      if (c.needs_grad[0]) r[0] = mul(gs, sub(mul(p, sum(wt, {cd}, true)), wt));
      if (c.needs_grad[1]) {
        Tensor lp = log_softmax(x, cd);
        r[1] = mul(gs, mul_scalar(wb.defined() ? mul(lp, wb) : lp, -(1.0 - eps)));
      }
      return r;
    }
    TensorList g = dispatch(OpId::CrossEntropyBackward, {c.grads[0], c.inputs[0], c.inputs[1], c.inputs[2]}, c.attrs);
    if (c.needs_grad[0]) r[0] = g[0];
    if (c.needs_grad[1]) r[1] = g[1];
    return r;
  };
  return d;
}());

// inputs (grad, input, target, weight) -> (d input, d target); d target is empty for class targets.
LUCID_REGISTER_OP(CrossEntropyBackward, "reduction:int, ignore_index:int, label_smoothing:float", [] {
  OpDef d;
  d.num_inputs = 4;
  d.vjp = LUCID_NO_DOUBLE_BACKWARD("cross_entropy backward");
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor &x = in[1], &t = in[2];
    Shape ts = is_floating(t.dtype()) ? t.shape() : Shape{0};
    return std::vector<TensorMeta>{{x.shape(), x.dtype()}, {ts, x.dtype()}};
  };
  return d;
}());

Tensor nll_loss(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index, const std::string& reduction) {
  int64_t red = nnutil::parse_reduction(reduction, "nll_loss");
  return dispatch(OpId::NllLoss, {x, target, weight}, {{"reduction", red}, {"ignore_index", ignore_index}})[0];
}

Tensor cross_entropy(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     const std::string& reduction, double label_smoothing) {
  int64_t red = nnutil::parse_reduction(reduction, "cross_entropy");
  return dispatch1(OpId::CrossEntropy, {x, target, weight},
                   {{"reduction", red}, {"ignore_index", ignore_index}, {"label_smoothing", label_smoothing}});
}

}  // namespace lucid
