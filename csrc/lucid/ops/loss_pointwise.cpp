// Pointwise losses: MseLoss, L1Loss, SmoothL1Loss, HuberLoss (shared backward op
// PointwiseLossBackward), BinaryCrossEntropy, BinaryCrossEntropyWithLogits and KlDiv (each with
// a fused backward giving d input and d target). One templated loop computes every loss: per
// element in double, reduced ('none' | 'mean' | 'sum') with fixed chunking, so results do not
// depend on the thread count. Broadcasting of target/weight to the input's shape is done by the
// C++ wrappers with expand (a view), so the engine sums gradients back to the original shapes.
#include <cmath>
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/core.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_util.h"

namespace lucid {

namespace {

// kKlDiv reads its log_target flag from `beta` (1: the target holds log-probabilities).
enum Kind : int64_t { kMse = 0, kL1 = 1, kSmoothL1 = 2, kHuber = 3, kBce = 4, kBceLogits = 5, kKlDiv = 6 };

inline double xlogy_self(double t) { return t == 0.0 ? 0.0 : t * std::log(t); }

inline double sgn(double d) { return d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0); }
inline double softplus_neg(double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(-x, 0.0); }  // log(1+e^-x)

// Loss of one element; w = weight (1 if none), pw = pos_weight (1 if none), beta = beta/delta.
inline double elem_loss(int64_t kind, double x, double t, double w, double pw, double beta) {
  double d = x - t;
  switch (kind) {
    case kMse: return d * d;
    case kL1: return std::fabs(d);
    case kSmoothL1: {
      double a = std::fabs(d);
      return (beta == 0.0 || a >= beta) ? a - 0.5 * beta : 0.5 * d * d / beta;
    }
    case kHuber: {
      double a = std::fabs(d);
      return a < beta ? 0.5 * d * d : beta * (a - 0.5 * beta);
    }
    case kBce:
      return -w * (t * std::max(std::log(x), -100.0) + (1.0 - t) * std::max(std::log1p(-x), -100.0));
    case kKlDiv:
      return beta != 0.0 ? std::exp(t) * (t - x) : xlogy_self(t) - t * x;
    default: {
      double lw = 1.0 + (pw - 1.0) * t;
      return w * ((1.0 - t) * x + lw * softplus_neg(x));
    }
  }
}

// d loss / d x and d loss / d t of one element.
inline void elem_grad(int64_t kind, double x, double t, double w, double pw, double beta, double& gx, double& gt) {
  double d = x - t;
  switch (kind) {
    case kMse: gx = 2.0 * d; gt = -gx; return;
    case kL1: gx = sgn(d); gt = -gx; return;
    case kSmoothL1: gx = (beta == 0.0 || std::fabs(d) >= beta) ? sgn(d) : d / beta; gt = -gx; return;
    case kHuber: gx = std::fabs(d) < beta ? d : beta * sgn(d); gt = -gx; return;
    case kBce:
      gx = w * (x - t) / std::max((1.0 - x) * x, 1e-12);
      gt = w * (std::max(std::log1p(-x), -100.0) - std::max(std::log(x), -100.0));
      return;
    case kKlDiv:
      if (beta != 0.0) {
        gx = -std::exp(t);
        gt = std::exp(t) * (t - x + 1.0);
      } else {
        gx = -t;
        gt = std::log(t) + 1.0 - x;
      }
      return;
    default: {
      double sig = 1.0 / (1.0 + std::exp(-x));
      gx = w * ((1.0 + (pw - 1.0) * t) * sig - pw * t);
      double logsig_pos = -softplus_neg(x), logsig_neg = -softplus_neg(-x);
      gt = w * (logsig_neg - pw * logsig_pos);
    }
  }
}

// d2 loss / d x2 of the four difference losses (constant pieces; used by the double backward).
inline double elem_grad2(int64_t kind, double x, double t, double beta) {
  double a = std::fabs(x - t);
  switch (kind) {
    case kMse: return 2.0;
    case kSmoothL1: return (beta > 0.0 && a < beta) ? 1.0 / beta : 0.0;
    case kHuber: return a < beta ? 1.0 : 0.0;
    default: return 0.0;
  }
}

const char* kind_name(int64_t k) {
  static const char* n[] = {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                            "binary_cross_entropy_with_logits", "kl_div"};
  return n[k];
}

constexpr int64_t kChunk = 16384;

// Contiguous operands in x's dtype; optional ones undefined.
struct Operands {
  Tensor x, t, w, pw;
};
Operands load(const TensorList& in, size_t first) {
  DType dt = in[first].dtype();
  Operands o;
  o.x = nnutil::contig_as(in[first], dt);
  o.t = nnutil::contig_as(in[first + 1], dt);
  if (in.size() > first + 2 && in[first + 2].defined()) o.w = nnutil::contig_as(in[first + 2], dt);
  if (in.size() > first + 3 && in[first + 3].defined()) o.pw = nnutil::contig_as(in[first + 3], dt);
  return o;
}

template <class T>
void loss_forward(int64_t kind, const Operands& o, const Tensor& out, int64_t red, double beta) {
  using C = compute_t<T>;
  int64_t n = o.x.numel();
  const T *x = o.x.data<T>(), *t = o.t.data<T>();
  const T* w = o.w.defined() ? o.w.data<T>() : nullptr;
  const T* pw = o.pw.defined() ? o.pw.data<T>() : nullptr;
  auto at = [&](int64_t i) {
    return elem_loss(kind, static_cast<C>(x[i]), static_cast<C>(t[i]), w ? static_cast<double>(static_cast<C>(w[i])) : 1.0,
                     pw ? static_cast<double>(static_cast<C>(pw[i])) : 1.0, beta);
  };
  if (red == nnutil::kNone) {
    T* y = out.data<T>();
    parallel_for(0, n, kParallelGrain / 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = static_cast<T>(static_cast<C>(at(i)));
    });
    return;
  }
  int64_t nch = (n + kChunk - 1) / kChunk;
  std::vector<double> part(nch, 0.0);
  parallel_for(0, nch, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      double s = 0;
      for (int64_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) s += at(i);
      part[c] = s;
    }
  });
  double s = 0;
  for (double v : part) s += v;
  if (red == nnutil::kMean) s /= static_cast<double>(n);  // 0/0 -> nan like PyTorch
  *out.data<T>() = static_cast<T>(static_cast<C>(s));
}

