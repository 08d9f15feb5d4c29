// NllLoss and CrossEntropy and their backward ops: the records. Inputs are (N, C), (N, C, d1, ...)
// or (C,); the class dim is 1 (0 for 1-D input) and is read with stride D (ClassLayout,
// ops/nn_layout.h). CrossEntropy's kernel fuses log_softmax with the nll / probability-target sum
// and supports label smoothing and class weights exactly like PyTorch (mean over class-index
// targets divides by the summed target weights; mean over probability targets divides by the
// number of rows); the CPU kernels are in backends/cpu/kernels/loss_nll.cpp. Target indices are
// validated up front: an out-of-range index raises IndexError naming the op, index and classes.
#include <algorithm>
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/core.h"
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

// Returns the 'mean' denominator (sum of target weights over non-ignored rows). Reads the targets
// and class weights on the host.
double class_consts(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore, double eps, Tensor& A,
                    Tensor& B, const char* op) {
  ClassLayout L = class_layout(x.shape());
  Tensor t = nnutil::as_dtype(target, DType::Int64).contiguous_data();
  const int64_t* tp = t.data<int64_t>();
  nnutil::check_class_indices(tp, t.numel(), L.C, ignore, op);
  std::vector<double> w;
  if (weight.defined()) {
    Tensor wd = nnutil::as_dtype(weight, DType::Float64).contiguous_data();
    w.assign(wd.data<double>(), wd.data<double>() + wd.numel());
  }
  Tensor Ad = Tensor::empty(keep_class_dim(x.shape()), DType::Float64), Bd = Tensor::empty(x.shape(), DType::Float64);
  double* ap = Ad.data<double>();
  double* bp = Bd.data<double>();
  std::fill(bp, bp + Bd.numel(), 0.0);
  double Cd = static_cast<double>(L.C), W = 0, denom = 0;
  for (int64_t c = 0; c < L.C; ++c) W += w.empty() ? 1.0 : w[c];
  for (int64_t r = 0; r < L.N * L.D; ++r) {
    int64_t n = r / L.D, i = r % L.D, tc = tp[r];
    if (tc == ignore) { ap[r] = 0; continue; }
    double wt = w.empty() ? 1.0 : w[tc];
    denom += wt;
    ap[r] = (1.0 - eps) * wt + eps / Cd * W;
    if (eps > 0)
      for (int64_t c = 0; c < L.C; ++c) bp[(n * L.C + c) * L.D + i] = eps / Cd * (w.empty() ? 1.0 : w[c]);
    bp[(n * L.C + tc) * L.D + i] += (1.0 - eps) * wt;
  }
  A = nnutil::as_dtype(Ad, x.dtype());
  B = nnutil::as_dtype(Bd, x.dtype());
  return denom;
}

// The incoming gradient broadcast against the input: 'none' -> per row (class dim kept as 1).
Tensor grad_scale(const Tensor& g, const Tensor& x, int64_t red, double denom) {
  if (red == nnutil::kNone) return reshape(g, keep_class_dim(x.shape()));
  return red == nnutil::kMean ? mul_scalar(g, 1.0 / denom) : g;
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
      double denom = class_consts(c.inputs[0], c.inputs[1], c.inputs[2], c.attrs.i("ignore_index"), 0.0, A, B, "nll_loss");
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
        double denom = class_consts(x, t, w, c.attrs.i("ignore_index"), eps, A, B, "cross_entropy");
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
      Tensor gs = grad_scale(c.grads[0], x, red, static_cast<double>(x.numel()) / C);
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
