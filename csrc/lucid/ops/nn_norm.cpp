// Normalisation ops: BatchNorm, LayerNorm, GroupNorm, RmsNorm, their shared backward op
// NormBackward, and BatchNormUpdateStats (the in-place running-stat update, so a tracer sees
// it as an in-place write through dispatch_inplace).
//
// All four norms are one kernel over a [P, Q, S] view of the input: statistics are taken per
// q over (p, s), and the affine parameter of element (q, s) is w[(q % qmod) * qmul + s / sdiv]:
//   batch_norm  x (N, C, *):  P=N, Q=C,   S=spatial; param index q
//   layer_norm  x (*, K...):  P=1, Q=rows, S=K;      param index s
//   group_norm  x (N, C, *):  P=1, Q=N*G, S=C/G*HW;  param index (q % G) * C/G + s / HW
//   rms_norm    like layer_norm, not centered (mean output is zero)
// Each forward op outputs (y, mean, rstd); the Python API returns y. The backward is the fused
// NormBackward kernel, gx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)); when a graph of
// the backward is built (create_graph=True) the same VJP is written with core ops instead, so
// the norms differentiate to any order.
#include <cmath>
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/core.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_util.h"

namespace lucid {

namespace {

struct NormLayout {
  int64_t P = 1, Q = 1, S = 1;
  int64_t qmod = 1, qmul = 0, sdiv = 1;
  int64_t W = 0;  // number of affine parameters
  bool centered = true;
  int64_t idx(int64_t q, int64_t s) const { return (q % qmod) * qmul + s / sdiv; }
};

enum NormKind : int64_t { kBatch = 0, kLayer = 1, kGroup = 2, kRms = 3 };
const char* kind_name(int64_t k) {
  static const char* n[] = {"batch_norm", "layer_norm", "group_norm", "rms_norm"};
  return n[k];
}

// k: normalized ndim (layer/rms) or number of groups (group).
NormLayout make_layout(int64_t kind, const Shape& s, int64_t k) {
  NormLayout L;
  int64_t nd = static_cast<int64_t>(s.size());
  if (kind == kBatch) {
    L.P = s[0];
    L.Q = s[1];
    L.S = 1;
    for (int64_t i = 2; i < nd; ++i) L.S *= s[i];
    L.qmod = L.Q;
    L.qmul = 1;
    L.sdiv = std::max<int64_t>(L.S, 1);
    L.W = L.Q;
  } else if (kind == kGroup) {
    int64_t hw = 1;
    for (int64_t i = 2; i < nd; ++i) hw *= s[i];
    int64_t cpg = s[1] / k;
    L.Q = s[0] * k;
    L.S = cpg * hw;
    L.qmod = k;
    L.qmul = cpg;
    L.sdiv = std::max<int64_t>(hw, 1);
    L.W = s[1];
  } else {
    L.Q = 1;
    for (int64_t i = 0; i < nd - k; ++i) L.Q *= s[i];
    L.S = 1;
    for (int64_t i = nd - k; i < nd; ++i) L.S *= s[i];
    L.qmod = 1;
    L.qmul = 0;
    L.sdiv = 1;
    L.W = L.S;
    L.centered = kind != kRms;
  }
  return L;
}

template <class T>
inline double row_sum(const T* x, int64_t n) {
  using C = compute_t<T>;
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(static_cast<C>(x[i]));
  return s;
}

template <class T>
inline double row_sqdev(const T* x, int64_t n, double m) {
  using C = compute_t<T>;
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(static_cast<C>(x[i])) - m;
    s += d * d;
  }
  return s;
}

// Parameters in the compute type; missing weight = 1, missing bias = 0.
template <class C>
std::vector<C> params_as(const double* p, int64_t W, C dflt) {
  std::vector<C> v(W, dflt);
  if (p)
    for (int64_t k = 0; k < W; ++k) v[k] = static_cast<C>(p[k]);
  return v;
}

// Forward over [P, Q, S]. rmean/rvar: given statistics (batch_norm eval), else computed.
template <class T, class SD>
void norm_forward(const T* x, T* y, SD* mean_out, SD* rstd_out, const NormLayout& L, const double* w,
                  const double* b, double eps, const double* rmean, const double* rvar) {
  using C = compute_t<T>;
  const int64_t QS = L.Q * L.S;
  const double n = static_cast<double>(L.P * L.S);
  const bool per_elem = L.qmod == 1 && L.sdiv == 1;  // layer/rms norm: parameter index = s
  std::vector<C> wc = params_as<C>(w, L.W, C(1)), bc = params_as<C>(b, L.W, C(0));
  parallel_for(0, L.Q, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, L.P * L.S)), [&](int64_t qb, int64_t qe) {
    for (int64_t q = qb; q < qe; ++q) {
      double m = 0, r;
      if (rmean) {
        m = rmean[q];
        r = 1.0 / std::sqrt(rvar[q] + eps);
      } else {
        if (L.centered) {
          double acc = 0;
          for (int64_t p = 0; p < L.P; ++p) acc += row_sum(x + p * QS + q * L.S, L.S);
          m = acc / n;
        }
        double var = 0;
        for (int64_t p = 0; p < L.P; ++p) var += row_sqdev(x + p * QS + q * L.S, L.S, m);
        r = 1.0 / std::sqrt(var / n + eps);
      }
      mean_out[q] = static_cast<SD>(m);
      rstd_out[q] = static_cast<SD>(r);
      const C mc = static_cast<C>(m), rc = static_cast<C>(r);
      for (int64_t p = 0; p < L.P; ++p) {
        const T* xr = x + p * QS + q * L.S;
        T* yr = y + p * QS + q * L.S;
        if (per_elem) {
          const C* wp = wc.data();
          const C* bp = bc.data();
#pragma omp simd
          for (int64_t s = 0; s < L.S; ++s) yr[s] = static_cast<T>((static_cast<C>(xr[s]) - mc) * rc * wp[s] + bp[s]);
        } else {
          int64_t base = (q % L.qmod) * L.qmul, nch = L.S / L.sdiv;
          for (int64_t j = 0; j < nch; ++j) {
            const C a = rc * wc[base + j], c0 = bc[base + j];
            const T* xs = xr + j * L.sdiv;
            T* ys = yr + j * L.sdiv;
#pragma omp simd
            for (int64_t s = 0; s < L.sdiv; ++s) ys[s] = static_cast<T>((static_cast<C>(xs[s]) - mc) * a + c0);
          }
        }
      }
    }
  });
}

