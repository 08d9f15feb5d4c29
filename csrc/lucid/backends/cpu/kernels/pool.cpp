// CPU kernels of the 2-D pooling ops (records in ops/pool_ops.cpp), direct loops with one plane
// per task and planes in parallel:
//   MaxPool2d -> (values, indices)           indices index the flattened H*W plane (PyTorch's)
//   MaxPool2dBackward                        scatter-add through the indices
//   MaxPool2dGather                          gather through the indices (its adjoint)
//   AvgPool2d / AvgPool2dBackward            count_include_pad, ceil_mode, divisor_override
//   AdaptiveAvgPool2d / AdaptiveAvgPool2dBackward, AdaptiveMaxPool2d
// The records have validated the attributes and computed the output shapes; these read the
// geometry back from the tensors' shapes (ops/pool_layout.h, shared with the CUDA kernels). Input
// is [N, C, H, W] or [C, H, W], made contiguous.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "lucid/core/parallel.h"
#include "lucid/ops/op_def.h"
#include "lucid/ops/pool_layout.h"

namespace lucid::cpu {

namespace {

template <class F>
void for_planes(const PoolGeo& g, int64_t per_plane, const F& f) {
  parallel_for(0, g.P, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_plane)), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) f(p);
  });
}

template <class T>
void max_pool_kernel(const Tensor& x, const Tensor& out, const Tensor& idx, const Attrs& a) {
  const IntList &k = a.ints("kernel_size"), &s = a.ints("stride"), &p = a.ints("padding"), &d = a.ints("dilation");
  PoolGeo g = pool_geo(x.shape(), out.shape());
  const T* X = x.data<T>();
  T* O = out.data<T>();
  int64_t* I = idx.data<int64_t>();
  // Locals, not the attribute vectors: the loops below then keep them in registers (the stores
  // to O and I could alias the vectors' heap storage as far as the compiler knows).
  const int64_t kh = k[0], kw = k[1], sh = s[0], sw = s[1], ph = p[0], pw = p[1], dh = d[0], dw = d[1];
  const int64_t H = g.H, W = g.W, OH = g.OH, OW = g.OW;
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;  // float for 16-bit floats
  // Output columns whose windows lie wholly inside the row (no padding, no clipping): those run
  // as whole-row vector selects; the columns at the borders take the general per-window loop.
  const int64_t ow_lo = std::min<int64_t>(OW, (pw + sw - 1) / sw);
  const int64_t ow_hi = std::max<int64_t>(ow_lo, std::min<int64_t>(OW, W - 1 - (kw - 1) * dw + pw >= 0
                                                                          ? (W - 1 - (kw - 1) * dw + pw) / sw + 1
                                                                          : 0));
  for_planes(g, OH * OW * kh * kw, [&](int64_t pl) {
    const T* __restrict xp = X + pl * H * W;
    T* __restrict op = O + pl * OH * OW;
    int64_t* __restrict ip = I + pl * OH * OW;
    // The general loop: window (oh, ow) clipped to the plane, rows then columns, the first
    // maximum wins and NaN propagates, as in PyTorch.
    auto window = [&](int64_t oh, int64_t ow) {
      int64_t h0 = oh * sh - ph;
      const int64_t h1 = std::min(h0 + (kh - 1) * dh + 1, H);
      while (h0 < 0) h0 += dh;
      int64_t w0 = ow * sw - pw;
      const int64_t w1 = std::min(w0 + (kw - 1) * dw + 1, W);
      while (w0 < 0) w0 += dw;
      int64_t mi = h0 * W + w0;
      C mv = -std::numeric_limits<C>::infinity();
      for (int64_t h = h0; h < h1; h += dh)
        for (int64_t w = w0; w < w1; w += dw) {
          const C v = static_cast<C>(xp[h * W + w]);
          if (v > mv || v != v) {
            mv = v;
            mi = h * W + w;
          }
        }
      op[oh * OW + ow] = static_cast<T>(mv);
      ip[oh * OW + ow] = mi;
    };
    thread_local std::vector<C> mv;
    thread_local std::vector<int64_t> mi;
    thread_local std::vector<int32_t> mi32;
    // Interior indices in 32 bits when the plane allows: the select then has the values' lane
    // width (8 floats and 8 indices per AVX2 vector), widened to int64 when stored.
    const bool narrow_index = H * W < (int64_t{1} << 31);
    mv.resize(OW);
    if (narrow_index) mi32.resize(OW);
    else mi.resize(OW);
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t hs = oh * sh - ph;
      int64_t i0 = 0, i1 = kh;  // the window rows inside the plane
      while (i0 < kh && hs + i0 * dh < 0) ++i0;
      while (i1 > i0 && hs + (i1 - 1) * dh >= H) --i1;
      const int64_t lo = i0 < i1 ? ow_lo : OW, hi = i0 < i1 ? ow_hi : OW;
      for (int64_t ow = 0; ow < lo; ++ow) window(oh, ow);
      for (int64_t ow = std::max(lo, hi); ow < OW; ++ow) window(oh, ow);
      if (lo >= hi) continue;
      // Interior columns: for each window position, in the general loop's order (rows, then
      // columns), a compare-and-select over the whole run of columns (vector selects, no
      // branches: which element wins is a coin flip on real data, which branch prediction loses).
      C* __restrict m = mv.data();
      const int64_t first = (hs + i0 * dh) * W - pw;
      const int64_t step = sw;  // a local: the stores below can't alias it
      auto interior = [&](auto tag, auto* ix_buf) {
        using I = decltype(tag);
        I* __restrict ix = ix_buf;
        for (int64_t ow = lo; ow < hi; ++ow) {
          m[ow] = -std::numeric_limits<C>::infinity();
          ix[ow] = static_cast<I>(first + ow * sw);
        }
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t base = (hs + i * dh) * W + j * dw - pw;
            const T* __restrict row = xp + base;
            const I b = static_cast<I>(base), st = static_cast<I>(step);
            for (int64_t ow = lo; ow < hi; ++ow) {
              const C v = static_cast<C>(row[ow * step]);
              const C cur = m[ow];
              const bool take = (v > cur) | (v != v);
              m[ow] = take ? v : cur;
              const I at = b + static_cast<I>(ow) * st, was = ix[ow];
              ix[ow] = take ? at : was;
            }
          }
        for (int64_t ow = lo; ow < hi; ++ow) {
          op[oh * OW + ow] = static_cast<T>(m[ow]);
          ip[oh * OW + ow] = static_cast<int64_t>(ix[ow]);
        }
      };
      if (narrow_index) interior(int32_t{}, mi32.data());
      else interior(int64_t{}, mi.data());
    }
  });
}

