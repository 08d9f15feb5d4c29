// CUDA kernels of LayerNorm, RmsNorm, GroupNorm and NormBackward (records in ops/nn_norm.cpp), over
// the [P, Q, S] view of NormLayout (ops/nn_layout.h), the CPU's math (backends/cpu/kernels/norm.cpp):
// a block per q takes the statistics over (p, s) in double, two passes (mean, then squared
// deviations), writes mean and rstd (float32, float64 for float64 inputs) and normalises in the
// compute type. The backward runs a block per q for the input gradient and the per-channel sums of
// the affine gradients; the parameter gradients are then summed in a fixed order (a column pass
// over q for layer/rms norm, whose parameter index is s; a pass over the q of each channel for
// group/batch norm), so results do not depend on scheduling. Weights and biases are read as
// float64 copies on the device. BatchNorm's forward is batch_norm.cu's; BatchNorm's backward with
// batch statistics runs on cuDNN (batch_norm_cudnn.cpp) where cuDNN takes the case, else here.
#include <cub/block/block_reduce.cuh>

#include "lucid/backends/cuda/kernels/batch_norm_cudnn.h"
#include "lucid/backends/cuda/kernels/reduce_driver.cuh"
#include "lucid/ops/nn_layout.h"

namespace lucid::cuda {

namespace {

using nnutil::NormLayout;

constexpr int kNormThreads = 256;

// Kernel-side copy of a NormLayout.
struct NormGeo {
  int64_t P, Q, S, qmod, qmul, sdiv;
  bool centered;
  __device__ int64_t idx(int64_t q, int64_t s) const { return (q % qmod) * qmul + s / sdiv; }
  __device__ bool per_elem() const { return qmod == 1 && sdiv == 1; }
  // Flat offset of element (p, q, s) of the contiguous [P, Q, S] view.
  __device__ int64_t at(int64_t q, int64_t p, int64_t s) const { return p * Q * S + q * S + s; }
};

NormGeo geo_of(const NormLayout& L) { return {L.P, L.Q, L.S, L.qmod, L.qmul, L.sdiv, L.centered}; }

// Sum of v over the block, returned to every thread.
__device__ inline double block_sum(double v) {
  using BlockReduce = cub::BlockReduce<double, kNormThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ double result;
  double s = BlockReduce(temp).Sum(v);
  if (threadIdx.x == 0) result = s;
  __syncthreads();
  double r = result;
  __syncthreads();
  return r;
}

template <class C>
__device__ inline C param(const double* p, int64_t k, C dflt) {
  return p ? static_cast<C>(p[k]) : dflt;
}

template <class T, class SD>
__global__ void norm_forward_kernel(const T* x, T* y, SD* mean_out, SD* rstd_out, NormGeo L, const double* w,
                                    const double* b, double eps) {
  using C = compute_t<T>;
  const int64_t q = blockIdx.x, count = L.P * L.S;
  const double n = static_cast<double>(count);
  double m = 0;
  if (L.centered) {
    double acc = 0;
    for (int64_t i = threadIdx.x; i < count; i += kNormThreads) acc += static_cast<double>(load(x, L.at(q, i / L.S, i % L.S)));
    m = block_sum(acc) / n;
  }
  double acc = 0;
  for (int64_t i = threadIdx.x; i < count; i += kNormThreads) {
    double d = static_cast<double>(load(x, L.at(q, i / L.S, i % L.S))) - m;
    acc += d * d;
  }
  const double r = 1.0 / sqrt(block_sum(acc) / n + eps);
  if (threadIdx.x == 0) {
    mean_out[q] = static_cast<SD>(m);
    rstd_out[q] = static_cast<SD>(r);
  }
  const C mc = static_cast<C>(m), rc = static_cast<C>(r);
  const bool per_elem = L.per_elem();
  for (int64_t i = threadIdx.x; i < count; i += kNormThreads) {
    const int64_t s = i % L.S, off = L.at(q, i / L.S, s), k = L.idx(q, s);
    const C wv = param(w, k, C(1)), bv = param(b, k, C(0)), xv = load(x, off);
    store(y, off, per_elem ? (xv - mc) * rc * wv + bv : (xv - mc) * (rc * wv) + bv);
  }
}

// A float64 contiguous device copy of a parameter (undefined stays undefined).
Tensor params_f64(const Tensor& t) { return t.defined() ? contiguous_as(t, DType::Float64) : Tensor(); }
const double* ptr(const Tensor& t) { return t.defined() ? t.data<double>() : nullptr; }

void run_norm_forward(const Tensor& xin, const TensorList& out, const NormLayout& L, const Tensor& weight,
                      const Tensor& bias, double eps, const char* op) {
  LUCID_CHECK(out[0].is_contiguous(), Error, op, ": the output must be contiguous");
  DeviceGuard g(out[0].device());
  if (L.Q == 0) return;
  Tensor x = xin.contiguous_data();
  Tensor w = params_f64(weight), b = params_f64(bias);
  cudaStream_t stream = current_stream(out[0].device());
  LUCID_DISPATCH_FLOATING(x.dtype(), op, [&] {
    auto go = [&](auto* mo, auto* ro) {
      using SD = std::remove_pointer_t<decltype(mo)>;
      norm_forward_kernel<scalar_t, SD><<<static_cast<unsigned>(L.Q), kNormThreads, 0, stream>>>(
          x.data<scalar_t>(), out[0].data<scalar_t>(), mo, ro, geo_of(L), ptr(w), ptr(b), eps);
      check_launch(op);
    };
    if (out[1].dtype() == DType::Float64) go(out[1].data<double>(), out[2].data<double>());
    else go(out[1].data<float>(), out[2].data<float>());
  });
}

void layer_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(nnutil::kLayer, in[0].shape(), static_cast<int64_t>(a.ints("normalized_shape").size()));
  run_norm_forward(in[0], out, L, in[1], in[2], a.f("eps"), "layer_norm");
}

void rms_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(nnutil::kRms, in[0].shape(), static_cast<int64_t>(a.ints("normalized_shape").size()));
  run_norm_forward(in[0], out, L, in[1], Tensor(), a.f("eps"), "rms_norm");
}