// Backward over [P, Q, S]; batch_stats: the statistics depend on x (not batch_norm eval).
template <class T, class SD>
void norm_backward(const T* g, const T* x, const SD* mean, const SD* rstd, const double* w, const NormLayout& L,
                   bool batch_stats, T* gx, SD* gw, SD* gb) {
  using C = compute_t<T>;
  const int64_t QS = L.Q * L.S;
  const double n = static_cast<double>(L.P * L.S);
  const bool per_elem = L.qmod == 1 && L.sdiv == 1;
  std::vector<C> wc = params_as<C>(w, L.W, C(1));
  const int64_t nchunks = std::min<int64_t>(L.Q, 32);
  std::vector<double> pw(nchunks * L.W, 0.0), pb(nchunks * L.W, 0.0);
  int64_t per_chunk = nchunks ? (L.Q + nchunks - 1) / nchunks : 0;
  parallel_for(0, nchunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t ch = cb; ch < ce; ++ch) {
      double* cw = pw.data() + ch * L.W;
      double* cbias = pb.data() + ch * L.W;
      for (int64_t q = ch * per_chunk; q < std::min(L.Q, (ch + 1) * per_chunk); ++q) {
        const double m = static_cast<double>(mean[q]), r = static_cast<double>(rstd[q]);
        const int64_t base = (q % L.qmod) * L.qmul, nch = per_elem ? 0 : L.S / L.sdiv;
        double sum_gw = 0, sum_gwxh = 0;
        for (int64_t p = 0; p < L.P; ++p) {
          const T* gr = g + p * QS + q * L.S;
          const T* xr = x + p * QS + q * L.S;
          if (per_elem) {
            const C* wp = wc.data();
#pragma omp simd reduction(+ : sum_gw, sum_gwxh)
            for (int64_t s = 0; s < L.S; ++s) {
              double gv = static_cast<double>(static_cast<C>(gr[s]));
              double xh = (static_cast<double>(static_cast<C>(xr[s])) - m) * r;
              double gwv = gv * static_cast<double>(wp[s]);
              sum_gw += gwv;
              sum_gwxh += gwv * xh;
              cw[s] += gv * xh;
              cbias[s] += gv;
            }
          } else {
            for (int64_t j = 0; j < nch; ++j) {
              const T* gs = gr + j * L.sdiv;
              const T* xs = xr + j * L.sdiv;
              double sg = 0, sgx = 0;
#pragma omp simd reduction(+ : sg, sgx)
              for (int64_t s = 0; s < L.sdiv; ++s) {
                double gv = static_cast<double>(static_cast<C>(gs[s]));
                sg += gv;
                sgx += gv * (static_cast<double>(static_cast<C>(xs[s])) - m) * r;
              }
              int64_t k = base + j;
              cw[k] += sgx;
              cbias[k] += sg;
              sum_gw += static_cast<double>(wc[k]) * sg;
              sum_gwxh += static_cast<double>(wc[k]) * sgx;
            }
          }
        }
        const C rc = static_cast<C>(r), mc = static_cast<C>(m);
        const C ac = batch_stats && L.centered ? static_cast<C>(sum_gw / n) : C(0);
        const C bco = batch_stats ? static_cast<C>(sum_gwxh / n) : C(0);
        for (int64_t p = 0; p < L.P; ++p) {
          const T* gr = g + p * QS + q * L.S;
          const T* xr = x + p * QS + q * L.S;
          T* gxr = gx + p * QS + q * L.S;
          if (per_elem) {
            const C* wp = wc.data();
#pragma omp simd
            for (int64_t s = 0; s < L.S; ++s) {
              C xh = (static_cast<C>(xr[s]) - mc) * rc;
              gxr[s] = static_cast<T>(rc * (static_cast<C>(gr[s]) * wp[s] - ac - xh * bco));
            }
          } else {
            for (int64_t j = 0; j < nch; ++j) {
              const C wv = wc[base + j];
              const T* gs = gr + j * L.sdiv;
              const T* xs = xr + j * L.sdiv;
              T* gxs = gxr + j * L.sdiv;
#pragma omp simd
              for (int64_t s = 0; s < L.sdiv; ++s) {
                C xh = (static_cast<C>(xs[s]) - mc) * rc;
                gxs[s] = static_cast<T>(rc * (static_cast<C>(gs[s]) * wv - ac - xh * bco));
              }
            }
          }
        }
      }
    }
  });
  for (int64_t k = 0; k < L.W; ++k) {
    double sw = 0, sb = 0;
    for (int64_t ch = 0; ch < nchunks; ++ch) { sw += pw[ch * L.W + k]; sb += pb[ch * L.W + k]; }
    gw[k] = static_cast<SD>(sw);
    gb[k] = static_cast<SD>(sb);
  }
}

