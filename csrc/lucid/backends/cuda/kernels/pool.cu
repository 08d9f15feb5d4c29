// CUDA kernels of the 2-D pooling ops (records in ops/pool_ops.cpp), direct kernels with one
// thread per output element (per input element for the average-pool backwards), written to give
// what the CPU kernels (backends/cpu/kernels/pool.cpp) give:
//   MaxPool2d -> (values, indices)     indices index the flattened H*W plane (PyTorch's); windows
//                                      scanned row by row, the first maximum wins, a NaN wins
//                                      (the last NaN of the window), a window wholly in the padding
//                                      gives -inf with its first in-padding position's index
//   MaxPool2dBackward                  scatter-add through the indices (atomics: float32 and
//                                      float64 add into the output, 16-bit types into a float
//                                      buffer rounded once at the end)
//   MaxPool2dGather                    gather through the indices (its adjoint)
//   AvgPool2d / AvgPool2dBackward      count_include_pad, ceil_mode, divisor_override; sums in
//                                      double; the backward gathers, for each input element, the
//                                      windows holding it in the CPU's (oh, ow) order
//   AdaptiveAvgPool2d / AdaptiveAvgPool2dBackward, AdaptiveMaxPool2d   torch's start/end windows
// cuDNN's pooling is not used: it gives no argmax indices (MaxPool2d's second output), has no
// divisor_override, and these memory-bound loops are what it would run anyway.
// Differences from the CPU, for input no pooling op produces: a negative index in
// MaxPool2dBackward/MaxPool2dGather is skipped (gathers 0) instead of raising IndexError, which
// would need a device-to-host read per call; indices past the plane are skipped on both.
// Inputs [N, C, H, W] or [C, H, W], made contiguous.
#include <cuda_runtime_api.h>

#include <cmath>

#include "lucid/backends/cuda/kernels/dnn_scalar.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/ops/op_def.h"
#include "lucid/ops/pool_layout.h"

