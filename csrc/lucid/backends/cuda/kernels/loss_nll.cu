// CUDA kernels of NllLoss, NllLossBackward, CrossEntropy and CrossEntropyBackward (op records in
// ops/loss_nll.cpp), over the (N, C, D) rows of ClassLayout (ops/nn_layout.h), with the CPU
// kernel's formulas (backends/cpu/kernels/loss_nll.cpp): class weights, ignore_index, label
// smoothing, class-probability targets; per-row losses in double, 'mean' dividing by the summed
// target weights (class targets; 0/0 = nan when every target is ignored, as torch) or by the
// number of rows (probability targets). CrossEntropy runs one block per row: the row max in the
// compute type, exp(x - max) in the compute type (CUDA's expf for float: within an ulp or two of
// the CPU's SLEEF exp), sums in double. Row sums are deterministic (fixed-shape block and
// two-pass sums). Class targets are validated on the device without the host waiting
// (deferred_check.h): a target out of range (not ignore_index) makes its row's loss and gradient
// NaN, and the CPU's IndexError is raised at the host's next synchronisation with the device (a
// read of a result, synchronize(), the end of backward()). The backward kernels do not check
// again (the forward's check covers the same saved targets); they skip no memory safety: a bad
// target is never used as an address.
#include <cfloat>

#include "lucid/backends/cuda/deferred_check.h"
#include "lucid/backends/cuda/index_check.cuh"
#include "lucid/backends/cuda/kernels/nn_device.cuh"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

using nnutil::ClassLayout;

// A class target outside [0, C) that is not ignore_index: its row gives NaN.
__device__ __forceinline__ bool bad_class(int64_t c, int64_t C, int64_t ignore) { return c != ignore && (c < 0 || c >= C); }

__global__ void check_targets_kernel(const int64_t* t, int64_t n, int64_t C, int64_t ignore, BadIndexRecord* bad) {
  for (int64_t i = global_index(); i < n; i += global_stride())
    if (bad_class(t[i], C, ignore)) record_bad_index(bad, t[i], i);
}

// Targets as contiguous int64 on the device. The forward (check = true) queues their validation
// like the CPU's checked_targets, deferred (see the header); the backward does not check again.
Tensor targets_of(const Tensor& t, int64_t C, int64_t ignore, const char* op, bool check) {
  if (check) raise_deferred_errors(false);  // an earlier call's failed check surfaces here, if known
  Tensor i64 = contig_as(t, DType::Int64);
  if (!check || i64.numel() == 0) return i64;
  BadIndexFlag flag(i64.device());
  check_targets_kernel<<<grid_for(i64.numel()), kThreads, 0, current_stream(i64.device())>>>(
      i64.data<int64_t>(), i64.numel(), C, ignore, flag.get());
  check_launch("class targets check");
  defer_check(i64.device(), flag, [C, ignore, op](int64_t v, int64_t) {
    nnutil::check_class_indices(&v, 1, C, ignore, op);  // raises the CPU's IndexError
  });
  return i64;
}

// Class weights as float64 on the device (null when undefined).
const double* weights_of(const Tensor& w, Tensor& keep) {
  if (!w.defined()) return nullptr;
  keep = contig_as(w, DType::Float64);
  return keep.data<double>();
}

__device__ __forceinline__ double wgt(const double* w, int64_t c) { return w ? w[c] : 1.0; }

constexpr double kNaN = __builtin_nan("");

struct ArraySum {
  const double* p;
  __device__ double operator()(int64_t i) const { return p[i]; }
};

// ---- NllLoss ----------------------------------------------------------------------------------
// Per row: loss[r] = -w[c] x[n, c, i] and weight[r] = w[c] (both 0 for an ignored target).
template <class D>
__global__ void nll_rows_kernel(const D* x, const int64_t* t, const double* w, ClassLayout L, int64_t ignore, double* loss,
                                double* wt) {
  for (int64_t r = global_index(); r < L.N * L.D; r += global_stride()) {
    int64_t n = r / L.D, i = r % L.D, c = t[r];
    double l = 0, ww = 0;
    if (bad_class(c, L.C, ignore)) {
      l = ww = kNaN;
    } else if (c != ignore) {
      ww = wgt(w, c);
      l = -ww * static_cast<double>(to_compute(x[(n * L.C + c) * L.D + i]));
    }
    loss[r] = l;
    wt[r] = ww;
  }
}