void check_param(const Tensor& t, const Shape& expect, const char* op, const char* arg) {
  if (!t.defined()) return;
  nnutil::check_floating(t, op, arg);
  LUCID_CHECK(t.shape() == expect, ValueError, op, ": argument '", arg, "' expected shape ", shape_str(expect),
              ", got ", shape_str(t.shape()));
}

std::vector<TensorMeta> norm_outputs(const Tensor& x, const NormLayout& L) {
  DType sd = nnutil::stat_dtype(x.dtype());
  return {{x.shape(), x.dtype()}, {{L.Q}, sd}, {{L.Q}, sd}};
}

// Runs the forward kernel; params[0]=weight, params[1]=bias (either may be undefined).
void run_norm_forward(const Tensor& xin, const TensorList& out, const NormLayout& L, const Tensor& weight,
                      const Tensor& bias, double eps, const Tensor& rm, const Tensor& rv, const char* op) {
  Tensor x = xin.contiguous_data();
  std::vector<double> w = nnutil::doubles(weight), b = nnutil::doubles(bias);
  std::vector<double> m = nnutil::doubles(rm), v = nnutil::doubles(rv);
  if (x.numel() == 0 && L.Q == 0) return;
  LUCID_DISPATCH_FLOATING(x.dtype(), op, [&] {
    auto go = [&](auto* mo, auto* ro) {
      norm_forward<scalar_t>(x.data<scalar_t>(), out[0].data<scalar_t>(), mo, ro, L, w.empty() ? nullptr : w.data(),
                             b.empty() ? nullptr : b.data(), eps, m.empty() ? nullptr : m.data(),
                             v.empty() ? nullptr : v.data());
    };
    if (out[1].dtype() == DType::Float64) go(out[1].data<double>(), out[2].data<double>());
    else go(out[1].data<float>(), out[2].data<float>());
  });
}

