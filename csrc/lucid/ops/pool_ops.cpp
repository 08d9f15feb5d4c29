// 2-D pooling ops with direct loops (one plane per task, planes in parallel):
//   MaxPool2d(x) -> (values, indices)        indices index the flattened H*W plane (PyTorch's)
//   MaxPool2dBackward(g, indices)            scatter-add through the indices
//   MaxPool2dGather(g, indices)              gather through the indices (its adjoint)
//   AvgPool2d / AvgPool2dBackward            count_include_pad, ceil_mode, divisor_override
//   AdaptiveAvgPool2d / AdaptiveAvgPool2dBackward
// Each backward op is linear in its gradient input and its VJP is its forward partner, so
// pooling is differentiable to any order with ops only. Input is [N, C, H, W] or [C, H, W].
#include <cmath>
#include <limits>

#include "lucid/core/parallel.h"
#include "lucid/ops/core.h"
#include "lucid/ops/linalg.h"

namespace lucid {

namespace {

struct PoolGeo {
  int64_t P, H, W, OH, OW;
};

PoolGeo pool_geo(const Shape& in, const Shape& out) {
  int64_t nd = static_cast<int64_t>(in.size());
  PoolGeo g;
  g.H = in[nd - 2];
  g.W = in[nd - 1];
  g.OH = out[nd - 2];
  g.OW = out[nd - 1];
  g.P = 1;
  for (int64_t i = 0; i < nd - 2; ++i) g.P *= in[i];
  return g;
}

void check_pool_input(const char* op, const Tensor& x) {
  LUCID_CHECK(x.ndim() == 3 || x.ndim() == 4, ValueError, op, ": argument 'input' expected a 3-D (unbatched) or 4-D (batched) tensor, got ",
              x.ndim(), "-D ", shape_str(x.shape()));
  LUCID_CHECK(is_floating(x.dtype()), TypeError, op, ": argument 'input' expected a floating dtype, got ", dtype_name(x.dtype()));
  for (int64_t i = 1; i < x.ndim(); ++i)
    LUCID_CHECK(x.shape()[i] > 0, ValueError, op, ": argument 'input' expected non-zero sizes in non-batch dims, got ",
                shape_str(x.shape()));
}

void check_len2(const char* op, const char* arg, const IntList& v, int64_t min) {
  LUCID_CHECK(v.size() == 2, ValueError, op, ": argument '", arg, "' expected 2 values, got ", v.size());
  for (int64_t e : v)
    LUCID_CHECK(e >= min, ValueError, op, ": argument '", arg, "' expected values >= ", min, ", got ", shape_str(v));
}

// PyTorch's pooling_output_shape.
int64_t pool_out(const char* op, int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil_mode) {
  LUCID_CHECK(pad <= k / 2, ValueError, op, ": argument 'padding' expected at most half of the kernel size (", k / 2,
              "), got ", pad);
  int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (o - 1) * s >= in + pad) --o;
  LUCID_CHECK(o >= 1, ValueError, op, ": output size is too small (computed ", o, " from input size ", in,
              ", kernel ", k, ", stride ", s, ", padding ", pad, ", dilation ", d, ")");
  return o;
}

Shape with_spatial(const Shape& in, int64_t oh, int64_t ow) {
  Shape s = in;
  s[s.size() - 2] = oh;
  s[s.size() - 1] = ow;
  return s;
}

template <class F>
void for_planes(const PoolGeo& g, int64_t per_plane, const F& f) {
  parallel_for(0, g.P, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_plane)), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) f(p);
  });
}