template <class D>
__global__ void store_rows_kernel(D* o, const double* v, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) o[i] = from_compute<D>(v[i]);
}

// o[0] = sum (or sum / total for 'mean'); tw[0] = total when tw is given.
template <class D>
__global__ void store_loss_kernel(D* o, D* tw, const double* sum, const double* total, bool mean) {
  if (o) o[0] = from_compute<D>(mean ? sum[0] / total[0] : sum[0]);
  if (tw) tw[0] = from_compute<D>(total[0]);
}

void nll_loss(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  const Device dev = out[0].device();
  cudaStream_t s = current_stream(dev);
  ClassLayout L = nnutil::class_layout(in[0].shape());
  int64_t ignore = a.i("ignore_index"), red = a.i("reduction"), rows = L.N * L.D;
  Tensor t = targets_of(in[1], L.C, ignore, "nll_loss", true);
  Tensor x = in[0].contiguous_data(), wk;
  const double* w = weights_of(in[2], wk);
  Tensor loss = Tensor::empty({rows}, DType::Float64, dev), wt = Tensor::empty({rows}, DType::Float64, dev);
  LUCID_DISPATCH_FLOATING(x.dtype(), "nll_loss", [&] {
    using D = device_t<scalar_t>;
    if (rows > 0) {
      nll_rows_kernel<<<grid_for(rows), kThreads, 0, s>>>(x.data<D>(), t.data<int64_t>(), w, L, ignore, loss.data<double>(),
                                                          wt.data<double>());
      check_launch("nll_loss");
    }
    Tensor total = device_sum(dev, ArraySum{wt.data<double>()}, rows);
    if (red == nnutil::kNone) {
      if (rows > 0) {
        store_rows_kernel<<<grid_for(rows), kThreads, 0, s>>>(out[0].data<D>(), loss.data<double>(), rows);
        check_launch("nll_loss");
      }
      store_loss_kernel<D><<<1, 1, 0, s>>>(nullptr, out[1].data<D>(), nullptr, total.data<double>(), false);
    } else {
      Tensor sum = device_sum(dev, ArraySum{loss.data<double>()}, rows);
      store_loss_kernel<D><<<1, 1, 0, s>>>(out[0].data<D>(), out[1].data<D>(), sum.data<double>(), total.data<double>(),
                                           red == nnutil::kMean);
    }
    check_launch("nll_loss");
  });
}

template <class D>
__global__ void nll_backward_kernel(D* o, const D* gp, const int64_t* t, const double* w, const double* tw, ClassLayout L,
                                    int64_t ignore, int64_t red) {
  for (int64_t r = global_index(); r < L.N * L.D; r += global_stride()) {
    int64_t c = t[r];
    if (c == ignore) continue;
    int64_t n = r / L.D, i = r % L.D;
    if (bad_class(c, L.C, ignore)) {  // the whole row NaN
      for (int64_t k = 0; k < L.C; ++k) o[(n * L.C + k) * L.D + i] = from_compute<D>(kNaN);
      continue;
    }
    double gv = static_cast<double>(to_compute(red == nnutil::kNone ? gp[r] : gp[0]));
    if (red == nnutil::kMean) gv /= tw[0];
    o[(n * L.C + c) * L.D + i] = from_compute<D>(-wgt(w, c) * gv);
  }
}

// inputs (grad, input, target, weight, total_weight)
void nll_loss_backward(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  cudaStream_t s = current_stream(out[0].device());
  ClassLayout L = nnutil::class_layout(in[1].shape());
  int64_t ignore = a.i("ignore_index"), red = a.i("reduction"), rows = L.N * L.D;
  Tensor t = targets_of(in[2], L.C, ignore, "nll_loss", false);
  DType dt = in[1].dtype();
  Tensor gr = contig_as(in[0], dt), wk, twk = contig_as(in[4], DType::Float64);
  const double* w = weights_of(in[3], wk);
  if (out[0].numel() == 0) return;
  // All-zero bits are +0 in every floating dtype: the CPU's fill with C(0).
  check_cuda(cudaMemsetAsync(out[0].data_ptr(), 0, out[0].numel() * itemsize(dt), s), "cudaMemsetAsync (nll_loss backward)");
  LUCID_DISPATCH_FLOATING(dt, "nll_loss_backward", [&] {
    using D = device_t<scalar_t>;
    nll_backward_kernel<<<grid_for(rows), kThreads, 0, s>>>(out[0].data<D>(), gr.data<D>(), t.data<int64_t>(), w,
                                                             twk.data<double>(), L, ignore, red);
    check_launch("nll_loss_backward");
  });
}

