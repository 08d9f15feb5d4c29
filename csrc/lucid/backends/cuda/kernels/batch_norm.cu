// CUDA kernels of BatchNorm and BatchNormUpdateStats (records in ops/nn_norm.cpp), computing what
// the CPU's norm kernels (backends/cpu/kernels/norm.cpp) compute over the [P, Q, S] = [N, C,
// spatial] view (ops/nn_layout.h):
//   BatchNorm -> (y, mean, rstd)   training: per channel, mean = sum(x) / n, then
//                                  var = sum((x - mean)^2) / n, rstd = 1 / sqrt(var + eps); eval:
//                                  mean = running_mean, rstd = 1 / sqrt(running_var + eps).
//                                  y = (x - mean) * (rstd * w) + b; mean/rstd are float32 (float64
//                                  for float64 input); weight/bias/running stats of any floating
//                                  dtype.
//   BatchNormUpdateStats           running = (1 - momentum) * running + momentum * stat in double,
//                                  stat the batch mean or the unbiased batch variance recovered
//                                  from rstd: (1/rstd^2 - eps) * n/(n-1); in place on strided
//                                  1-D running stats, the mean and the variance in one launch.
// Training runs on cuDNN's batch-norm kernels (batch_norm_cudnn.cpp), as PyTorch's does, except
// the cases cuDNN does not take (an empty x, 2^31 - 1 or more elements, N > 880801, eps below
// CUDNN_BN_MIN_EPSILON), which run the kernels here: per channel, two passes (sums, then squared
// deviations from the mean) in double, each channel's elements split over enough blocks to fill
// the GPU, deterministic (fixed partition, fixed order), then the statistics and the normalisation
// in float (double for float64). Eval, which has no reduction, always runs the kernels here
// (statistics from the running stats, then the normalisation). The running-stat update stays
// lucid's own op (a tracer sees it as an in-place write) rather than cuDNN's fused update.
#include <cuda_runtime_api.h>

#include <cmath>

#include "lucid/backends/cuda/kernels/batch_norm_cudnn.h"
#include "lucid/backends/cuda/kernels/dnn_scalar.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