// ---- max pooling ----
Shape max_pool_shape(const Tensor& x, const Attrs& a) {
  const char* op = "max_pool2d";
  check_pool_input(op, x);
  const IntList &k = a.ints("kernel_size"), &s = a.ints("stride"), &p = a.ints("padding"), &d = a.ints("dilation");
  check_len2(op, "kernel_size", k, 1);
  check_len2(op, "stride", s, 1);
  check_len2(op, "padding", p, 0);
  check_len2(op, "dilation", d, 1);
  bool cm = a.b("ceil_mode");
  int64_t nd = x.ndim();
  return with_spatial(x.shape(), pool_out(op, x.shape()[nd - 2], k[0], p[0], s[0], d[0], cm),
                      pool_out(op, x.shape()[nd - 1], k[1], p[1], s[1], d[1], cm));
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
  const bool fast = dh == 1 && dw == 1 && ph == 0 && pw == 0 && (OH - 1) * sh + kh <= H && (OW - 1) * sw + kw <= W;
  for_planes(g, OH * OW * kh * kw, [&](int64_t pl) {
    const T* __restrict xp = X + pl * H * W;
    T* __restrict op = O + pl * OH * OW;
    int64_t* __restrict ip = I + pl * OH * OW;
    if (fast) {
      // Every window inside the plane, no dilation: for each output row, walk the window
      // positions in the general path's order (rows, then columns) with the output column
      // innermost, so the compare-and-select runs over whole rows (vector selects, no branches:
      // which element wins is a coin flip on real data, which branch prediction loses).
      thread_local std::vector<C> mv;
      thread_local std::vector<int64_t> mi;
      mv.resize(OW);
      mi.resize(OW);
      for (int64_t oh = 0; oh < OH; ++oh) {
        C* __restrict m = mv.data();
        int64_t* __restrict ix = mi.data();
        for (int64_t ow = 0; ow < OW; ++ow) {
          m[ow] = -std::numeric_limits<C>::infinity();
          ix[ow] = oh * sh * W + ow * sw;
        }
        const int64_t ow_n = OW, step = sw;  // locals: the stores below can't alias them
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t base = (oh * sh + i) * W + j;
            const T* __restrict row = xp + base;
            for (int64_t ow = 0; ow < ow_n; ++ow) {
              const C v = static_cast<C>(row[ow * step]);
              const C cur = m[ow];
              const bool take = (v > cur) | (v != v);  // NaN propagates, as in PyTorch
              m[ow] = take ? v : cur;
              const int64_t at = base + ow * step, was = ix[ow];
              ix[ow] = take ? at : was;
            }
          }
        for (int64_t ow = 0; ow < OW; ++ow) {
          op[oh * OW + ow] = static_cast<T>(m[ow]);
          ip[oh * OW + ow] = ix[ow];
        }
      }
      return;
    }
    for (int64_t oh = 0; oh < OH; ++oh) {
      int64_t h0 = oh * sh - ph;
      const int64_t h1 = std::min(h0 + (kh - 1) * dh + 1, H);
      while (h0 < 0) h0 += dh;
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t w0 = ow * sw - pw;
        const int64_t w1 = std::min(w0 + (kw - 1) * dw + 1, W);
        while (w0 < 0) w0 += dw;
        int64_t mi = h0 * W + w0;
        C mv = -std::numeric_limits<C>::infinity();
        for (int64_t h = h0; h < h1; h += dh)
          for (int64_t w = w0; w < w1; w += dw) {
            const C v = static_cast<C>(xp[h * W + w]);
            if (v > mv || v != v) {  // NaN propagates, as in PyTorch
              mv = v;
              mi = h * W + w;
            }
          }
        op[oh * OW + ow] = static_cast<T>(mv);
        ip[oh * OW + ow] = mi;
      }
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

// ---- average pooling ----
Shape avg_pool_shape(const Shape& xs, const Attrs& a) {
  const char* op = "avg_pool2d";
  const IntList &k = a.ints("kernel_size"), &s = a.ints("stride"), &p = a.ints("padding");
  check_len2(op, "kernel_size", k, 1);
  check_len2(op, "stride", s, 1);
  check_len2(op, "padding", p, 0);
  bool cm = a.b("ceil_mode");
  int64_t nd = static_cast<int64_t>(xs.size());
  return with_spatial(xs, pool_out(op, xs[nd - 2], k[0], p[0], s[0], 1, cm), pool_out(op, xs[nd - 1], k[1], p[1], s[1], 1, cm));
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

Attrs without(const Attrs& a, const std::string& key) {
  Attrs r;
  for (auto& [k, v] : a.items())
    if (k != key) r.set(k, v);
  return r;
}

void check_grad_input(const char* op, const Tensor& g, const Shape& expected) {
  LUCID_CHECK(g.shape() == expected, ValueError, op, ": argument 'grad_output' expected shape ", shape_str(expected),
              ", got ", shape_str(g.shape()));
  LUCID_CHECK(is_floating(g.dtype()), TypeError, op, ": argument 'grad_output' expected a floating dtype, got ",
              dtype_name(g.dtype()));
}

void check_indices(const char* op, const Tensor& idx, const Shape& expected) {
  LUCID_CHECK(idx.dtype() == DType::Int64, TypeError, op, ": argument 'indices' expected dtype int64, got ",
              dtype_name(idx.dtype()));
  LUCID_CHECK(idx.shape() == expected, ValueError, op, ": argument 'indices' expected shape ", shape_str(expected),
              ", got ", shape_str(idx.shape()));
}

}  // namespace

// ---- MaxPool2d and its backward pair ------------------------------------------------------
LUCID_REGISTER_OP(MaxPool2d, "kernel_size:ints, stride:ints, padding:ints, dilation:ints, ceil_mode:bool", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.unsaved_outputs = {0};  // the VJP reads the indices only (PyTorch saves input and indices)
  d.infer = [](const TensorList& in, const Attrs& a) {
    Shape s = max_pool_shape(in[0], a);
    return std::vector<TensorMeta>{{s, in[0].dtype()}, {s, DType::Int64}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    Tensor x = in[0].contiguous_data();
    LUCID_DISPATCH_FLOATING(x.dtype(), "max_pool2d", [&] { max_pool_kernel<scalar_t>(x, out[0], out[1], a); });
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::MaxPool2dBackward, {c.grads[0], c.outputs[1]},
                                {{"input_shape", c.input_meta[0].shape}})};
  };
  return d;
}());