// ---- CrossEntropy -----------------------------------------------------------------------------
struct CeArgs {
  ClassLayout L;
  int64_t ignore, red;
  double eps;
  const double* w;     // class weights or null
  const double* wsum;  // device: sum of class weights (C without weights)
};

// exp in the compute type (expf for float, as the CPU computes float rows in float).
template <class C>
__device__ __forceinline__ C cexp(C v) {
  if constexpr (std::is_same_v<C, float>) return expf(v);
  else return exp(v);
}

// The row's max m (in the compute type; -inf rows use 0, as the CPU) and s = sum exp(x - m);
// returns lse = m + log(s). base points at class 0 of the row, classes stride D apart.
template <class D>
__device__ double row_lse(const D* base, const ClassLayout& L, compute_t<D>* mx_out, double* s_out, compute_t<D>* cscratch,
                          double* dscratch) {
  using C = compute_t<D>;
  C mx = -INFINITY;
  for (int64_t c = threadIdx.x; c < L.C; c += blockDim.x) {
    C v = to_compute(base[c * L.D]);
    mx = (v > mx || v != v) ? v : mx;  // NaN propagates, as the CPU's max
  }
  mx = block_max(mx, cscratch);
  if (isinf(mx) && mx < 0) mx = 0;
  double s = 0;
  for (int64_t c = threadIdx.x; c < L.C; c += blockDim.x) s += static_cast<double>(cexp<C>(to_compute(base[c * L.D]) - mx));
  s = block_sum_all(s, dscratch);
  *mx_out = mx;
  *s_out = s;
  return static_cast<double>(mx) + log(s);
}

// One block per row: loss[r] and the target weight wt[r] (class targets).
template <class D>
__global__ void ce_rows_kernel(const D* x, const D* tpf, const int64_t* tpi, CeArgs a, double* loss, double* wt) {
  using C = compute_t<D>;
  __shared__ C cscratch[32];
  __shared__ double dscratch[32];
  const ClassLayout& L = a.L;
  double Cd = static_cast<double>(L.C);
  for (int64_t r = blockIdx.x; r < L.N * L.D; r += gridDim.x) {
    int64_t n = r / L.D, i = r % L.D;
    const D* base = x + n * L.C * L.D + i;
    if (!tpf && tpi[r] == a.ignore) {
      if (threadIdx.x == 0) { loss[r] = 0; wt[r] = 0; }
      continue;
    }
    C mx;
    double s;
    double lse = row_lse(base, L, &mx, &s, cscratch, dscratch);
    double l = 0;
    if (tpf) {
      for (int64_t c = threadIdx.x; c < L.C; c += blockDim.x) {
        double t = static_cast<double>(to_compute(tpf[(n * L.C + c) * L.D + i])) * (1.0 - a.eps) + a.eps / Cd;
        l -= wgt(a.w, c) * t * (static_cast<double>(to_compute(base[c * L.D])) - lse);
      }
      l = block_sum_all(l, dscratch);
      if (threadIdx.x == 0) loss[r] = l;
      continue;
    }
    int64_t tc = tpi[r];
    if (bad_class(tc, L.C, a.ignore)) {
      if (threadIdx.x == 0) { loss[r] = kNaN; wt[r] = kNaN; }
      continue;
    }
    double smooth = 0;
    if (a.eps > 0) {
      for (int64_t c = threadIdx.x; c < L.C; c += blockDim.x)
        smooth -= wgt(a.w, c) * (static_cast<double>(to_compute(base[c * L.D])) - lse);
      smooth = block_sum_all(smooth, dscratch);
    }
    if (threadIdx.x == 0) {
      double nll = -wgt(a.w, tc) * (static_cast<double>(to_compute(base[tc * L.D])) - lse);
      loss[r] = (1.0 - a.eps) * nll + a.eps / Cd * smooth;
      wt[r] = wgt(a.w, tc);
    }
  }
}