// Block-wide sum of one double per thread (kThreads threads); the result in thread 0.
__device__ double block_sum(double v) {
  __shared__ double part[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? part[lane] : 0.0;
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

struct BnGeo {
  int64_t P, Q, Sp;  // the [P, Q, S] view (Sp: spatial size)
  int splits;  // blocks per channel
};

// The element range [b, e) of channel q's P*S elements that block `split` reduces.
__device__ __forceinline__ void split_range(const BnGeo& g, int split, int64_t& b, int64_t& e) {
  const int64_t n = g.P * g.Sp, per = (n + g.splits - 1) / g.splits;
  b = split * per;
  e = b + per < n ? b + per : n;
}

// Partial sums (mean_partials null) or partial squared deviations from channel q's mean (summed
// from the first pass's partials, mean_partials, in a fixed order) of channel q = blockIdx.x, one per block
// (split blockIdx.y of the channel's elements).
template <class S>
__global__ void partial_kernel(const S* x, BnGeo g, const double* mean_partials, double* partials) {
  const int64_t q = blockIdx.x;
  double m = 0;
  if (mean_partials) {
    for (int i = 0; i < g.splits; ++i) m += mean_partials[q * g.splits + i];
    m /= static_cast<double>(g.P * g.Sp);
  }
  int64_t b, e;
  split_range(g, blockIdx.y, b, e);
  const S* xq = x + q * g.Sp;  // row p of channel q starts at xq + p * Q * S
  double acc = 0;
  auto add = [&](double v) {
    if (mean_partials) {
      const double d = v - m;
      acc += d * d;
    } else {
      acc += v;
    }
  };
  if (g.Sp >= 64) {  // row by row: no division per element
    for (int64_t p = b / g.Sp; p * g.Sp < e; ++p) {
      const int64_t s0 = b > p * g.Sp ? b - p * g.Sp : 0, s1 = e - p * g.Sp < g.Sp ? e - p * g.Sp : g.Sp;
      const S* row = xq + p * g.Q * g.Sp;
      for (int64_t s = s0 + threadIdx.x; s < s1; s += kThreads) add(static_cast<double>(to_compute(row[s])));
    }
  } else {
    for (int64_t j = b + threadIdx.x; j < e; j += kThreads)
      add(static_cast<double>(to_compute(xq[(j / g.Sp) * g.Q * g.Sp + j % g.Sp])));
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partials[q * g.splits + blockIdx.y] = acc;
}

// Per channel: the statistics (from the partials, or from the running stats in eval) into
// mean_out/rstd_out (SD: float or double), and the affine map y = (x - shift_mean) * scale + bias
// as three compute-type values per channel in coef.
template <class SD, class C>
__global__ void finalize_kernel(BnGeo g, const double* sum_partials, const double* sq_partials, const void* rmean,
                                const void* rvar, DType rdt, const void* w, DType wdt, const void* bias, DType bdt,
                                double eps, SD* mean_out, SD* rstd_out, C* coef) {
  const int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (q >= g.Q) return;
  double m, r;
  if (rmean) {
    m = load_as_double(rmean, rdt, q);
    r = 1.0 / sqrt(load_as_double(rvar, rdt, q) + eps);
  } else {
    const double n = static_cast<double>(g.P * g.Sp);
    double s = 0, v = 0;
    for (int i = 0; i < g.splits; ++i) s += sum_partials[q * g.splits + i];
    for (int i = 0; i < g.splits; ++i) v += sq_partials[q * g.splits + i];
    m = s / n;
    r = 1.0 / sqrt(v / n + eps);
  }
  mean_out[q] = static_cast<SD>(m);
  rstd_out[q] = static_cast<SD>(r);
  const C wc = w ? static_cast<C>(load_as_double(w, wdt, q)) : C(1);
  const C bc = bias ? static_cast<C>(load_as_double(bias, bdt, q)) : C(0);
  coef[3 * q] = static_cast<C>(m);
  coef[3 * q + 1] = static_cast<C>(r) * wc;
  coef[3 * q + 2] = bc;
}

// I: uint32_t when the element count fits (its divisions are several times cheaper), else int64_t.
template <class S, class I>
__global__ void normalize_kernel(const S* x, S* y, const compute_t<S>* coef, I total, I Q, I S_) {
  using C = compute_t<S>;
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const int64_t q = (i / S_) % Q;
    const C* c = coef + 3 * q;
    y[i] = from_compute<S>((to_compute(x[i]) - c[0]) * c[1] + c[2]);
  }
}

// Blocks per channel: enough blocks overall to fill the GPU (about 1024), each with at least 2048
// elements to reduce.
int bn_splits(int64_t Q, int64_t n) {
  int64_t by_fill = (1024 + Q - 1) / Q, by_work = (n + 2047) / 2048;
  int64_t s = by_fill < by_work ? by_fill : by_work;
  return static_cast<int>(s < 1 ? 1 : (s > 1024 ? 1024 : s));
}

Tensor contig(const Tensor& t) { return t.defined() ? t.contiguous_data() : t; }
const void* ptr_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }
DType dtype_or(const Tensor& t) { return t.defined() ? t.dtype() : DType::Float32; }

void batch_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor &y = out[0], &mean = out[1], &rstd = out[2];
  const nnutil::NormLayout L = nnutil::make_norm_layout(nnutil::kBatch, in[0].shape(), 0);
  if (L.Q == 0) return;
  DeviceGuard guard(y.device());
  const bool training = a.b("training");
  const double eps = a.f("eps");
  if (training && cudnn_batch_norm_train(in[0], in[3], in[4], eps, y, mean, rstd)) return;
  cudaStream_t st = current_stream(y.device());
  const Tensor x = in[0].contiguous_data();
  const Tensor rm = training ? Tensor() : contig(in[1]), rv = training ? Tensor() : contig(in[2]);
  // Running stats share one dtype in every caller; read each as its own anyway.
  LUCID_CHECK(!rm.defined() || rm.dtype() == rv.dtype(), TypeError, "batch_norm: running_mean (",
              dtype_name(rm.dtype()), ") and running_var (", dtype_name(rv.dtype()), ") differ in dtype");
  const Tensor w = contig(in[3]), b = contig(in[4]);
  BnGeo g{L.P, L.Q, L.S, training ? bn_splits(L.Q, L.P * L.S) : 1};
  with_float_storage(x.dtype(), "batch_norm", [&](auto tag) {
    using S = decltype(tag);
    using C = compute_t<S>;
    Tensor partials, coef = Tensor::empty({3 * L.Q}, std::is_same_v<C, double> ? DType::Float64 : DType::Float32,
                                          y.device());
    const double *sums = nullptr, *sqs = nullptr;
    if (training) {
      partials = Tensor::empty({2 * L.Q * g.splits}, DType::Float64, y.device());
      double* ps = static_cast<double*>(partials.data_ptr());
      const dim3 grid(static_cast<unsigned>(L.Q), static_cast<unsigned>(g.splits));
      partial_kernel<S><<<grid, kThreads, 0, st>>>(static_cast<const S*>(x.data_ptr()), g, nullptr, ps);
      check_launch("batch_norm (sums)");
      partial_kernel<S><<<grid, kThreads, 0, st>>>(static_cast<const S*>(x.data_ptr()), g, ps, ps + L.Q * g.splits);
      check_launch("batch_norm (squared deviations)");
      sums = ps;
      sqs = ps + L.Q * g.splits;
    }
    const unsigned qblocks = static_cast<unsigned>((L.Q + kThreads - 1) / kThreads);
    auto finalize = [&](auto* mo, auto* ro) {
      using SD = std::remove_pointer_t<decltype(mo)>;
      finalize_kernel<SD, C><<<qblocks, kThreads, 0, st>>>(g, sums, sqs, ptr_or_null(rm), ptr_or_null(rv), dtype_or(rm),
                                                           ptr_or_null(w), dtype_or(w), ptr_or_null(b), dtype_or(b), eps,
                                                           mo, ro, static_cast<C*>(coef.data_ptr()));
    };
    if (mean.dtype() == DType::Float64) finalize(static_cast<double*>(mean.data_ptr()), static_cast<double*>(rstd.data_ptr()));
    else finalize(static_cast<float*>(mean.data_ptr()), static_cast<float*>(rstd.data_ptr()));
    check_launch("batch_norm (statistics)");
    if (y.numel() > 0) {
      auto normalize = [&](auto index) {
        using I = decltype(index);
        normalize_kernel<S, I><<<grid_for(y.numel(), kThreads), kThreads, 0, st>>>(
            static_cast<const S*>(x.data_ptr()), static_cast<S*>(y.data_ptr()), static_cast<const C*>(coef.data_ptr()),
            static_cast<I>(y.numel()), static_cast<I>(L.Q), static_cast<I>(L.S));
      };
      // 32-bit indices while i + the grid stride cannot wrap.
      if (y.numel() < (int64_t{1} << 31)) normalize(uint32_t{});
      else normalize(int64_t{});
      check_launch("batch_norm (normalize)");
    }
  });
}