// Serial check before the parallel loops (exceptions must not leave an OpenMP region). An index
// of n_in or more is legal: a window lying wholly in the padding (dilation, ceil_mode) gives -inf
// with an index past the plane, as in PyTorch; such entries carry no gradient.
void check_index_range(const char* op, const int64_t* I, int64_t n, int64_t n_in) {
  (void)n_in;
  for (int64_t i = 0; i < n; ++i)
    LUCID_CHECK(I[i] >= 0, IndexError, op, ": index ", I[i], " is negative");
}

// out[plane, idx[plane, j]] += g[plane, j] (out zeroed first).
template <class T>
void scatter_kernel(const Tensor& g0, const Tensor& idx0, const Tensor& out) {
  Tensor g = g0.contiguous_data(), idx = idx0.contiguous_data();
  PoolGeo geo = pool_geo(out.shape(), g.shape());
  const T* G = g.data<T>();
  const int64_t* I = idx.data<int64_t>();
  T* O = out.data<T>();
  int64_t n_in = geo.H * geo.W, n_out = geo.OH * geo.OW;
  check_index_range("max_pool2d_backward", I, idx.numel(), n_in);
  for_planes(geo, n_out + n_in, [&](int64_t pl) {
    T* op = O + pl * n_in;
    for (int64_t i = 0; i < n_in; ++i) op[i] = T(0);
    for (int64_t j = 0; j < n_out; ++j) {
      int64_t t = I[pl * n_out + j];
      if (t >= n_in) continue;
      op[t] = static_cast<T>(static_cast<compute_t<T>>(op[t]) + static_cast<compute_t<T>>(G[pl * n_out + j]));
    }
  });
}

// out[plane, j] = src[plane, idx[plane, j]].
template <class T>
void gather_kernel(const Tensor& src0, const Tensor& idx0, const Tensor& out) {
  Tensor src = src0.contiguous_data(), idx = idx0.contiguous_data();
  PoolGeo geo = pool_geo(src.shape(), out.shape());
  const T* S = src.data<T>();
  const int64_t* I = idx.data<int64_t>();
  T* O = out.data<T>();
  int64_t n_in = geo.H * geo.W, n_out = geo.OH * geo.OW;
  check_index_range("max_pool2d", I, idx.numel(), n_in);
  for_planes(geo, n_out, [&](int64_t pl) {
    for (int64_t j = 0; j < n_out; ++j) {
      int64_t t = I[pl * n_out + j];
      O[pl * n_out + j] = t < n_in ? S[pl * n_in + t] : T(0);
    }
  });
}

// Sum of n contiguous values in double with 8 independent accumulators (vectorisable, and not
// bound by the latency of one dependent add chain).
template <class T>
double row_sum(const T* p, int64_t n) {
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) a[j] += static_cast<double>(static_cast<compute_t<T>>(p[i + j]));
  double s = 0;
  for (; i < n; ++i) s += static_cast<double>(static_cast<compute_t<T>>(p[i]));
  return s + ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