CeArgs ce_args(const TensorList& in, const Attrs& attrs, Tensor& wk, Tensor& wsum) {
  CeArgs c;
  c.L = nnutil::class_layout(in[0].shape());
  c.ignore = attrs.i("ignore_index");
  c.red = attrs.i("reduction");
  c.eps = attrs.f("label_smoothing");
  c.w = weights_of(in[2], wk);
  if (c.w) {
    wsum = device_sum(in[0].device(), ArraySum{c.w}, c.L.C);
  } else {
    wsum = device_scalar<double>(in[0].device(), DType::Float64, static_cast<double>(c.L.C));
  }
  c.wsum = wsum.data<double>();
  return c;
}

void cross_entropy(const TensorList& in, const TensorList& out, const Attrs& attrs) {
  DeviceGuard g(out[0].device());
  const Device dev = out[0].device();
  cudaStream_t s = current_stream(dev);
  Tensor wk, wsum;
  CeArgs a = ce_args(in, attrs, wk, wsum);
  bool prob = is_floating(in[1].dtype());
  DType dt = in[0].dtype();
  Tensor x = in[0].contiguous_data();
  Tensor ti = prob ? Tensor() : targets_of(in[1], a.L.C, a.ignore, "cross_entropy", true);
  Tensor tf = prob ? contig_as(in[1], dt) : Tensor();
  int64_t rows = a.L.N * a.L.D;
  Tensor loss = Tensor::empty({rows}, DType::Float64, dev), wt = Tensor::empty({rows}, DType::Float64, dev);
  LUCID_DISPATCH_FLOATING(dt, "cross_entropy", [&] {
    using D = device_t<scalar_t>;
    if (rows > 0) {
      ce_rows_kernel<<<row_blocks(rows), row_threads(a.L.C), 0, s>>>(x.data<D>(), prob ? tf.data<D>() : nullptr,
                                                         prob ? nullptr : ti.data<int64_t>(), a, loss.data<double>(),
                                                         wt.data<double>());
      check_launch("cross_entropy");
    }
    if (a.red == nnutil::kNone) {
      if (rows == 0) return;
      store_rows_kernel<<<grid_for(rows), kThreads, 0, s>>>(out[0].data<D>(), loss.data<double>(), rows);
      check_launch("cross_entropy");
      return;
    }
    Tensor sum = device_sum(dev, ArraySum{loss.data<double>()}, rows);
    Tensor total;
    if (prob) {
      total = device_scalar<double>(dev, DType::Float64, static_cast<double>(rows));
    } else {
      total = device_sum(dev, ArraySum{wt.data<double>()}, rows);
    }
    store_loss_kernel<D><<<1, 1, 0, s>>>(out[0].data<D>(), nullptr, sum.data<double>(), total.data<double>(),
                                         a.red == nnutil::kMean);
    check_launch("cross_entropy");
  });
}

// Target weight of row r for the 'mean' denominator (0 when ignored).
struct TargetWeightAt {
  const int64_t* t;
  const double* w;
  int64_t ignore;
  int64_t C;
  __device__ double operator()(int64_t r) const {
    return t[r] == ignore ? 0.0 : bad_class(t[r], C, ignore) ? kNaN : wgt(w, t[r]);
  }
};