// One running statistic's update: its running values, batch statistic and destination (flat
// vectors of any floating dtype and stride); var: the statistic is rstd (see the record).
struct StatUpdate {
  const void* run;
  const void* stat;
  void* out;
  DType rdt, sdt, odt;
  int64_t rstride, sstride, ostride;
  bool var;
};

// Up to two updates (the running mean and variance of one layer) of n elements each in one launch.
__global__ void update_stats_kernel(StatUpdate u0, StatUpdate u1, int updates, int64_t n, double mom, double eps,
                                    double count) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n * updates;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const StatUpdate& u = j < n ? u0 : u1;
    const int64_t i = j < n ? j : j - n;
    double s = load_as_double(u.stat, u.sdt, i * u.sstride);
    if (u.var) s = (1.0 / (s * s) - eps) * (count > 1 ? count / (count - 1) : 1.0);
    store_from_double(u.out, u.odt, i * u.ostride, (1.0 - mom) * load_as_double(u.run, u.rdt, i * u.rstride) + mom * s);
  }
}

// The element stride of t read as a flat vector: 1 when contiguous, its stride when 1-D.
int64_t flat_stride(const Tensor& t, const char* what) {
  if (t.is_contiguous()) return 1;
  LUCID_CHECK(t.ndim() == 1, NotImplementedError, "batch_norm: a non-contiguous ", t.ndim(), "-D ", what,
              " is not supported on CUDA (running statistics are 1-D)");
  return t.strides()[0];
}

// One (running, stat) pair per output (the record's kinds), all in one launch.
void batch_norm_update_stats_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const size_t K = out.size();
  const int64_t n = out[0].numel();
  if (n == 0) return;
  DeviceGuard guard(out[0].device());
  const std::string& kind = a.s("kind");
  StatUpdate u[2]{};
  for (size_t k = 0; k < K; ++k) {
    const Tensor &run = in[k], &stat = in[K + k], &o = out[k];
    for (const Tensor* t : {&run, &stat, &o})
      LUCID_CHECK(is_floating(t->dtype()), TypeError, "batch_norm: running stats expected a floating dtype, got ",
                  dtype_name(t->dtype()));
    u[k] = {run.data_ptr(), stat.data_ptr(), o.data_ptr(), run.dtype(), stat.dtype(), o.dtype(),
            flat_stride(run, "running statistic"), flat_stride(stat, "batch statistic"),
            flat_stride(o, "running statistic"), kind == "var" || (kind == "mean_var" && k == 1)};
  }
  update_stats_kernel<<<grid_for(n * static_cast<int64_t>(K), kThreads), kThreads, 0, current_stream(out[0].device())>>>(
      u[0], u[1], static_cast<int>(K), n, a.f("momentum"), a.f("eps"), static_cast<double>(a.i("n")));
  check_launch("batch_norm_update_stats");
}

}  // namespace

LUCID_REGISTER_KERNEL(BatchNorm, CUDA, batch_norm_kernel);
LUCID_REGISTER_KERNEL(BatchNormUpdateStats, CUDA, batch_norm_update_stats_kernel);

}  // namespace lucid::cuda