namespace lucid::cuda {

namespace {

__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

struct Window {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

template <class S>
__global__ void max_pool_kernel(const S* x, S* out, int64_t* idx, PoolGeo g, Window k) {
  using C = compute_t<S>;
  const int64_t n = g.P * g.OH * g.OW;
  LUCID_GRID_LOOP(int64_t, i, n) {
    const int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, pl = i / (g.OW * g.OH);
    const S* xp = x + pl * g.H * g.W;
    int64_t h0 = oh * k.sh - k.ph, w0 = ow * k.sw - k.pw;
    const int64_t h1 = imin(h0 + (k.kh - 1) * k.dh + 1, g.H), w1 = imin(w0 + (k.kw - 1) * k.dw + 1, g.W);
    while (h0 < 0) h0 += k.dh;
    while (w0 < 0) w0 += k.dw;
    int64_t mi = h0 * g.W + w0;
    C mv = -INFINITY;
    for (int64_t h = h0; h < h1; h += k.dh)
      for (int64_t w = w0; w < w1; w += k.dw) {
        const C v = to_compute(xp[h * g.W + w]);
        if (v > mv || v != v) {  // NaN propagates, as in PyTorch
          mv = v;
          mi = h * g.W + w;
        }
      }
    out[i] = from_compute<S>(mv);
    idx[i] = mi;
  }
}

// acc[plane, idx[plane, j]] += g[plane, j]; A is S (float32, float64) or float (16-bit S).
template <class S, class A>
__global__ void scatter_kernel(const S* g, const int64_t* idx, A* acc, int64_t P, int64_t n_out, int64_t n_in) {
  LUCID_GRID_LOOP(int64_t, i, P * n_out) {
    const int64_t t = idx[i];
    if (t < 0 || t >= n_in) continue;
    atomicAdd(acc + (i / n_out) * n_in + t, static_cast<A>(to_compute(g[i])));
  }
}

template <class S>
__global__ void float_to_storage_kernel(const float* src, S* dst, int64_t n) {
  LUCID_GRID_LOOP(int64_t, i, n) dst[i] = from_compute<S>(src[i]);
}

template <class S>
__global__ void gather_kernel(const S* src, const int64_t* idx, S* out, int64_t P, int64_t n_out, int64_t n_in) {
  LUCID_GRID_LOOP(int64_t, i, P * n_out) {
    const int64_t t = idx[i];
    out[i] = (t >= 0 && t < n_in) ? src[(i / n_out) * n_in + t] : from_compute<S>(compute_t<S>(0));
  }
}

// ---- average pooling: the CPU's avg_windows, one output cell ----
struct AvgAttrs {
  int64_t kh, kw, sh, sw, ph, pw, div_override;
  bool count_include_pad;
};

struct AvgCell {
  int64_t h0, h1, w0, w1, div;
};

__device__ __forceinline__ AvgCell avg_cell(int64_t oh, int64_t ow, const PoolGeo& g, const AvgAttrs& a) {
  int64_t h0 = oh * a.sh - a.ph, w0 = ow * a.sw - a.pw;
  int64_t h1 = imin(h0 + a.kh, g.H + a.ph), w1 = imin(w0 + a.kw, g.W + a.pw);
  const int64_t pool_size = (h1 - h0) * (w1 - w0);
  h0 = imax(h0, 0);
  w0 = imax(w0, 0);
  h1 = imin(h1, g.H);
  w1 = imin(w1, g.W);
  const int64_t div = a.div_override ? a.div_override : (a.count_include_pad ? pool_size : (h1 - h0) * (w1 - w0));
  return {h0, h1, w0, w1, div};
}

template <class S>
__global__ void avg_pool_kernel(const S* x, S* out, PoolGeo g, AvgAttrs a) {
  LUCID_GRID_LOOP(int64_t, i, g.P * g.OH * g.OW) {
    const int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, pl = i / (g.OW * g.OH);
    const AvgCell c = avg_cell(oh, ow, g, a);
    if (c.h0 >= c.h1 || c.w0 >= c.w1) {
      out[i] = from_compute<S>(compute_t<S>(0));
      continue;
    }
    const S* xp = x + pl * g.H * g.W;
    double acc = 0;
    for (int64_t h = c.h0; h < c.h1; ++h)
      for (int64_t w = c.w0; w < c.w1; ++w) acc += static_cast<double>(to_compute(xp[h * g.W + w]));
    out[i] = from_compute<S>(static_cast<compute_t<S>>(acc / static_cast<double>(c.div)));
  }
}

// [lo, hi]: the output cells whose window may hold input position h along one dim (window o
// starts at o*s - p and spans k); the caller tests each exactly.
__device__ __forceinline__ void avg_candidates(int64_t h, int64_t k, int64_t s, int64_t p, int64_t out, int64_t& lo,
                                               int64_t& hi) {
  const int64_t a = h + p - k;  // window o holds h only if o*s > a and o*s <= h + p
  lo = a < 0 ? 0 : a / s + 1;
  hi = imin((h + p) / s, out - 1);
}

template <class S>
__global__ void avg_pool_backward_kernel(const S* gy, S* gx, PoolGeo g, AvgAttrs a) {
  LUCID_GRID_LOOP(int64_t, i, g.P * g.H * g.W) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, pl = i / (g.W * g.H);
    const S* gp = gy + pl * g.OH * g.OW;
    int64_t oh0, oh1, ow0, ow1;
    avg_candidates(h, a.kh, a.sh, a.ph, g.OH, oh0, oh1);
    avg_candidates(w, a.kw, a.sw, a.pw, g.OW, ow0, ow1);
    double acc = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const AvgCell c = avg_cell(oh, ow, g, a);
        if (h < c.h0 || h >= c.h1 || w < c.w0 || w >= c.w1) continue;
        acc += static_cast<double>(to_compute(gp[oh * g.OW + ow])) / static_cast<double>(c.div);
      }
    gx[i] = from_compute<S>(static_cast<compute_t<S>>(acc));
  }
}

// ---- adaptive pooling: torch's windows [start, end) ----
__device__ __forceinline__ int64_t ad_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
__device__ __forceinline__ int64_t ad_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

template <class S>
__global__ void adaptive_avg_kernel(const S* x, S* out, PoolGeo g) {
  LUCID_GRID_LOOP(int64_t, i, g.P * g.OH * g.OW) {
    const int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, pl = i / (g.OW * g.OH);
    const int64_t h0 = ad_start(oh, g.H, g.OH), h1 = ad_end(oh, g.H, g.OH);
    const int64_t w0 = ad_start(ow, g.W, g.OW), w1 = ad_end(ow, g.W, g.OW);
    const S* xp = x + pl * g.H * g.W;
    double acc = 0;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t w = w0; w < w1; ++w) acc += static_cast<double>(to_compute(xp[h * g.W + w]));
    out[i] = from_compute<S>(static_cast<compute_t<S>>(acc / static_cast<double>((h1 - h0) * (w1 - w0))));
  }
}