// Calls f(out_index, h0, h1, w0, w1, divisor) for each output cell of one plane.
template <class F>
void avg_windows(const PoolGeo& g, const Attrs& a, const F& f) {
  const IntList &k = a.ints("kernel_size"), &s = a.ints("stride"), &p = a.ints("padding");
  bool cip = a.b("count_include_pad");
  int64_t div_override = a.i("divisor_override");
  for (int64_t oh = 0; oh < g.OH; ++oh)
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      int64_t h0 = oh * s[0] - p[0], w0 = ow * s[1] - p[1];
      int64_t h1 = std::min(h0 + k[0], g.H + p[0]), w1 = std::min(w0 + k[1], g.W + p[1]);
      int64_t pool_size = (h1 - h0) * (w1 - w0);
      h0 = std::max<int64_t>(h0, 0); w0 = std::max<int64_t>(w0, 0);
      h1 = std::min(h1, g.H); w1 = std::min(w1, g.W);
      int64_t div = div_override ? div_override : (cip ? pool_size : (h1 - h0) * (w1 - w0));
      f(oh * g.OW + ow, h0, h1, w0, w1, div);
    }
}

template <class T>
void avg_pool_kernel(const Tensor& x0, const Tensor& out, const Attrs& a) {
  Tensor x = x0.contiguous_data();
  PoolGeo g = pool_geo(x.shape(), out.shape());
  const T* X = x.data<T>();
  T* O = out.data<T>();
  const IntList& k = a.ints("kernel_size");
  for_planes(g, g.OH * g.OW * k[0] * k[1], [&](int64_t pl) {
    const T* xp = X + pl * g.H * g.W;
    T* op = O + pl * g.OH * g.OW;
    avg_windows(g, a, [&](int64_t o, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t div) {
      if (h0 >= h1 || w0 >= w1) { op[o] = T(0); return; }
      double acc = 0;
      for (int64_t h = h0; h < h1; ++h) acc += row_sum(xp + h * g.W + w0, w1 - w0);
      op[o] = static_cast<T>(static_cast<compute_t<T>>(acc / static_cast<double>(div)));
    });
  });
}

template <class T>
void avg_pool_backward_kernel(const Tensor& g0, const Tensor& out, const Attrs& a) {
  Tensor gy = g0.contiguous_data();
  PoolGeo g = pool_geo(out.shape(), gy.shape());
  const T* G = gy.data<T>();
  T* O = out.data<T>();
  const IntList& k = a.ints("kernel_size");
  for_planes(g, g.OH * g.OW * k[0] * k[1] + g.H * g.W, [&](int64_t pl) {
    std::vector<double> acc(g.H * g.W, 0.0);
    const T* gp = G + pl * g.OH * g.OW;
    avg_windows(g, a, [&](int64_t o, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t div) {
      double v = static_cast<double>(static_cast<compute_t<T>>(gp[o])) / static_cast<double>(div);
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t w = w0; w < w1; ++w) acc[h * g.W + w] += v;
    });
    T* op = O + pl * g.H * g.W;
    for (int64_t i = 0; i < g.H * g.W; ++i) op[i] = static_cast<T>(static_cast<compute_t<T>>(acc[i]));
  });
}

// ---- adaptive average pooling ----
inline int64_t ad_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
inline int64_t ad_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

template <class T>
void adaptive_kernel(const Tensor& x0, const Tensor& out) {
  Tensor x = x0.contiguous_data();
  PoolGeo g = pool_geo(x.shape(), out.shape());
  const T* X = x.data<T>();
  T* O = out.data<T>();
  for_planes(g, g.H * g.W + g.OH * g.OW, [&](int64_t pl) {
    const T* xp = X + pl * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      int64_t h0 = ad_start(oh, g.H, g.OH), h1 = ad_end(oh, g.H, g.OH);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        int64_t w0 = ad_start(ow, g.W, g.OW), w1 = ad_end(ow, g.W, g.OW);
        double acc = 0;
        for (int64_t h = h0; h < h1; ++h) acc += row_sum(xp + h * g.W + w0, w1 - w0);
        O[(pl * g.OH + oh) * g.OW + ow] = static_cast<T>(static_cast<compute_t<T>>(acc / static_cast<double>((h1 - h0) * (w1 - w0))));
      }
    }
  });
}