void group_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(nnutil::kGroup, in[0].shape(), a.i("num_groups"));
  run_norm_forward(in[0], out, L, in[1], in[2], a.f("eps"), "group_norm");
}

// ---- NormBackward -------------------------------------------------------------------------------------
// Block per q: the input gradient, and (not per_elem) the per-channel sums sg = sum g and
// sgx = sum g * xhat of channel j of q into part_g / part_gx[q * nch + j].
template <class T, class SD>
__global__ void norm_backward_kernel(const T* g, const T* x, const SD* mean, const SD* rstd, const double* w, NormGeo L,
                                     bool batch_stats, T* gx, double* part_g, double* part_gx) {
  using C = compute_t<T>;
  const int64_t q = blockIdx.x, count = L.P * L.S;
  const double n = static_cast<double>(count);
  const double m = static_cast<double>(mean[q]), r = static_cast<double>(rstd[q]);
  double sum_gw = 0, sum_gwxh = 0;
  if (L.per_elem()) {
    double a0 = 0, a1 = 0;
    for (int64_t i = threadIdx.x; i < count; i += kNormThreads) {
      const int64_t s = i % L.S, off = L.at(q, i / L.S, s);
      double gv = static_cast<double>(load(g, off));
      double xh = (static_cast<double>(load(x, off)) - m) * r;
      double gwv = gv * static_cast<double>(param(w, L.idx(q, s), C(1)));
      a0 += gwv;
      a1 += gwv * xh;
    }
    sum_gw = block_sum(a0);
    sum_gwxh = block_sum(a1);
  } else {
    const int64_t nch = L.S / L.sdiv, width = L.P * L.sdiv;
    for (int64_t j = 0; j < nch; ++j) {
      double a0 = 0, a1 = 0;
      for (int64_t i = threadIdx.x; i < width; i += kNormThreads) {
        const int64_t off = L.at(q, i / L.sdiv, j * L.sdiv + i % L.sdiv);
        double gv = static_cast<double>(load(g, off));
        a0 += gv;
        a1 += gv * (static_cast<double>(load(x, off)) - m) * r;
      }
      const double sg = block_sum(a0), sgx = block_sum(a1);
      const double wk = static_cast<double>(param(w, L.idx(q, j * L.sdiv), C(1)));
      if (threadIdx.x == 0) {
        part_g[q * nch + j] = sg;
        part_gx[q * nch + j] = sgx;
      }
      sum_gw += wk * sg;
      sum_gwxh += wk * sgx;
    }
  }
  const C rc = static_cast<C>(r), mc = static_cast<C>(m);
  const C ac = batch_stats && L.centered ? static_cast<C>(sum_gw / n) : C(0);
  const C bco = batch_stats ? static_cast<C>(sum_gwxh / n) : C(0);
  for (int64_t i = threadIdx.x; i < count; i += kNormThreads) {
    const int64_t s = i % L.S, off = L.at(q, i / L.S, s);
    const C xh = (load(x, off) - mc) * rc;
    store(gx, off, rc * (load(g, off) * param(w, L.idx(q, s), C(1)) - ac - xh * bco));
  }
}