template <class S>
__global__ void adaptive_max_kernel(const S* x, S* out, int64_t* idx, PoolGeo g) {
  using C = compute_t<S>;
  LUCID_GRID_LOOP(int64_t, i, g.P * g.OH * g.OW) {
    const int64_t ow = i % g.OW, oh = (i / g.OW) % g.OH, pl = i / (g.OW * g.OH);
    const int64_t h0 = ad_start(oh, g.H, g.OH), h1 = ad_end(oh, g.H, g.OH);
    const int64_t w0 = ad_start(ow, g.W, g.OW), w1 = ad_end(ow, g.W, g.OW);
    const S* xp = x + pl * g.H * g.W;
    int64_t mi = h0 * g.W + w0;
    C mv = -INFINITY;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t w = w0; w < w1; ++w) {
        const C v = to_compute(xp[h * g.W + w]);
        if (v > mv || v != v) {
          mv = v;
          mi = h * g.W + w;
        }
      }
    out[i] = from_compute<S>(mv);
    idx[i] = mi;
  }
}

// The windows holding input position h: o in [floor(h*out/in), ceil((h+1)*out/in) - 1], widened
// by one on each side (the caller tests each exactly).
__device__ __forceinline__ void ad_candidates(int64_t h, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = imax((h * out) / in - 1, 0);
  hi = imin(((h + 1) * out + in - 1) / in, out - 1);
}

template <class S>
__global__ void adaptive_avg_backward_kernel(const S* gy, S* gx, PoolGeo g) {
  LUCID_GRID_LOOP(int64_t, i, g.P * g.H * g.W) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, pl = i / (g.W * g.H);
    const S* gp = gy + pl * g.OH * g.OW;
    int64_t oh0, oh1, ow0, ow1;
    ad_candidates(h, g.H, g.OH, oh0, oh1);
    ad_candidates(w, g.W, g.OW, ow0, ow1);
    double acc = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      const int64_t h0 = ad_start(oh, g.H, g.OH), h1 = ad_end(oh, g.H, g.OH);
      if (h < h0 || h >= h1) continue;
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t w0 = ad_start(ow, g.W, g.OW), w1 = ad_end(ow, g.W, g.OW);
        if (w < w0 || w >= w1) continue;
        acc += static_cast<double>(to_compute(gp[oh * g.OW + ow])) / static_cast<double>((h1 - h0) * (w1 - w0));
      }
    }
    gx[i] = from_compute<S>(static_cast<compute_t<S>>(acc));
  }
}

// ---- host side ----
template <class S> S* ptr(const Tensor& t) { return static_cast<S*>(t.data_ptr()); }

