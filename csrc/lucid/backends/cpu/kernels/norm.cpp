// CPU kernels of the norms (op records in ops/nn_norm.cpp): one forward and one backward over
// the [P, Q, S] view of NormLayout (ops/nn_layout.h), statistics per q accumulated in double,
// parallel over q; the backward sums the affine-parameter gradients in fixed chunks of q (at most
// 32), so results do not depend on the thread count. Also BatchNormUpdateStats, the running-stat
// update: running = (1 - momentum) * running + momentum * stat, in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "lucid/backends/cpu/kernels/nn_operands.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

using nnutil::kBatch;
using nnutil::kGroup;
using nnutil::kLayer;
using nnutil::kRms;
using nnutil::NormLayout;

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

void batch_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(kBatch, in[0].shape(), 0);
  bool tr = a.b("training");
  run_norm_forward(in[0], out, L, in[3], in[4], a.f("eps"), tr ? Tensor() : in[1], tr ? Tensor() : in[2], "batch_norm");
}

// One (running, stat) pair per output (the record's kinds): out k from in[k] and in[K + k].
void batch_norm_update_stats_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  double mom = a.f("momentum"), eps = a.f("eps"), n = static_cast<double>(a.i("n"));
  const std::string& kind = a.s("kind");
  const size_t K = out.size();
  for (size_t k = 0; k < K; ++k) {
    std::vector<double> run = nnutil::doubles(in[k]), st = nnutil::doubles(in[K + k]);
    bool var = kind == "var" || (kind == "mean_var" && k == 1);
    Tensor res = Tensor::empty(in[k].shape(), DType::Float64);
    double* r = res.data<double>();
    for (size_t i = 0; i < run.size(); ++i) {
      double s = st[i];
      if (var) s = (1.0 / (s * s) - eps) * (n > 1 ? n / (n - 1) : 1.0);
      r[i] = (1.0 - mom) * run[i] + mom * s;
    }
    cpu::copy_into(out[k], res);
  }
}

void layer_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(kLayer, in[0].shape(), static_cast<int64_t>(a.ints("normalized_shape").size()));
  run_norm_forward(in[0], out, L, in[1], in[2], a.f("eps"), Tensor(), Tensor(), "layer_norm");
}

void rms_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(kRms, in[0].shape(), static_cast<int64_t>(a.ints("normalized_shape").size()));
  run_norm_forward(in[0], out, L, in[1], Tensor(), a.f("eps"), Tensor(), Tensor(), "rms_norm");
}

void group_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(kGroup, in[0].shape(), a.i("num_groups"));
  run_norm_forward(in[0], out, L, in[1], in[2], a.f("eps"), Tensor(), Tensor(), "group_norm");
}

void norm_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(a.i("kind"), in[1].shape(), a.i("k"));
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
}

}  // namespace

LUCID_REGISTER_KERNEL(BatchNorm, CPU, batch_norm_kernel);
LUCID_REGISTER_KERNEL(BatchNormUpdateStats, CPU, batch_norm_update_stats_kernel);
LUCID_REGISTER_KERNEL(LayerNorm, CPU, layer_norm_kernel);
LUCID_REGISTER_KERNEL(RmsNorm, CPU, rms_norm_kernel);
LUCID_REGISTER_KERNEL(GroupNorm, CPU, group_norm_kernel);
LUCID_REGISTER_KERNEL(NormBackward, CPU, norm_backward_kernel);

}  // namespace lucid::cpu