LUCID_REGISTER_OP(MaxPool2dBackward, "input_shape:ints", [] {
  OpDef d;
  d.num_inputs = 2;
  d.save = kSaveInputs;
  d.nondiff_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& xs = a.ints("input_shape");
    LUCID_CHECK(xs.size() == 3 || xs.size() == 4, ValueError, "max_pool2d_backward: attribute 'input_shape' expected 3 or 4 dims, got ",
                shape_str(xs));
    LUCID_CHECK(in[0].ndim() == static_cast<int64_t>(xs.size()), ValueError,
                "max_pool2d_backward: argument 'grad_output' expected ", xs.size(), " dims, got ", in[0].ndim());
    Shape lead(xs.begin(), xs.end() - 2), glead(in[0].shape().begin(), in[0].shape().end() - 2);
    LUCID_CHECK(lead == glead, ValueError, "max_pool2d_backward: argument 'grad_output' expected leading dims ",
                shape_str(lead), ", got ", shape_str(glead));
    check_grad_input("max_pool2d_backward", in[0], in[0].shape());
    check_indices("max_pool2d_backward", in[1], in[0].shape());
    return std::vector<TensorMeta>{{xs, in[0].dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs&) {
    LUCID_DISPATCH_FLOATING(out[0].dtype(), "max_pool2d_backward", [&] { scatter_kernel<scalar_t>(in[0], in[1], out[0]); });
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::MaxPool2dGather, {c.grads[0], c.inputs[1]}), Tensor()};
  };
  return d;
}());