// per_elem (layer/rms norm, parameter index s): gw[s] = sum over q, p of g * xhat and gb[s] =
// sum of g, split over q into nsplit partial rows (part[sp * S + s]).
template <class T, class SD>
__global__ void norm_param_cols_kernel(const T* g, const T* x, const SD* mean, const SD* rstd, NormGeo L, int64_t qchunk,
                                       double* part_w, double* part_b) {
  const int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= L.S) return;
  const int64_t sp = blockIdx.y, q0 = sp * qchunk, q1 = min(L.Q, q0 + qchunk);
  double sw = 0, sb = 0;
  for (int64_t q = q0; q < q1; ++q) {
    const double m = static_cast<double>(mean[q]), r = static_cast<double>(rstd[q]);
    for (int64_t p = 0; p < L.P; ++p) {
      const int64_t off = L.at(q, p, s);
      double gv = static_cast<double>(load(g, off));
      sw += gv * (static_cast<double>(load(x, off)) - m) * r;
      sb += gv;
    }
  }
  part_w[sp * L.S + s] = sw;
  part_b[sp * L.S + s] = sb;
}

// out[k] = sum of part[sp * W + k] over the nsplit rows, in order.
template <class SD>
__global__ void sum_parts_kernel(const double* part_w, const double* part_b, int64_t nsplit, int64_t W, SD* gw, SD* gb) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= W) return;
  double sw = 0, sb = 0;
  for (int64_t sp = 0; sp < nsplit; ++sp) { sw += part_w[sp * W + k]; sb += part_b[sp * W + k]; }
  gw[k] = static_cast<SD>(sw);
  gb[k] = static_cast<SD>(sb);
}

// Not per_elem (group/batch norm, nch == qmul channels per q): parameter k = (q % qmod) * qmul + j
// sums the channel sums of j = k % qmul over q = k / qmul, + qmod, ...
template <class SD>
__global__ void sum_channels_kernel(const double* part_g, const double* part_gx, NormGeo L, int64_t nch, int64_t W, SD* gw,
                                    SD* gb) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= W) return;
  double sw = 0, sb = 0;
  if (nch > 0 && L.qmul > 0) {
    const int64_t j = k % L.qmul;
    for (int64_t q = k / L.qmul; q < L.Q; q += L.qmod) { sw += part_gx[q * nch + j]; sb += part_g[q * nch + j]; }
  }
  gw[k] = static_cast<SD>(sw);
  gb[k] = static_cast<SD>(sb);
}

