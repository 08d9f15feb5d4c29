// NllLoss and CrossEntropy with fused kernels, and their backward ops. Inputs are (N, C),
// (N, C, d1, ...) or (C,); the class dim is 1 (0 for 1-D input) and is read with stride D
// (the product of the trailing dims), so no transpose is needed. CrossEntropy fuses
// log_softmax with the nll / probability-target sum and supports label smoothing and class
// weights exactly like PyTorch (mean over class-index targets divides by the summed target
// weights; mean over probability targets divides by the number of rows). Target indices are
// validated up front: an out-of-range index raises IndexError naming the op, index and classes.
#include <cmath>
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/core.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_util.h"
#include "lucid/ops/nn_vec.h"

namespace lucid {

namespace {

struct RowLayout {
  int64_t N = 1, C = 1, D = 1;
};

RowLayout layout_of(const Shape& s) {
  RowLayout L;
  if (s.size() == 1) {
    L.C = s[0];
    return L;
  }
  L.N = s[0];
  L.C = s[1];
  for (size_t i = 2; i < s.size(); ++i) L.D *= s[i];
  return L;
}

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
  RowLayout L = layout_of(x.shape());
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

// Target indices as int64, validated against the number of classes.
Tensor checked_targets(const Tensor& t, int64_t C, int64_t ignore, const char* op) {
  Tensor i64 = nnutil::contig_as(t, DType::Int64);
  const int64_t* p = i64.data<int64_t>();
  for (int64_t i = 0; i < i64.numel(); ++i)
    LUCID_CHECK(p[i] == ignore || (p[i] >= 0 && p[i] < C), IndexError, op, ": target index ", p[i],
                " is out of bounds for ", C, " classes (valid: 0..", C - 1, " or ignore_index=", ignore, ")");
  return i64;
}

template <class T>
inline double ld(const T* p, int64_t i) { return static_cast<double>(static_cast<compute_t<T>>(p[i])); }

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

// Returns the 'mean' denominator (sum of target weights over non-ignored rows).
double class_consts(const Tensor& x, const Tensor& target, const std::vector<double>& w, int64_t ignore, double eps,
                    Tensor& A, Tensor& B, const char* op) {
  RowLayout L = layout_of(x.shape());
  Tensor t = checked_targets(target, L.C, ignore, op);
  const int64_t* tp = t.data<int64_t>();
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
  A = nnutil::contig_as(Ad, x.dtype());
  B = nnutil::contig_as(Bd, x.dtype());
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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    RowLayout L = layout_of(in[0].shape());
    int64_t ignore = a.i("ignore_index"), red = a.i("reduction");
    Tensor t = checked_targets(in[1], L.C, ignore, "nll_loss");
    Tensor x = in[0].contiguous_data();
    std::vector<double> w = nnutil::doubles(in[2]);
    const int64_t* tp = t.data<int64_t>();
    LUCID_DISPATCH_FLOATING(x.dtype(), "nll_loss", [&] {
      const scalar_t* xp = x.data<scalar_t>();
      double total = 0, sum = 0;
      scalar_t* o = out[0].data<scalar_t>();
      for (int64_t n = 0; n < L.N; ++n)
        for (int64_t i = 0; i < L.D; ++i) {
          int64_t r = n * L.D + i, c = tp[r];
          double l = 0, wt = 0;
          if (c != ignore) {
            wt = w.empty() ? 1.0 : w[c];
            l = -wt * ld(xp, (n * L.C + c) * L.D + i);
          }
          total += wt;
          sum += l;
          if (red == nnutil::kNone) o[r] = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(l));
        }
      if (red != nnutil::kNone) *o = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(red == nnutil::kMean ? sum / total : sum));
      *out[1].data<scalar_t>() = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(total));
    });
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    TensorList r(3);
    if (!c.grads[0].defined() || !c.needs_grad[0]) return r;
    if (GradMode::is_enabled()) {
      Tensor A, B;
      double denom = class_consts(c.inputs[0], c.inputs[1], nnutil::doubles(c.inputs[2]), c.attrs.i("ignore_index"), 0.0,
                                  A, B, "nll_loss");
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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    RowLayout L = layout_of(in[1].shape());
    int64_t ignore = a.i("ignore_index"), red = a.i("reduction");
    Tensor t = checked_targets(in[2], L.C, ignore, "nll_loss");
    DType dt = in[1].dtype();
    Tensor g = nnutil::contig_as(in[0], dt);
    std::vector<double> w = nnutil::doubles(in[3]), tw = nnutil::doubles(in[4]);
    const int64_t* tp = t.data<int64_t>();
    LUCID_DISPATCH_FLOATING(dt, "nll_loss_backward", [&] {
      using C = compute_t<scalar_t>;
      scalar_t* o = out[0].data<scalar_t>();
      std::fill(o, o + out[0].numel(), static_cast<scalar_t>(C(0)));
      const scalar_t* gp = g.data<scalar_t>();
      for (int64_t r = 0; r < L.N * L.D; ++r) {
        int64_t c = tp[r];
        if (c == ignore) continue;
        double gv = red == nnutil::kNone ? ld(gp, r) : ld(gp, 0);
        if (red == nnutil::kMean) gv /= tw[0];
        double wt = w.empty() ? 1.0 : w[c];
        int64_t n = r / L.D, i = r % L.D;
        o[(n * L.C + c) * L.D + i] = static_cast<scalar_t>(static_cast<C>(-wt * gv));
      }
    });
  };
  return d;
}());