LUCID_REGISTER_OP(MaxPool2dGather, "", [] {
  OpDef d;
  d.num_inputs = 2;
  d.save = kSaveInputs;
  d.nondiff_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor &src = in[0], &idx = in[1];
    LUCID_CHECK(is_floating(src.dtype()), TypeError, "max_pool2d_gather: argument 'input' expected a floating dtype, got ",
                dtype_name(src.dtype()));
    LUCID_CHECK(src.ndim() == idx.ndim() && src.ndim() >= 2, ValueError,
                "max_pool2d_gather: argument 'indices' expected ", src.ndim(), " dims, got ", idx.ndim());
    Shape lead(src.shape().begin(), src.shape().end() - 2), ilead(idx.shape().begin(), idx.shape().end() - 2);
    LUCID_CHECK(lead == ilead, ValueError, "max_pool2d_gather: argument 'indices' expected leading dims ", shape_str(lead),
                ", got ", shape_str(ilead));
    check_indices("max_pool2d_gather", idx, idx.shape());
    return std::vector<TensorMeta>{{idx.shape(), src.dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs&) {
    LUCID_DISPATCH_FLOATING(out[0].dtype(), "max_pool2d", [&] { gather_kernel<scalar_t>(in[0], in[1], out[0]); });
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::MaxPool2dBackward, {c.grads[0], c.inputs[1]},
                                {{"input_shape", c.input_meta[0].shape}}), Tensor()};
  };
  return d;
}());

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntList kernel, IntList stride, IntList padding,
                                                  IntList dilation, bool ceil_mode) {
  TensorList r = dispatch(OpId::MaxPool2d, {x}, {{"kernel_size", kernel}, {"stride", stride}, {"padding", padding},
                                                 {"dilation", dilation}, {"ceil_mode", ceil_mode}});
  return {r[0], r[1]};
}

// ---- AvgPool2d ----------------------------------------------------------------------------
LUCID_REGISTER_OP(AvgPool2d, "kernel_size:ints, stride:ints, padding:ints, ceil_mode:bool, count_include_pad:bool, divisor_override:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_pool_input("avg_pool2d", in[0]);
    return std::vector<TensorMeta>{{avg_pool_shape(in[0].shape(), a), in[0].dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    LUCID_DISPATCH_FLOATING(out[0].dtype(), "avg_pool2d", [&] { avg_pool_kernel<scalar_t>(in[0], out[0], a); });
  };
  d.vjp = [](const VjpContext& c) {
    Attrs a = c.attrs;
    a.set("input_shape", c.input_meta[0].shape);
    return TensorList{dispatch1(OpId::AvgPool2dBackward, {c.grads[0]}, a)};
  };
  return d;
}());

LUCID_REGISTER_OP(AvgPool2dBackward, "kernel_size:ints, stride:ints, padding:ints, ceil_mode:bool, count_include_pad:bool, divisor_override:int, input_shape:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& xs = a.ints("input_shape");
    LUCID_CHECK(xs.size() == 3 || xs.size() == 4, ValueError, "avg_pool2d_backward: attribute 'input_shape' expected 3 or 4 dims, got ",
                shape_str(xs));
    check_grad_input("avg_pool2d_backward", in[0], avg_pool_shape(xs, a));
    return std::vector<TensorMeta>{{xs, in[0].dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    LUCID_DISPATCH_FLOATING(out[0].dtype(), "avg_pool2d_backward", [&] { avg_pool_backward_kernel<scalar_t>(in[0], out[0], a); });
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::AvgPool2d, {c.grads[0]}, without(c.attrs, "input_shape"))};
  };
  return d;
}());

Tensor avg_pool2d(const Tensor& x, IntList kernel, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad, int64_t divisor_override) {
  return dispatch1(OpId::AvgPool2d, {x}, {{"kernel_size", kernel}, {"stride", stride}, {"padding", padding},
                                          {"ceil_mode", ceil_mode}, {"count_include_pad", count_include_pad},
                                          {"divisor_override", divisor_override}});
}

// ---- AdaptiveAvgPool2d --------------------------------------------------------------------
LUCID_REGISTER_OP(AdaptiveAvgPool2d, "output_size:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_pool_input("adaptive_avg_pool2d", in[0]);
    const IntList& o = a.ints("output_size");
    check_len2("adaptive_avg_pool2d", "output_size", o, 1);
    return std::vector<TensorMeta>{{with_spatial(in[0].shape(), o[0], o[1]), in[0].dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs&) {
    LUCID_DISPATCH_FLOATING(out[0].dtype(), "adaptive_avg_pool2d", [&] { adaptive_kernel<scalar_t>(in[0], out[0]); });
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::AdaptiveAvgPool2dBackward, {c.grads[0]}, {{"input_shape", c.input_meta[0].shape}})};
  };
  return d;
}());