// One block per row: d input (and d target for probability targets), the CPU's formulas.
template <class D>
__global__ void ce_backward_kernel(const D* x, const D* gp, const D* tfp, const int64_t* tip, CeArgs a, const double* denom,
                                   D* gx, D* gt) {
  using C = compute_t<D>;
  __shared__ C cscratch[32];
  __shared__ double dscratch[32];
  const ClassLayout& L = a.L;
  double Cd = static_cast<double>(L.C);
  for (int64_t r = blockIdx.x; r < L.N * L.D; r += gridDim.x) {
    int64_t n = r / L.D, i = r % L.D;
    auto at = [&](int64_t c) { return (n * L.C + c) * L.D + i; };
    double gs = static_cast<double>(to_compute(a.red == nnutil::kNone ? gp[r] : gp[0]));
    if (a.red == nnutil::kMean) gs /= denom[0];
    if (!tfp && tip[r] == a.ignore) {
      for (int64_t c = threadIdx.x; c < L.C; c += blockDim.x) gx[at(c)] = from_compute<D>(0.0);
      continue;
    }
    const D* base = x + n * L.C * L.D + i;
    C mx;
    double s;
    double lse = row_lse(base, L, &mx, &s, cscratch, dscratch);
    double inv = 1.0 / s;
    if (tfp) {
      double swt = 0;
      for (int64_t c = threadIdx.x; c < L.C; c += blockDim.x)
        swt += wgt(a.w, c) * (static_cast<double>(to_compute(tfp[at(c)])) * (1.0 - a.eps) + a.eps / Cd);
      swt = block_sum_all(swt, dscratch);
      for (int64_t c = threadIdx.x; c < L.C; c += blockDim.x) {
        double t = static_cast<double>(to_compute(tfp[at(c)])) * (1.0 - a.eps) + a.eps / Cd;
        C e = cexp<C>(to_compute(base[c * L.D]) - mx);
        double p = static_cast<double>(e) * inv;
        gx[at(c)] = from_compute<D>(gs * (p * swt - wgt(a.w, c) * t));
        gt[at(c)] = from_compute<D>(-gs * (1.0 - a.eps) * wgt(a.w, c) * (static_cast<double>(to_compute(x[at(c)])) - lse));
      }
      continue;
    }
    int64_t tc = tip[r];
    if (bad_class(tc, L.C, a.ignore)) {
      for (int64_t c = threadIdx.x; c < L.C; c += blockDim.x) gx[at(c)] = from_compute<D>(kNaN);
      continue;
    }
    double wtc = wgt(a.w, tc);
    double k1 = gs * ((1.0 - a.eps) * wtc + a.eps / Cd * a.wsum[0]) * inv, k2 = gs * a.eps / Cd;
    for (int64_t c = threadIdx.x; c < L.C; c += blockDim.x) {
      double e = static_cast<double>(cexp<C>(to_compute(base[c * L.D]) - mx));
      double v = k1 * e - k2 * wgt(a.w, c);
      if (c == tc) v -= gs * (1.0 - a.eps) * wtc;
      gx[at(c)] = from_compute<D>(v);
    }
  }
}

// inputs (grad, input, target, weight) -> (d input, d target)
void cross_entropy_backward(const TensorList& in, const TensorList& out, const Attrs& attrs) {
  DeviceGuard g(out[0].device());
  const Device dev = out[0].device();
  cudaStream_t s = current_stream(dev);
  Tensor wk, wsum;
  CeArgs a = ce_args({in[1], in[2], in[3]}, attrs, wk, wsum);
  bool prob = is_floating(in[2].dtype());
  DType dt = in[1].dtype();
  Tensor x = in[1].contiguous_data(), gr = contig_as(in[0], dt);
  Tensor ti = prob ? Tensor() : targets_of(in[2], a.L.C, a.ignore, "cross_entropy", false);
  Tensor tf = prob ? contig_as(in[2], dt) : Tensor();
  int64_t rows = a.L.N * a.L.D;
  if (rows == 0 || a.L.C == 0) return;
  Tensor denom;
  if (prob) {
    denom = device_scalar<double>(dev, DType::Float64, static_cast<double>(rows));
  } else {
    denom = device_sum(dev, TargetWeightAt{ti.data<int64_t>(), a.w, a.ignore, a.L.C}, rows);
  }
  LUCID_DISPATCH_FLOATING(dt, "cross_entropy_backward", [&] {
    using D = device_t<scalar_t>;
    ce_backward_kernel<<<row_blocks(rows), row_threads(a.L.C), 0, s>>>(x.data<D>(), gr.data<D>(), prob ? tf.data<D>() : nullptr,
                                                            prob ? nullptr : ti.data<int64_t>(), a, denom.data<double>(),
                                                            out[0].data<D>(), prob ? out[1].data<D>() : nullptr);
    check_launch("cross_entropy_backward");
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(NllLoss, CUDA, nll_loss);
LUCID_REGISTER_KERNEL(NllLossBackward, CUDA, nll_loss_backward);
LUCID_REGISTER_KERNEL(CrossEntropy, CUDA, cross_entropy);
LUCID_REGISTER_KERNEL(CrossEntropyBackward, CUDA, cross_entropy_backward);

}  // namespace lucid::cuda