// ---- CrossEntropy: inputs (input, target, weight) -------------------------------------------
namespace {

// Per row r = (n, i): loads the C class values (stride D) into buf, leaves exp(x - max) in
// buf and returns the log-sum-exp; *sum receives the sum of buf.
template <class T>
inline double row_lse(const T* xp, const RowLayout& L, int64_t r, compute_t<T>* buf, double* sum) {
  using C = compute_t<T>;
  int64_t n = r / L.D, i = r % L.D;
  const T* base = xp + n * L.C * L.D + i;
  for (int64_t c = 0; c < L.C; ++c) buf[c] = static_cast<C>(base[c * L.D]);
  C mx = nnvec::vmax(buf, L.C);
  if (std::isinf(mx) && mx < 0) mx = 0;
  nnvec::vexp_sub(buf, L.C, mx);
  double s = nnvec::vsum(buf, L.C);
  *sum = s;
  return static_cast<double>(mx) + std::log(s);
}

struct CeArgs {
  RowLayout L;
  int64_t ignore, red;
  double eps;
  bool prob;
  std::vector<double> w;
  double wsum = 0;  // sum of class weights
};

CeArgs ce_args(const TensorList& in, const Attrs& a) {
  CeArgs c;
  c.L = layout_of(in[0].shape());
  c.ignore = a.i("ignore_index");
  c.red = a.i("reduction");
  c.eps = a.f("label_smoothing");
  c.prob = is_floating(in[1].dtype());
  c.w = nnutil::doubles(in[2]);
  c.wsum = c.w.empty() ? static_cast<double>(c.L.C) : 0.0;
  for (double v : c.w) c.wsum += v;
  return c;
}

inline double wgt(const CeArgs& a, int64_t c) { return a.w.empty() ? 1.0 : a.w[c]; }

// Returns per-row losses (and per-row target weights for class targets).
template <class T>
void ce_rows(const T* xp, const T* tpf, const int64_t* tpi, const CeArgs& a, std::vector<double>& loss, std::vector<double>& wt) {
  const RowLayout& L = a.L;
  int64_t rows = L.N * L.D;
  double C = static_cast<double>(L.C);
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(L.C * 4, 1)), [&](int64_t b, int64_t e) {
    std::vector<compute_t<T>> buf(L.C);
    for (int64_t r = b; r < e; ++r) {
      int64_t n = r / L.D, i = r % L.D;
      const T* base = xp + n * L.C * L.D + i;
      if (!a.prob && tpi[r] == a.ignore) { loss[r] = 0; wt[r] = 0; continue; }
      double s;
      double lse = row_lse(xp, L, r, buf.data(), &s);
      if (a.prob) {
        double l = 0;
        for (int64_t c = 0; c < L.C; ++c) {
          double t = ld(tpf, (n * L.C + c) * L.D + i) * (1.0 - a.eps) + a.eps / C;
          l -= wgt(a, c) * t * (ld(base, c * L.D) - lse);
        }
        loss[r] = l;
        continue;
      }
      int64_t tc = tpi[r];
      double nll = -wgt(a, tc) * (ld(base, tc * L.D) - lse);
      double smooth = 0;
      if (a.eps > 0) {
        for (int64_t c = 0; c < L.C; ++c) smooth -= wgt(a, c) * (ld(base, c * L.D) - lse);
      }
      loss[r] = (1.0 - a.eps) * nll + a.eps / C * smooth;
      wt[r] = wgt(a, tc);
    }
  });
}

}  // namespace

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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& attrs) {
    CeArgs a = ce_args(in, attrs);
    DType dt = in[0].dtype();
    Tensor x = in[0].contiguous_data();
    Tensor ti = a.prob ? Tensor() : checked_targets(in[1], a.L.C, a.ignore, "cross_entropy");
    Tensor tf = a.prob ? nnutil::contig_as(in[1], dt) : Tensor();
    int64_t rows = a.L.N * a.L.D;
    std::vector<double> loss(rows), wt(rows, 0.0);
    LUCID_DISPATCH_FLOATING(dt, "cross_entropy", [&] {
      using C = compute_t<scalar_t>;
      ce_rows<scalar_t>(x.data<scalar_t>(), a.prob ? tf.data<scalar_t>() : nullptr, a.prob ? nullptr : ti.data<int64_t>(), a,
                        loss, wt);
      scalar_t* o = out[0].data<scalar_t>();
      if (a.red == nnutil::kNone) {
        for (int64_t r = 0; r < rows; ++r) o[r] = static_cast<scalar_t>(static_cast<C>(loss[r]));
        return;
      }
      double s = 0, tw = 0;
      for (int64_t r = 0; r < rows; ++r) { s += loss[r]; tw += wt[r]; }
      if (a.red == nnutil::kMean) s /= a.prob ? static_cast<double>(rows) : tw;
      *o = static_cast<scalar_t>(static_cast<C>(s));
    });
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
        double denom = class_consts(x, t, nnutil::doubles(w), c.attrs.i("ignore_index"), eps, A, B, "cross_entropy");
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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& attrs) {
    CeArgs a = ce_args({in[1], in[2], in[3]}, attrs);
    DType dt = in[1].dtype();
    Tensor x = in[1].contiguous_data();
    Tensor g = nnutil::contig_as(in[0], dt);
    Tensor ti = a.prob ? Tensor() : checked_targets(in[2], a.L.C, a.ignore, "cross_entropy");
    Tensor tf = a.prob ? nnutil::contig_as(in[2], dt) : Tensor();
    const RowLayout& L = a.L;
    int64_t rows = L.N * L.D;
    double Cd = static_cast<double>(L.C);
    // Denominator of 'mean'.
    double denom = static_cast<double>(rows);
    if (!a.prob) {
      denom = 0;
      const int64_t* tp = ti.data<int64_t>();
      for (int64_t r = 0; r < rows; ++r)
        if (tp[r] != a.ignore) denom += wgt(a, tp[r]);
    }
    LUCID_DISPATCH_FLOATING(dt, "cross_entropy_backward", [&] {
      using C = compute_t<scalar_t>;
      const scalar_t* xp = x.data<scalar_t>();
      const scalar_t* gp = g.data<scalar_t>();
      scalar_t* gx = out[0].data<scalar_t>();
      scalar_t* gt = a.prob ? out[1].data<scalar_t>() : nullptr;
      const scalar_t* tfp = a.prob ? tf.data<scalar_t>() : nullptr;
      const int64_t* tip = a.prob ? nullptr : ti.data<int64_t>();
      parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(L.C * 4, 1)), [&](int64_t b, int64_t e) {
        std::vector<C> buf(L.C);
        for (int64_t r = b; r < e; ++r) {
          int64_t n = r / L.D, i = r % L.D;
          auto at = [&](int64_t c) { return (n * L.C + c) * L.D + i; };
          double gs = a.red == nnutil::kNone ? ld(gp, r) : ld(gp, 0);
          if (a.red == nnutil::kMean) gs /= denom;
          if (!a.prob && tip[r] == a.ignore) {
            for (int64_t c = 0; c < L.C; ++c) gx[at(c)] = static_cast<scalar_t>(C(0));
            continue;
          }
          double s;
          double lse = row_lse(xp, L, r, buf.data(), &s);
          double inv = 1.0 / s;
          if (a.prob) {
            double swt = 0;
            for (int64_t c = 0; c < L.C; ++c) swt += wgt(a, c) * (ld(tfp, at(c)) * (1.0 - a.eps) + a.eps / Cd);
            for (int64_t c = 0; c < L.C; ++c) {
              double t = ld(tfp, at(c)) * (1.0 - a.eps) + a.eps / Cd;
              double p = static_cast<double>(buf[c]) * inv;
              gx[at(c)] = static_cast<scalar_t>(static_cast<C>(gs * (p * swt - wgt(a, c) * t)));
              gt[at(c)] = static_cast<scalar_t>(static_cast<C>(-gs * (1.0 - a.eps) * wgt(a, c) * (ld(xp, at(c)) - lse)));
            }
          } else {
            int64_t tc = tip[r];
            double wtc = wgt(a, tc);
            double k1 = gs * ((1.0 - a.eps) * wtc + a.eps / Cd * a.wsum) * inv, k2 = gs * a.eps / Cd;
            if (a.w.empty()) {
              for (int64_t c = 0; c < L.C; ++c) gx[at(c)] = static_cast<scalar_t>(static_cast<C>(k1 * buf[c] - k2));
            } else {
              for (int64_t c = 0; c < L.C; ++c) gx[at(c)] = static_cast<scalar_t>(static_cast<C>(k1 * buf[c] - k2 * a.w[c]));
            }
            double gt_v = static_cast<double>(buf[tc]) * k1 - k2 * wgt(a, tc) - gs * (1.0 - a.eps) * wtc;
            gx[at(tc)] = static_cast<scalar_t>(static_cast<C>(gt_v));
          }
        }
      });
    });
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