void norm_backward_host(const TensorList& in, const TensorList& out, const Attrs& a) {
  if (a.i("kind") == nnutil::kBatch && a.b("batch_stats") &&
      cudnn_batch_norm_backward(in[0], in[1], in[2], in[3], in[4], out[0], out[1], out[2]))
    return;
  NormLayout L = nnutil::make_norm_layout(a.i("kind"), in[1].shape(), a.i("k"));
  for (const Tensor& o : out) LUCID_CHECK(o.is_contiguous(), Error, "norm_backward: the outputs must be contiguous");
  const Device dev = out[0].device();
  DeviceGuard dg(dev);
  DType xt = in[1].dtype(), sd = nnutil::stat_dtype(xt);
  Tensor g = contiguous_as(in[0], xt), x = in[1].contiguous_data();
  Tensor mean = contiguous_as(in[2], sd), rstd = contiguous_as(in[3], sd);
  Tensor w = params_f64(in[4]);
  const bool bs = a.b("batch_stats");
  const bool per_elem = L.qmod == 1 && L.sdiv == 1;
  const NormGeo geo = geo_of(L);
  const int64_t nch = per_elem ? 0 : L.S / L.sdiv;
  cudaStream_t stream = current_stream(dev);
  Tensor part_g = Tensor::empty({std::max<int64_t>(1, L.Q * nch)}, DType::Float64, dev);
  Tensor part_gx = Tensor::empty({std::max<int64_t>(1, L.Q * nch)}, DType::Float64, dev);
  LUCID_DISPATCH_FLOATING(xt, "norm_backward", [&] {
    auto go = [&](auto* mp, auto* rp, auto* gwp, auto* gbp) {
      using SD = std::remove_pointer_t<decltype(gwp)>;
      if (L.Q > 0) {
        norm_backward_kernel<scalar_t, SD><<<static_cast<unsigned>(L.Q), kNormThreads, 0, stream>>>(
            g.data<scalar_t>(), x.data<scalar_t>(), mp, rp, ptr(w), geo, bs, out[0].data<scalar_t>(),
            part_g.data<double>(), part_gx.data<double>());
        check_launch("norm_backward");
      }
      if (L.W == 0) return;
      if (per_elem) {
        const int64_t nsplit = std::min<int64_t>(std::max<int64_t>(1, (L.Q + 255) / 256), 128);
        const int64_t qchunk = std::max<int64_t>(1, (L.Q + nsplit - 1) / nsplit);
        Tensor pw = Tensor::empty({nsplit * L.S}, DType::Float64, dev), pb = Tensor::empty({nsplit * L.S}, DType::Float64, dev);
        dim3 grid(blocks_covering(L.S, 256), static_cast<unsigned>(nsplit));
        norm_param_cols_kernel<scalar_t, SD><<<grid, 256, 0, stream>>>(g.data<scalar_t>(), x.data<scalar_t>(), mp, rp, geo,
                                                                        qchunk, pw.data<double>(), pb.data<double>());
        check_launch("norm_backward");
        sum_parts_kernel<SD><<<blocks_covering(L.W, 256), 256, 0, stream>>>(pw.data<double>(), pb.data<double>(), nsplit, L.W, gwp, gbp);
      } else {
        sum_channels_kernel<SD><<<blocks_covering(L.W, 256), 256, 0, stream>>>(part_g.data<double>(), part_gx.data<double>(), geo, nch,
                                                                        L.W, gwp, gbp);
      }
      check_launch("norm_backward");
    };
    if (sd == DType::Float64)
      go(mean.data<double>(), rstd.data<double>(), out[1].data<double>(), out[2].data<double>());
    else
      go(mean.data<float>(), rstd.data<float>(), out[1].data<float>(), out[2].data<float>());
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(LayerNorm, CUDA, layer_norm_kernel);
LUCID_REGISTER_KERNEL(RmsNorm, CUDA, rms_norm_kernel);
LUCID_REGISTER_KERNEL(GroupNorm, CUDA, group_norm_kernel);
LUCID_REGISTER_KERNEL(NormBackward, CUDA, norm_backward_host);

}  // namespace lucid::cuda