LUCID_REGISTER_OP(AdaptiveAvgPool2dBackward, "input_shape:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& xs = a.ints("input_shape");
    LUCID_CHECK(xs.size() == 3 || xs.size() == 4, ValueError,
                "adaptive_avg_pool2d_backward: attribute 'input_shape' expected 3 or 4 dims, got ", shape_str(xs));
    LUCID_CHECK(in[0].ndim() == static_cast<int64_t>(xs.size()), ValueError,
                "adaptive_avg_pool2d_backward: argument 'grad_output' expected ", xs.size(), " dims, got ", in[0].ndim());
    const Shape& gs = in[0].shape();
    check_grad_input("adaptive_avg_pool2d_backward", in[0], with_spatial(xs, gs[gs.size() - 2], gs.back()));
    return std::vector<TensorMeta>{{xs, in[0].dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs&) {
    LUCID_DISPATCH_FLOATING(out[0].dtype(), "adaptive_avg_pool2d_backward", [&] { adaptive_backward_kernel<scalar_t>(in[0], out[0]); });
  };
  d.vjp = [](const VjpContext& c) {
    // The forward partner maps the input-shaped gradient back to grad_output's spatial size.
    const Shape& out_meta = c.input_meta[0].shape;
    return TensorList{dispatch1(OpId::AdaptiveAvgPool2d, {c.grads[0]},
                                {{"output_size", IntList{out_meta[out_meta.size() - 2], out_meta.back()}}})};
  };
  return d;
}());

// ---- AdaptiveMaxPool2d --------------------------------------------------------------------
LUCID_REGISTER_OP(AdaptiveMaxPool2d, "output_size:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.unsaved_outputs = {0};  // the VJP reads the indices only
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_pool_input("adaptive_max_pool2d", in[0]);
    const IntList& o = a.ints("output_size");
    check_len2("adaptive_max_pool2d", "output_size", o, 1);
    Shape s = with_spatial(in[0].shape(), o[0], o[1]);
    return std::vector<TensorMeta>{{s, in[0].dtype()}, {s, DType::Int64}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs&) {
    LUCID_DISPATCH_FLOATING(out[0].dtype(), "adaptive_max_pool2d", [&] { adaptive_max_kernel<scalar_t>(in[0], out[0], out[1]); });
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::MaxPool2dBackward, {c.grads[0], c.outputs[1]},
                                {{"input_shape", c.input_meta[0].shape}})};
  };
  return d;
}());

std::pair<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x, IntList output_size) {
  LUCID_CHECK(x.ndim() == 3 || x.ndim() == 4, ValueError,
              "adaptive_max_pool2d: argument 'input' expected a 3-D (unbatched) or 4-D (batched) tensor, got ", x.ndim(),
              "-D ", shape_str(x.shape()));
  LUCID_CHECK(output_size.size() == 2, ValueError, "adaptive_max_pool2d: argument 'output_size' expected 2 values, got ",
              output_size.size());
  for (int i = 0; i < 2; ++i)
    if (output_size[i] <= 0) output_size[i] = x.shape()[x.ndim() - 2 + i];
  TensorList r = dispatch(OpId::AdaptiveMaxPool2d, {x}, {{"output_size", output_size}});
  return {r[0], r[1]};
}

Tensor adaptive_avg_pool2d(const Tensor& x, IntList output_size) {
  LUCID_CHECK(x.ndim() == 3 || x.ndim() == 4, ValueError,
              "adaptive_avg_pool2d: argument 'input' expected a 3-D (unbatched) or 4-D (batched) tensor, got ", x.ndim(),
              "-D ", shape_str(x.shape()));
  LUCID_CHECK(output_size.size() == 2, ValueError, "adaptive_avg_pool2d: argument 'output_size' expected 2 values, got ",
              output_size.size());
  for (int i = 0; i < 2; ++i)
    if (output_size[i] <= 0) output_size[i] = x.shape()[x.ndim() - 2 + i];
  return dispatch1(OpId::AdaptiveAvgPool2d, {x}, {{"output_size", output_size}});
}

}  // namespace lucid