// VJP shared by the four norms; wi / bi: input index of weight / bias (-1: none).
// Plain backward runs the fused NormBackward kernel. When a graph of the backward is being
// built (create_graph=True) or gradients reach the mean/rstd outputs, the VJP is written with
// core ops instead (including the mean/rstd output terms), so it differentiates again.
TensorList norm_vjp(const VjpContext& c, int64_t kind, int64_t k, bool batch_stats, int wi, int bi) {
  TensorList r(c.input_meta.size());
  const Tensor& x = c.inputs[0];
  const Tensor w = wi >= 0 ? c.inputs[wi] : Tensor();
  const bool stat_grads = c.grads.size() > 2 && (c.grads[1].defined() || c.grads[2].defined());
  if (!GradMode::is_enabled() && !stat_grads) {
    if (!c.grads[0].defined()) return r;
    Attrs a{{"kind", kind}, {"k", k}, {"batch_stats", batch_stats}};
    TensorList g = dispatch(OpId::NormBackward, {c.grads[0], x, c.outputs[1], c.outputs[2], w}, a);
    r[0] = g[0];
    if (wi >= 0 && c.needs_grad[wi]) r[wi] = reshape(g[1], c.input_meta[wi].shape);
    if (bi >= 0 && c.needs_grad[bi]) r[bi] = reshape(g[2], c.input_meta[bi].shape);
    return r;
  }
  const Shape& xs = x.shape();
  NormLayout L = make_layout(kind, xs, k);
  Shape V, Vs;
  IntList red;
  if (kind == kBatch) { V = {L.P, L.Q, L.S}; Vs = {1, L.Q, 1}; red = {0, 2}; }
  else if (kind == kGroup) { V = {xs[0], k, L.S}; Vs = {xs[0], k, 1}; red = {2}; }
  else { V = {1, L.Q, L.S}; Vs = {1, L.Q, 1}; red = {2}; }
  const double n = static_cast<double>(L.P * L.S);
  Tensor xv = reshape(x, V);
  Tensor mean_b = reshape(c.outputs[1], Vs), rstd_b = reshape(c.outputs[2], Vs);
  Tensor xhat = L.centered ? mul(sub(xv, mean_b), rstd_b) : mul(xv, rstd_b);
  Tensor wv;
  int64_t cpg = kind == kGroup ? xs[1] / k : 1, hw = kind == kGroup && cpg ? L.S / cpg : 1;
  if (w.defined()) {
    if (kind == kBatch) wv = reshape(w, {1, L.Q, 1});
    else if (kind == kGroup) wv = reshape(expand(reshape(w, {k, cpg, 1}), {k, cpg, hw}), {1, k, L.S});
    else wv = reshape(w, {1, 1, L.S});
  }
  Tensor g = c.grads[0].defined() ? reshape(c.grads[0], V) : Tensor();
  Tensor gx;
  auto acc = [&](const Tensor& t) { gx = gx.defined() ? add(gx, t) : t; };
  if (g.defined()) {
    Tensor gxh = wv.defined() ? mul(g, wv) : g;
    if (batch_stats) {
      Tensor inner = sub(gxh, mul(xhat, mul_scalar(sum(mul(gxh, xhat), red, true), 1.0 / n)));
      if (L.centered) inner = sub(inner, mul_scalar(sum(gxh, red, true), 1.0 / n));
      acc(mul(inner, rstd_b));
    } else {
      acc(mul(gxh, rstd_b));
    }
  }
  if (batch_stats && L.centered && c.grads[1].defined()) acc(expand(mul_scalar(reshape(c.grads[1], Vs), 1.0 / n), V));
  if (batch_stats && c.grads[2].defined())
    acc(mul_scalar(mul(mul(reshape(c.grads[2], Vs), mul(rstd_b, rstd_b)), xhat), -1.0 / n));
  if (gx.defined() && c.needs_grad[0]) r[0] = reshape(gx, xs);
  if (g.defined()) {
    auto pgrad = [&](const Tensor& t, const Shape& wshape) {
      if (kind == kBatch) return reshape(sum(t, {0, 2}, false), wshape);
      if (kind == kGroup) return reshape(sum(reshape(sum(t, {0}, false), {k, cpg, hw}), {2}, false), wshape);
      return reshape(sum(t, {0, 1}, false), wshape);
    };
    if (wi >= 0 && c.needs_grad[wi]) r[wi] = pgrad(mul(g, xhat), c.input_meta[wi].shape);
    if (bi >= 0 && c.needs_grad[bi]) r[bi] = pgrad(g, c.input_meta[bi].shape);
  }
  return r;
}

}  // namespace