// g: grad of the loss output (full shape for 'none', scalar otherwise). gt may be undefined.
template <class T>
void loss_backward(int64_t kind, const Tensor& g, const Operands& o, const Tensor& gx, const Tensor& gt, int64_t red, double beta,
                   int64_t order) {
  using C = compute_t<T>;
  int64_t n = o.x.numel();
  const T *x = o.x.data<T>(), *t = o.t.data<T>(), *gp = g.data<T>();
  const T* w = o.w.defined() ? o.w.data<T>() : nullptr;
  const T* pw = o.pw.defined() ? o.pw.data<T>() : nullptr;
  double scale = red == nnutil::kMean ? 1.0 / static_cast<double>(n) : 1.0;
  T* gxp = gx.data<T>();
  T* gtp = gt.defined() ? gt.data<T>() : nullptr;
  parallel_for(0, n, kParallelGrain / 8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double gv = static_cast<double>(static_cast<C>(red == nnutil::kNone ? gp[i] : gp[0])) * scale;
      double dx, dt;
      if (order == 2) {
        dx = elem_grad2(kind, static_cast<C>(x[i]), static_cast<C>(t[i]), beta);
        dt = dx;
      } else {
        elem_grad(kind, static_cast<C>(x[i]), static_cast<C>(t[i]), w ? static_cast<double>(static_cast<C>(w[i])) : 1.0,
                  pw ? static_cast<double>(static_cast<C>(pw[i])) : 1.0, beta, dx, dt);
      }
      gxp[i] = static_cast<T>(static_cast<C>(gv * dx));
      if (gtp) gtp[i] = static_cast<T>(static_cast<C>(gv * dt));
    }
  });
}

void check_same_shape(const TensorList& in, int64_t kind) {
  const char* op = kind_name(kind);
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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    Operands o = load(in, 0);
    if constexpr (Kind == kBce) {
      LUCID_DISPATCH_FLOATING(o.x.dtype(), "binary_cross_entropy", [&] {
        const scalar_t* x = o.x.data<scalar_t>();
        for (int64_t i = 0; i < o.x.numel(); ++i) {
          float v = static_cast<float>(x[i]);
          LUCID_CHECK(v >= 0.f && v <= 1.f, ValueError,
                      "binary_cross_entropy: all elements of input should be between 0 and 1, got ", v);
        }
      });
    }
    LUCID_DISPATCH_FLOATING(o.x.dtype(), kind_name(Kind), [&] {
      loss_forward<scalar_t>(Kind, o, out[0], a.i("reduction"), a.f("beta", 1.0));
    });
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

void backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Operands o = load(in, 1);
  Tensor g = nnutil::contig_as(in[0], o.x.dtype());
  int64_t kind = a.i("kind");
  LUCID_DISPATCH_FLOATING(o.x.dtype(), kind_name(kind), [&] {
    loss_backward<scalar_t>(kind, g, o, out[0], out.size() > 1 ? out[1] : Tensor(), a.i("reduction"), a.f("beta", 1.0),
                              a.i("order", 1));
  });
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
  d.cpu_kernel = backward_kernel;
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