void max_pool2d_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor &y = out[0], &idx = out[1];
  if (y.numel() == 0) return;
  DeviceGuard guard(y.device());
  const Tensor x = in[0].contiguous_data();
  const IntList &k = a.ints("kernel_size"), &s = a.ints("stride"), &p = a.ints("padding"), &d = a.ints("dilation");
  const PoolGeo g = pool_geo(x.shape(), y.shape());
  const Window win{k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]};
  with_float_storage(x.dtype(), "max_pool2d", [&](auto tag) {
    using S = decltype(tag);
    max_pool_kernel<S><<<grid_for(y.numel(), kThreads), kThreads, 0, current_stream(y.device())>>>(
        ptr<S>(x), ptr<S>(y), ptr<int64_t>(idx), g, win);
  });
  check_launch("max_pool2d");
}

void max_pool2d_backward_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& gx = out[0];
  if (gx.numel() == 0) return;
  DeviceGuard guard(gx.device());
  cudaStream_t st = current_stream(gx.device());
  const Tensor g = in[0].contiguous_data(), idx = in[1].contiguous_data();
  const PoolGeo geo = pool_geo(gx.shape(), g.shape());
  const int64_t n_in = geo.H * geo.W, n_out = geo.OH * geo.OW;
  with_float_storage(gx.dtype(), "max_pool2d_backward", [&](auto tag) {
    using S = decltype(tag);
    constexpr bool wide = std::is_same_v<S, float> || std::is_same_v<S, double>;
    using A = std::conditional_t<wide, S, float>;
    Tensor acc = wide ? gx : Tensor::empty(gx.shape(), DType::Float32, gx.device());
    check_cuda(cudaMemsetAsync(acc.data_ptr(), 0, static_cast<size_t>(acc.numel()) * sizeof(A), st), "cudaMemsetAsync");
    if (g.numel() > 0)
      scatter_kernel<S, A><<<grid_for(g.numel(), kThreads), kThreads, 0, st>>>(ptr<S>(g), ptr<int64_t>(idx), ptr<A>(acc),
                                                                              geo.P, n_out, n_in);
    if constexpr (!wide) {
      check_launch("max_pool2d_backward");
      float_to_storage_kernel<S><<<grid_for(gx.numel(), kThreads), kThreads, 0, st>>>(ptr<float>(acc), ptr<S>(gx),
                                                                                    gx.numel());
    }
  });
  check_launch("max_pool2d_backward");
}

void max_pool2d_gather_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  DeviceGuard guard(y.device());
  const Tensor src = in[0].contiguous_data(), idx = in[1].contiguous_data();
  const PoolGeo geo = pool_geo(src.shape(), y.shape());
  with_float_storage(y.dtype(), "max_pool2d", [&](auto tag) {
    using S = decltype(tag);
    gather_kernel<S><<<grid_for(y.numel(), kThreads), kThreads, 0, current_stream(y.device())>>>(
        ptr<S>(src), ptr<int64_t>(idx), ptr<S>(y), geo.P, geo.OH * geo.OW, geo.H * geo.W);
  });
  check_launch("max_pool2d_gather");
}

AvgAttrs avg_attrs(const Attrs& a) {
  const IntList &k = a.ints("kernel_size"), &s = a.ints("stride"), &p = a.ints("padding");
  return {k[0], k[1], s[0], s[1], p[0], p[1], a.i("divisor_override"), a.b("count_include_pad")};
}

void avg_pool2d_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  DeviceGuard guard(y.device());
  const Tensor x = in[0].contiguous_data();
  const PoolGeo g = pool_geo(x.shape(), y.shape());
  const AvgAttrs at = avg_attrs(a);
  with_float_storage(y.dtype(), "avg_pool2d", [&](auto tag) {
    using S = decltype(tag);
    avg_pool_kernel<S><<<grid_for(y.numel(), kThreads), kThreads, 0, current_stream(y.device())>>>(ptr<S>(x), ptr<S>(y),
                                                                                                  g, at);
  });
  check_launch("avg_pool2d");
}