// ---- BatchNorm: inputs (x, running_mean, running_var, weight, bias) -----------------------
LUCID_REGISTER_OP(BatchNorm, "training:bool, momentum:float, eps:float", [] {
  OpDef d;
  d.num_inputs = 5;
  d.nondiff_inputs = {1, 2};
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    nnutil::check_floating(x, "batch_norm", "input");
    LUCID_CHECK(x.ndim() >= 2, ValueError, "batch_norm: expected input with 2 or more dims (N, C, *), got shape ",
                shape_str(x.shape()));
    Shape c{x.shape()[1]};
    check_param(in[1], c, "batch_norm", "running_mean");
    check_param(in[2], c, "batch_norm", "running_var");
    check_param(in[3], c, "batch_norm", "weight");
    check_param(in[4], c, "batch_norm", "bias");
    NormLayout L = make_layout(kBatch, x.shape(), 0);
    if (a.b("training")) {
      LUCID_CHECK(L.P * L.S != 1, ValueError, "batch_norm: expected more than 1 value per channel when training, got input shape ",
                  shape_str(x.shape()));
    } else {
      LUCID_CHECK(in[1].defined() && in[2].defined(), ValueError,
                  "batch_norm: running_mean and running_var must be given when training=False");
    }
    return norm_outputs(x, L);
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    NormLayout L = make_layout(kBatch, in[0].shape(), 0);
    bool tr = a.b("training");
    run_norm_forward(in[0], out, L, in[3], in[4], a.f("eps"), tr ? Tensor() : in[1], tr ? Tensor() : in[2], "batch_norm");
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_inputs = {4};   // bias
  d.unsaved_outputs = {0};  // y: the VJP reads x, mean and rstd (so y.relu_() is legal)
  d.vjp = [](const VjpContext& c) { return norm_vjp(c, kBatch, 0, c.attrs.b("training"), 3, 4); };
  return d;
}());

// running = (1 - momentum) * running + momentum * stat, where stat is the batch mean or, for
// kind "var", the unbiased batch variance recovered from the saved rstd: (1/rstd^2 - eps) * n/(n-1).
LUCID_REGISTER_OP(BatchNormUpdateStats, "momentum:float, eps:float, n:int, kind:str", [] {
  OpDef d;
  d.num_inputs = 2;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs&) {
    LUCID_CHECK(in[0].shape() == in[1].shape(), ValueError, "batch_norm: running stat shape ", shape_str(in[0].shape()),
                " does not match the batch statistic shape ", shape_str(in[1].shape()));
    nnutil::check_floating(in[0], "batch_norm", "running stats");
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    std::vector<double> run = nnutil::doubles(in[0]), st = nnutil::doubles(in[1]);
    double mom = a.f("momentum"), eps = a.f("eps"), n = static_cast<double>(a.i("n"));
    bool var = a.s("kind") == "var";
    Tensor res = Tensor::empty(in[0].shape(), DType::Float64);
    double* r = res.data<double>();
    for (size_t i = 0; i < run.size(); ++i) {
      double s = st[i];
      if (var) s = (1.0 / (s * s) - eps) * (n > 1 ? n / (n - 1) : 1.0);
      r[i] = (1.0 - mom) * run[i] + mom * s;
    }
    cpu::copy_into(out[0], res);
  };
  return d;
}());

