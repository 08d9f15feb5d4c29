// CPU kernels of NllLoss, NllLossBackward, CrossEntropy and CrossEntropyBackward (op records in
// ops/loss_nll.cpp), over the (N, C, D) rows of ClassLayout (ops/nn_layout.h). CrossEntropy fuses
// log_softmax (SLEEF exp per row, backends/cpu/nn_vec.h) with the nll or probability-target sum,
// label smoothing and class weights; its per-row losses are in double, rows in parallel, summed
// in row order. Targets are converted to int64 and validated before any row is read.
#include <algorithm>
#include <cmath>
#include <vector>

#include "lucid/backends/cpu/kernels/nn_operands.h"
#include "lucid/backends/cpu/nn_vec.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

using nnutil::ClassLayout;

// Target indices as int64, validated against the number of classes.
Tensor checked_targets(const Tensor& t, int64_t C, int64_t ignore, const char* op) {
  Tensor i64 = nnutil::contig_as(t, DType::Int64);
  nnutil::check_class_indices(i64.data<int64_t>(), i64.numel(), C, ignore, op);
  return i64;
}

template <class T>
inline double ld(const T* p, int64_t i) { return static_cast<double>(static_cast<compute_t<T>>(p[i])); }

void nll_loss_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  ClassLayout L = nnutil::class_layout(in[0].shape());
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
}

void nll_loss_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  ClassLayout L = nnutil::class_layout(in[1].shape());
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
}

// Per row r = (n, i): loads the C class values (stride D) into buf, leaves exp(x - max) in
// buf and returns the log-sum-exp; *sum receives the sum of buf.
template <class T>
inline double row_lse(const T* xp, const ClassLayout& L, int64_t r, compute_t<T>* buf, double* sum) {
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
  ClassLayout L;
  int64_t ignore, red;
  double eps;
  bool prob;
  std::vector<double> w;
  double wsum = 0;  // sum of class weights
};

CeArgs ce_args(const TensorList& in, const Attrs& a) {
  CeArgs c;
  c.L = nnutil::class_layout(in[0].shape());
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
  const ClassLayout& L = a.L;
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

void cross_entropy_kernel(const TensorList& in, const TensorList& out, const Attrs& attrs) {
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
}

void cross_entropy_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& attrs) {
  CeArgs a = ce_args({in[1], in[2], in[3]}, attrs);
  DType dt = in[1].dtype();
  Tensor x = in[1].contiguous_data();
  Tensor g = nnutil::contig_as(in[0], dt);
  Tensor ti = a.prob ? Tensor() : checked_targets(in[2], a.L.C, a.ignore, "cross_entropy");
  Tensor tf = a.prob ? nnutil::contig_as(in[2], dt) : Tensor();
  const ClassLayout& L = a.L;
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
}

}  // namespace

LUCID_REGISTER_KERNEL(NllLoss, CPU, nll_loss_kernel);
LUCID_REGISTER_KERNEL(NllLossBackward, CPU, nll_loss_backward_kernel);
LUCID_REGISTER_KERNEL(CrossEntropy, CPU, cross_entropy_kernel);
LUCID_REGISTER_KERNEL(CrossEntropyBackward, CPU, cross_entropy_backward_kernel);

}  // namespace lucid::cpu