template <class T>
void adaptive_max_kernel(const Tensor& x0, const Tensor& out, const Tensor& idx) {
  Tensor x = x0.contiguous_data();
  PoolGeo g = pool_geo(x.shape(), out.shape());
  const T* X = x.data<T>();
  T* O = out.data<T>();
  int64_t* I = idx.data<int64_t>();
  for_planes(g, g.H * g.W + g.OH * g.OW, [&](int64_t pl) {
    const T* xp = X + pl * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      int64_t h0 = ad_start(oh, g.H, g.OH), h1 = ad_end(oh, g.H, g.OH);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        int64_t w0 = ad_start(ow, g.W, g.OW), w1 = ad_end(ow, g.W, g.OW);
        int64_t mi = h0 * g.W + w0;
        double mv = -std::numeric_limits<double>::infinity();
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            double v = static_cast<double>(static_cast<compute_t<T>>(xp[h * g.W + w]));
            if (v > mv || std::isnan(v)) { mv = v; mi = h * g.W + w; }
          }
        int64_t o = (pl * g.OH + oh) * g.OW + ow;
        O[o] = static_cast<T>(static_cast<compute_t<T>>(mv));
        I[o] = mi;
      }
    }
  });
}

template <class T>
void adaptive_backward_kernel(const Tensor& g0, const Tensor& out) {
  Tensor gy = g0.contiguous_data();
  PoolGeo g = pool_geo(out.shape(), gy.shape());
  const T* G = gy.data<T>();
  T* O = out.data<T>();
  for_planes(g, g.H * g.W + g.OH * g.OW, [&](int64_t pl) {
    std::vector<double> acc(g.H * g.W, 0.0);
    const T* gp = G + pl * g.OH * g.OW;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      int64_t h0 = ad_start(oh, g.H, g.OH), h1 = ad_end(oh, g.H, g.OH);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        int64_t w0 = ad_start(ow, g.W, g.OW), w1 = ad_end(ow, g.W, g.OW);
        double v = static_cast<double>(static_cast<compute_t<T>>(gp[oh * g.OW + ow])) / static_cast<double>((h1 - h0) * (w1 - w0));
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) acc[h * g.W + w] += v;
      }
    }
    T* op = O + pl * g.H * g.W;
    for (int64_t i = 0; i < g.H * g.W; ++i) op[i] = static_cast<T>(static_cast<compute_t<T>>(acc[i]));
  });
}

void max_pool2d_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = in[0].contiguous_data();
  LUCID_DISPATCH_FLOATING(x.dtype(), "max_pool2d", [&] { max_pool_kernel<scalar_t>(x, out[0], out[1], a); });
}

void max_pool2d_backward_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  LUCID_DISPATCH_FLOATING(out[0].dtype(), "max_pool2d_backward", [&] { scatter_kernel<scalar_t>(in[0], in[1], out[0]); });
}

void max_pool2d_gather_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  LUCID_DISPATCH_FLOATING(out[0].dtype(), "max_pool2d", [&] { gather_kernel<scalar_t>(in[0], in[1], out[0]); });
}

void avg_pool2d_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  LUCID_DISPATCH_FLOATING(out[0].dtype(), "avg_pool2d", [&] { avg_pool_kernel<scalar_t>(in[0], out[0], a); });
}

void avg_pool2d_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  LUCID_DISPATCH_FLOATING(out[0].dtype(), "avg_pool2d_backward", [&] { avg_pool_backward_kernel<scalar_t>(in[0], out[0], a); });
}

void adaptive_avg_pool2d_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  LUCID_DISPATCH_FLOATING(out[0].dtype(), "adaptive_avg_pool2d", [&] { adaptive_kernel<scalar_t>(in[0], out[0]); });
}

void adaptive_avg_pool2d_backward_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  LUCID_DISPATCH_FLOATING(out[0].dtype(), "adaptive_avg_pool2d_backward", [&] { adaptive_backward_kernel<scalar_t>(in[0], out[0]); });
}

void adaptive_max_pool2d_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  LUCID_DISPATCH_FLOATING(out[0].dtype(), "adaptive_max_pool2d", [&] { adaptive_max_kernel<scalar_t>(in[0], out[0], out[1]); });
}

}  // namespace

LUCID_REGISTER_KERNEL(MaxPool2d, CPU, max_pool2d_kernel);
LUCID_REGISTER_KERNEL(MaxPool2dBackward, CPU, max_pool2d_backward_kernel);
LUCID_REGISTER_KERNEL(MaxPool2dGather, CPU, max_pool2d_gather_kernel);
LUCID_REGISTER_KERNEL(AvgPool2d, CPU, avg_pool2d_kernel);
LUCID_REGISTER_KERNEL(AvgPool2dBackward, CPU, avg_pool2d_backward_kernel);
LUCID_REGISTER_KERNEL(AdaptiveAvgPool2d, CPU, adaptive_avg_pool2d_kernel);
LUCID_REGISTER_KERNEL(AdaptiveAvgPool2dBackward, CPU, adaptive_avg_pool2d_backward_kernel);
LUCID_REGISTER_KERNEL(AdaptiveMaxPool2d, CPU, adaptive_max_pool2d_kernel);

}  // namespace lucid::cpu