Tensor batch_norm(const Tensor& x, const Tensor& rm, const Tensor& rv, const Tensor& w, const Tensor& b, bool training,
                  double momentum, double eps) {
  // In training the op does not read the running stats: they are not passed (nor saved for
  // backward, which would trip the version check after the in-place update below).
  if (training && x.ndim() >= 2) {
    check_param(rm, {x.shape()[1]}, "batch_norm", "running_mean");
    check_param(rv, {x.shape()[1]}, "batch_norm", "running_var");
  }
  TensorList r = dispatch(OpId::BatchNorm, {x, training ? Tensor() : rm, training ? Tensor() : rv, w, b},
                          {{"training", training}, {"momentum", momentum}, {"eps", eps}});
  if (training) {
    NormLayout L = make_layout(kBatch, x.shape(), 0);
    Attrs a{{"momentum", momentum}, {"eps", eps}, {"n", L.P * L.S}};
    if (rm.defined()) dispatch_inplace(OpId::BatchNormUpdateStats, rm, {rm, r[1].detach()}, Attrs(a).set("kind", std::string("mean")));
    if (rv.defined()) dispatch_inplace(OpId::BatchNormUpdateStats, rv, {rv, r[2].detach()}, Attrs(a).set("kind", std::string("var")));
  }
  return r[0];
}

// ---- LayerNorm / RmsNorm: inputs (x, weight, bias) / (x, weight); attr k = normalized ndim ---
static NormLayout check_last_dims(const TensorList& in, const Attrs& a, int64_t kind) {
  const char* op = kind_name(kind);
  const Tensor& x = in[0];
  nnutil::check_floating(x, op, "input");
  const Shape& ns = a.ints("normalized_shape");
  int64_t k = static_cast<int64_t>(ns.size());
  bool ok = k >= 1 && x.ndim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.shape()[x.ndim() - k + i] == ns[i];
  LUCID_CHECK(ok, ValueError, op, ": given normalized_shape=", shape_str(ns), ", expected input with shape [*, ",
              shape_str(ns).substr(1), ", but got input of size ", shape_str(x.shape()));
  for (size_t i = 1; i < in.size(); ++i) check_param(in[i], ns, op, i == 1 ? "weight" : "bias");
  return make_layout(kind, x.shape(), k);
}

LUCID_REGISTER_OP(LayerNorm, "normalized_shape:ints, eps:float", [] {
  OpDef d;
  d.num_inputs = 3;
  d.infer = [](const TensorList& in, const Attrs& a) { return norm_outputs(in[0], check_last_dims(in, a, kLayer)); };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    NormLayout L = make_layout(kLayer, in[0].shape(), static_cast<int64_t>(a.ints("normalized_shape").size()));
    run_norm_forward(in[0], out, L, in[1], in[2], a.f("eps"), Tensor(), Tensor(), "layer_norm");
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_inputs = {2};   // bias
  d.unsaved_outputs = {0};  // y
  d.vjp = [](const VjpContext& c) { return norm_vjp(c, kLayer, static_cast<int64_t>(c.attrs.ints("normalized_shape").size()), true, 1, 2); };
  return d;
}());

LUCID_REGISTER_OP(RmsNorm, "normalized_shape:ints, eps:float", [] {
  OpDef d;
  d.num_inputs = 2;
  d.infer = [](const TensorList& in, const Attrs& a) { return norm_outputs(in[0], check_last_dims(in, a, kRms)); };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    NormLayout L = make_layout(kRms, in[0].shape(), static_cast<int64_t>(a.ints("normalized_shape").size()));
    run_norm_forward(in[0], out, L, in[1], Tensor(), a.f("eps"), Tensor(), Tensor(), "rms_norm");
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_outputs = {0};  // y
  d.vjp = [](const VjpContext& c) { return norm_vjp(c, kRms, static_cast<int64_t>(c.attrs.ints("normalized_shape").size()), true, 1, -1); };
  return d;
}());