void avg_pool2d_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& gx = out[0];
  if (gx.numel() == 0) return;
  DeviceGuard guard(gx.device());
  const Tensor gy = in[0].contiguous_data();
  const PoolGeo g = pool_geo(gx.shape(), gy.shape());
  const AvgAttrs at = avg_attrs(a);
  with_float_storage(gx.dtype(), "avg_pool2d_backward", [&](auto tag) {
    using S = decltype(tag);
    avg_pool_backward_kernel<S><<<grid_for(gx.numel(), kThreads), kThreads, 0, current_stream(gx.device())>>>(
        ptr<S>(gy), ptr<S>(gx), g, at);
  });
  check_launch("avg_pool2d_backward");
}

void adaptive_avg_pool2d_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  DeviceGuard guard(y.device());
  const Tensor x = in[0].contiguous_data();
  const PoolGeo g = pool_geo(x.shape(), y.shape());
  with_float_storage(y.dtype(), "adaptive_avg_pool2d", [&](auto tag) {
    using S = decltype(tag);
    adaptive_avg_kernel<S><<<grid_for(y.numel(), kThreads), kThreads, 0, current_stream(y.device())>>>(ptr<S>(x),
                                                                                                      ptr<S>(y), g);
  });
  check_launch("adaptive_avg_pool2d");
}

void adaptive_avg_pool2d_backward_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& gx = out[0];
  if (gx.numel() == 0) return;
  DeviceGuard guard(gx.device());
  const Tensor gy = in[0].contiguous_data();
  const PoolGeo g = pool_geo(gx.shape(), gy.shape());
  with_float_storage(gx.dtype(), "adaptive_avg_pool2d_backward", [&](auto tag) {
    using S = decltype(tag);
    adaptive_avg_backward_kernel<S><<<grid_for(gx.numel(), kThreads), kThreads, 0, current_stream(gx.device())>>>(
        ptr<S>(gy), ptr<S>(gx), g);
  });
  check_launch("adaptive_avg_pool2d_backward");
}

void adaptive_max_pool2d_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor &y = out[0], &idx = out[1];
  if (y.numel() == 0) return;
  DeviceGuard guard(y.device());
  const Tensor x = in[0].contiguous_data();
  const PoolGeo g = pool_geo(x.shape(), y.shape());
  with_float_storage(y.dtype(), "adaptive_max_pool2d", [&](auto tag) {
    using S = decltype(tag);
    adaptive_max_kernel<S><<<grid_for(y.numel(), kThreads), kThreads, 0, current_stream(y.device())>>>(
        ptr<S>(x), ptr<S>(y), ptr<int64_t>(idx), g);
  });
  check_launch("adaptive_max_pool2d");
}

}  // namespace

LUCID_REGISTER_KERNEL(MaxPool2d, CUDA, max_pool2d_kernel);
LUCID_REGISTER_KERNEL(MaxPool2dBackward, CUDA, max_pool2d_backward_kernel);
LUCID_REGISTER_KERNEL(MaxPool2dGather, CUDA, max_pool2d_gather_kernel);
LUCID_REGISTER_KERNEL(AvgPool2d, CUDA, avg_pool2d_kernel);
LUCID_REGISTER_KERNEL(AvgPool2dBackward, CUDA, avg_pool2d_backward_kernel);
LUCID_REGISTER_KERNEL(AdaptiveAvgPool2d, CUDA, adaptive_avg_pool2d_kernel);
LUCID_REGISTER_KERNEL(AdaptiveAvgPool2dBackward, CUDA, adaptive_avg_pool2d_backward_kernel);
LUCID_REGISTER_KERNEL(AdaptiveMaxPool2d, CUDA, adaptive_max_pool2d_kernel);

}  // namespace lucid::cuda