// ---- GroupNorm: inputs (x, weight, bias); attr num_groups --------------------------------------
LUCID_REGISTER_OP(GroupNorm, "num_groups:int, eps:float", [] {
  OpDef d;
  d.num_inputs = 3;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    nnutil::check_floating(x, "group_norm", "input");
    LUCID_CHECK(x.ndim() >= 2, ValueError, "group_norm: expected input with 2 or more dims (N, C, *), got shape ",
                shape_str(x.shape()));
    int64_t g = a.i("num_groups"), c = x.shape()[1];
    LUCID_CHECK(g > 0 && c % g == 0, ValueError, "group_norm: expected number of channels in input (", c,
                ") to be divisible by num_groups, got num_groups=", g);
    check_param(in[1], {c}, "group_norm", "weight");
    check_param(in[2], {c}, "group_norm", "bias");
    return norm_outputs(x, make_layout(kGroup, x.shape(), g));
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    NormLayout L = make_layout(kGroup, in[0].shape(), a.i("num_groups"));
    run_norm_forward(in[0], out, L, in[1], in[2], a.f("eps"), Tensor(), Tensor(), "group_norm");
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_inputs = {2};   // bias
  d.unsaved_outputs = {0};  // y
  d.vjp = [](const VjpContext& c) { return norm_vjp(c, kGroup, c.attrs.i("num_groups"), true, 1, 2); };
  return d;
}());

// ---- NormBackward: inputs (g, x, mean, rstd, weight) -> (gx, gweight, gbias) ---------------
LUCID_REGISTER_OP(NormBackward, "kind:int, k:int, batch_stats:bool", [] {
  OpDef d;
  d.num_inputs = 5;
  d.vjp = LUCID_NO_DOUBLE_BACKWARD("norm_backward (batch_norm/layer_norm/group_norm/rms_norm)");
  d.infer = [](const TensorList& in, const Attrs& a) {
    NormLayout L = make_layout(a.i("kind"), in[1].shape(), a.i("k"));
    DType sd = nnutil::stat_dtype(in[1].dtype());
    return std::vector<TensorMeta>{{in[1].shape(), in[1].dtype()}, {{L.W}, sd}, {{L.W}, sd}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    NormLayout L = make_layout(a.i("kind"), in[1].shape(), a.i("k"));
    DType xt = in[1].dtype(), sd = nnutil::stat_dtype(xt);
    Tensor g = nnutil::contig_as(in[0], xt), x = in[1].contiguous_data();
    Tensor mean = nnutil::contig_as(in[2], sd), rstd = nnutil::contig_as(in[3], sd);
    std::vector<double> w = nnutil::doubles(in[4]);
    bool bs = a.b("batch_stats");
    LUCID_DISPATCH_FLOATING(xt, "norm_backward", [&] {
      if (sd == DType::Float64)
        norm_backward<scalar_t, double>(g.data<scalar_t>(), x.data<scalar_t>(), mean.data<double>(), rstd.data<double>(),
                                        w.empty() ? nullptr : w.data(), L, bs, out[0].data<scalar_t>(),
                                        out[1].data<double>(), out[2].data<double>());
      else
        norm_backward<scalar_t, float>(g.data<scalar_t>(), x.data<scalar_t>(), mean.data<float>(), rstd.data<float>(),
                                       w.empty() ? nullptr : w.data(), L, bs, out[0].data<scalar_t>(),
                                       out[1].data<float>(), out[2].data<float>());
    });
  };
  return d;
}());

Tensor layer_norm(const Tensor& x, const Shape& ns, const Tensor& w, const Tensor& b, double eps) {
  return dispatch(OpId::LayerNorm, {x, w, b}, {{"normalized_shape", ns}, {"eps", eps}})[0];
}
Tensor rms_norm(const Tensor& x, const Shape& ns, const Tensor& w, double eps) {
  return dispatch(OpId::RmsNorm, {x, w}, {{"normalized_shape", ns}, {"eps", eps}})[0];
}
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& w, const Tensor& b, double eps) {
  return dispatch(OpId::GroupNorm, {x, w, b}, {{"num_groups", num_groups}, {"eps", eps}})[0];
}

}  // namespace lucid
