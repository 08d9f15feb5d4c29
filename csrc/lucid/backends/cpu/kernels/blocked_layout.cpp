// CPU kernels of the channel-blocked layout ops (records and layout in ops/blocked_layout.h).
// Block/UnblockChannels are oneDNN reorders (nchw <-> nChw16c / nChw8c for block 16 / 8, nchw <-> nhwc for
// block C) for float32 and bfloat16 and a strided copy otherwise. The pooling and eval batch-norm kernels read a block of b channels as
// one run of b contiguous lanes and compute every lane exactly as the NCHW kernel computes that
// channel (backends/cpu/kernels/pool.cpp, norm.cpp): the same window clipping and visiting order,
// max_pool2d's first-maximum-wins with NaN propagating, avg pooling's per-row sums in double with
// the same eight partial accumulators, batch norm's statistics in double and its affine in the
// compute type. So a graph the layout pass rewrote computes what the NCHW graph computes, bit
// for bit (tests/python/test_layout_pass.py compares them).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "lucid/backends/cpu/dnnl_common.h"
#include "lucid/backends/cpu/float16_convert.h"
#include "lucid/backends/cpu/loops.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/blocked_layout.h"
#include "lucid/ops/op_def.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid::cpu {

namespace {

using dnnl::memory;

// ---- BlockChannels / UnblockChannels ----
struct ReorderEntry {
  dnnl::reorder prim;
  memory::desc src, dst;
};

dnnl_util::LruCache<ReorderEntry>& reorder_cache() {
  static dnnl_util::LruCache<ReorderEntry> c(64);
  return c;
}

// nchw (contiguous, 4-D) <-> blocked (contiguous, 5-D, block 16: nChw16c; 8: nChw8c; block C:
// nhwc) through a oneDNN reorder; false when the dtype or block has none. bfloat16 only where
// oneDNN moves its bits as they are (AVX-512 BF16): on AVX2 its reference reorder converts through
// float with denormals flushed, turning -0 into +0 and bfloat16 denormals into zeros.
bool dnnl_reorder(const Tensor& src, const Tensor& dst, bool to_blocked) {
  static const bool bf16_exact = dnnl_util::has_isa(dnnl::cpu_isa::avx512_core_bf16);
  const Tensor& plain = to_blocked ? src : dst;
  const Tensor& blocked = to_blocked ? dst : src;
  const DType t = src.dtype();
  const int64_t b = blocked.shape()[4];
  if ((t != DType::Float32 && !(t == DType::BFloat16 && bf16_exact)) || (b != 16 && b != 8 && blocked.shape()[1] != 1))
    return false;
  dnnl_util::Key k;
  k.add(static_cast<int64_t>(t)).add(plain.shape()).add(to_blocked).add(b);
  auto e = reorder_cache().get(k, [&]() -> std::shared_ptr<ReorderEntry> {
    try {
      auto r = std::make_shared<ReorderEntry>();
      memory::desc p = dnnl_util::plain_desc(plain.shape(), t);
      memory::desc blk(p.dims(), dnnl_util::to_dnnl(t), b == 16 ? memory::format_tag::nChw16c : b == 8 ? memory::format_tag::nChw8c : memory::format_tag::nhwc);
      r->src = to_blocked ? p : blk;
      r->dst = to_blocked ? blk : p;
      r->prim = dnnl::reorder(dnnl::reorder::primitive_desc(dnnl_util::engine(), r->src, dnnl_util::engine(), r->dst));
      return r;
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
  if (!e) return false;
  dnnl::stream& s = dnnl_util::stream();
  memory sm = dnnl_util::mem(e->src, src.data_ptr());
  memory dm = dnnl_util::mem(e->dst, dst.data_ptr());
  e->prim.execute(s, sm, dm);
  s.wait();
  return true;
}

void block_channels_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  if (out[0].numel() == 0) return;
  Tensor x = in[0].contiguous_data();
  if (dnnl_reorder(x, out[0], true)) return;
  copy_into(out[0], blocked_view_of_nchw(x, a.i("block")));
}

void unblock_channels_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  if (out[0].numel() == 0) return;
  Tensor x = in[0].contiguous_data();
  if (dnnl_reorder(x, out[0], false)) return;
  copy_into(blocked_view_of_nchw(out[0], in[0].shape()[4]), x);
}

// ---- pooling ----
// The blocked geometry: P = N * C/b planes of H x W cells of b lanes, OH x OW out.
struct BlockGeo {
  int64_t P, H, W, OH, OW, b;
};

BlockGeo block_geo(const Tensor& x, const Tensor& y) {
  const Shape &s = x.shape(), &o = y.shape();
  return {s[0] * s[1], s[2], s[3], o[2], o[3], s[4]};
}

// f(plane, oh) for every output row of every plane, in parallel; `cost` is the work of one row.
template <class F>
void for_rows(const BlockGeo& g, int64_t cost, const F& f) {
  parallel_for(0, g.P * g.OH, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, cost)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) f(r / g.OH, r % g.OH);
  });
}

// Eight lanes of float (float32, or bfloat16 widened: exact) at p, the window's running max m
// updated as the scalar loop below does: v replaces m where v > m or v is NaN.
template <class T>
inline __m256 load8(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm256_loadu_ps(p);
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}
inline __m256 max_step(__m256 m, __m256 v) {
  const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_ps(m, v, take);
}

template <class T>
void max_pool_blocked(const Tensor& x0, const Tensor& y, const Attrs& a) {
  Tensor x = x0.contiguous_data();
  const IntList &k = a.ints("kernel_size"), &s = a.ints("stride"), &p = a.ints("padding"), &d = a.ints("dilation");
  const int64_t kh = k[0], kw = k[1], sh = s[0], sw = s[1], ph = p[0], pw = p[1], dh = d[0], dw = d[1];
  const BlockGeo g = block_geo(x, y);
  const int64_t b = g.b, H = g.H, W = g.W, OW = g.OW;
  using C = compute_t<T>;
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  for_rows(g, OW * kh * kw * b, [&](int64_t pl, int64_t oh) {
    const T* __restrict xp = X + pl * H * W * b;
    T* __restrict yp = Y + (pl * g.OH + oh) * OW * b;
    std::vector<C> m(b);
    // The NCHW kernel's window (pool.cpp): clipped to the plane, rows then columns, the first
    // maximum wins and NaN propagates.
    int64_t h0 = oh * sh - ph;
    const int64_t h1 = std::min(h0 + (kh - 1) * dh + 1, H);
    while (h0 < 0) h0 += dh;
    for (int64_t ow = 0; ow < OW; ++ow) {
      int64_t w0 = ow * sw - pw;
      const int64_t w1 = std::min(w0 + (kw - 1) * dw + 1, W);
      while (w0 < 0) w0 += dw;
      C* __restrict mv = m.data();
      int64_t l0 = 0;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
        // Eight lanes at a time with the window innermost: the same comparisons in the same
        // order per lane as the scalar loop, so the same result (a bfloat16 maximum is one of
        // its inputs, exactly representable; narrowed as static_cast would).
        for (; l0 + 8 <= b; l0 += 8) {
          __m256 mx = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
          for (int64_t h = h0; h < h1; h += dh)
            for (int64_t w = w0; w < w1; w += dw) mx = max_step(mx, load8(xp + (h * W + w) * b + l0));
          if constexpr (std::is_same_v<T, float>) {
            _mm256_storeu_ps(yp + ow * b + l0, mx);
          } else {
            alignas(32) float f[8];
            _mm256_store_ps(f, mx);
            narrow(f, yp + ow * b + l0, 8);
          }
        }
      }
      if (l0 == b) continue;
      for (int64_t l = l0; l < b; ++l) mv[l] = -std::numeric_limits<C>::infinity();
      for (int64_t h = h0; h < h1; h += dh)
        for (int64_t w = w0; w < w1; w += dw) {
          const T* __restrict cell = xp + (h * W + w) * b;
          for (int64_t l = l0; l < b; ++l) {
            const C v = static_cast<C>(cell[l]), cur = mv[l];
            mv[l] = (v > cur) | (v != v) ? v : cur;
          }
        }
      for (int64_t l = l0; l < b; ++l) yp[ow * b + l] = static_cast<T>(mv[l]);
    }
  });
}

// acc[l] += the NCHW kernel's row_sum (pool.cpp) of lane l over n cells starting at p: eight
// partial sums in double over the cells i = j (mod 8), the tail added in order, then combined
// as ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)).
template <class T>
void add_row_sums(const T* p, int64_t n, int64_t b, double* acc, double* part /* 8 * b */, double* tail /* b */) {
  using C = compute_t<T>;
  std::fill(part, part + 8 * b, 0.0);
  std::fill(tail, tail + b, 0.0);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      for (int64_t l = 0; l < b; ++l) part[j * b + l] += static_cast<double>(static_cast<C>(p[(i + j) * b + l]));
  for (; i < n; ++i)
    for (int64_t l = 0; l < b; ++l) tail[l] += static_cast<double>(static_cast<C>(p[i * b + l]));
  for (int64_t l = 0; l < b; ++l) {
    const double* a = part + l;
    acc[l] += tail[l] + ((a[0] + a[b]) + (a[2 * b] + a[3 * b])) + ((a[4 * b] + a[5 * b]) + (a[6 * b] + a[7 * b]));
  }
}

// y's cell (oh, ow) of plane pl = (sum of x over rows [h0, h1) x columns [w0, w1)) / div per
// lane, as the NCHW kernels round it; an empty window gives 0.
template <class T>
void average_cell(const T* xp, T* yp, const BlockGeo& g, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t div,
                  std::vector<double>& scratch) {
  const int64_t b = g.b;
  if (h0 >= h1 || w0 >= w1) {
    for (int64_t l = 0; l < b; ++l) yp[l] = T(0);
    return;
  }
  scratch.resize(10 * b);
  double *acc = scratch.data(), *part = acc + b, *tail = part + 8 * b;
  std::fill(acc, acc + b, 0.0);
  for (int64_t h = h0; h < h1; ++h) add_row_sums(xp + (h * g.W + w0) * b, w1 - w0, b, acc, part, tail);
  for (int64_t l = 0; l < b; ++l) yp[l] = static_cast<T>(static_cast<compute_t<T>>(acc[l] / static_cast<double>(div)));
}

template <class T>
void avg_pool_blocked(const Tensor& x0, const Tensor& y, const Attrs& a) {
  Tensor x = x0.contiguous_data();
  const IntList &k = a.ints("kernel_size"), &s = a.ints("stride"), &p = a.ints("padding");
  const bool cip = a.b("count_include_pad");
  const int64_t div_override = a.i("divisor_override");
  const BlockGeo g = block_geo(x, y);
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  for_rows(g, g.OW * k[0] * k[1] * g.b, [&](int64_t pl, int64_t oh) {
    std::vector<double> scratch;
    const T* xp = X + pl * g.H * g.W * g.b;
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      // The NCHW kernel's window and divisor (pool.cpp, avg_windows).
      int64_t h0 = oh * s[0] - p[0], w0 = ow * s[1] - p[1];
      int64_t h1 = std::min(h0 + k[0], g.H + p[0]), w1 = std::min(w0 + k[1], g.W + p[1]);
      const int64_t pool_size = (h1 - h0) * (w1 - w0);
      h0 = std::max<int64_t>(h0, 0);
      w0 = std::max<int64_t>(w0, 0);
      h1 = std::min(h1, g.H);
      w1 = std::min(w1, g.W);
      const int64_t div = div_override ? div_override : (cip ? pool_size : (h1 - h0) * (w1 - w0));
      average_cell(xp, Y + ((pl * g.OH + oh) * g.OW + ow) * g.b, g, h0, h1, w0, w1, div, scratch);
    }
  });
}

template <class T>
void adaptive_avg_pool_blocked(const Tensor& x0, const Tensor& y) {
  Tensor x = x0.contiguous_data();
  const BlockGeo g = block_geo(x, y);
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  for_rows(g, (g.H * g.W / std::max<int64_t>(1, g.OH * g.OW) + 1) * g.OW * g.b, [&](int64_t pl, int64_t oh) {
    std::vector<double> scratch;
    const T* xp = X + pl * g.H * g.W * g.b;
    const int64_t h0 = (oh * g.H) / g.OH, h1 = ((oh + 1) * g.H + g.OH - 1) / g.OH;  // pool.cpp's ad_start / ad_end
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      const int64_t w0 = (ow * g.W) / g.OW, w1 = ((ow + 1) * g.W + g.OW - 1) / g.OW;
      average_cell(xp, Y + ((pl * g.OH + oh) * g.OW + ow) * g.b, g, h0, h1, w0, w1, (h1 - h0) * (w1 - w0), scratch);
    }
  });
}

void max_pool2d_blocked_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  if (out[0].numel() == 0) return;
  LUCID_DISPATCH_FLOATING(in[0].dtype(), "max_pool2d_blocked", [&] { max_pool_blocked<scalar_t>(in[0], out[0], a); });
}

void avg_pool2d_blocked_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  if (out[0].numel() == 0) return;
  LUCID_DISPATCH_FLOATING(in[0].dtype(), "avg_pool2d_blocked", [&] { avg_pool_blocked<scalar_t>(in[0], out[0], a); });
}

void adaptive_avg_pool2d_blocked_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  if (out[0].numel() == 0) return;
  LUCID_DISPATCH_FLOATING(in[0].dtype(), "adaptive_avg_pool2d_blocked", [&] { adaptive_avg_pool_blocked<scalar_t>(in[0], out[0]); });
}

// ---- eval batch norm ----
// The values of a [C] parameter in double (empty when absent), as the NCHW kernel reads them.
std::vector<double> doubles_of(const Tensor& t) {
  std::vector<double> v;
  if (!t.defined()) return v;
  Tensor d = Tensor::empty(t.shape(), DType::Float64);
  copy_into(d, t);
  v.assign(d.data<double>(), d.data<double>() + d.numel());
  return v;
}

// Eight lanes of the loop in batch_norm_blocked below: (x - m) * a + c as one fused multiply-add
// (the scalar loops contract it so, here and in norm.cpp's NCHW kernel), rounded to T, then relu
// of the rounded value (relu(-0.0) stays -0.0, NaN stays NaN).
template <class T, bool Relu>
inline void bn_lanes8(const T* x, T* y, const float* m, const float* a, const float* c) {
  __m256 v = _mm256_fmadd_ps(_mm256_sub_ps(load8(x), _mm256_loadu_ps(m)), _mm256_loadu_ps(a), _mm256_loadu_ps(c));
  const __m256 zero = _mm256_setzero_ps();
  if constexpr (std::is_same_v<T, float>) {
    if constexpr (Relu) v = _mm256_blendv_ps(v, zero, _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
    _mm256_storeu_ps(y, v);
  } else {
    alignas(32) float f[8];
    _mm256_store_ps(f, v);
    narrow(f, y, 8);
    if constexpr (Relu) {
      v = load8(y);  // the rounded values, exactly
      _mm256_store_ps(f, _mm256_blendv_ps(v, zero, _mm256_cmp_ps(v, zero, _CMP_LT_OQ)));
      narrow(f, y, 8);
    }
  }
}

// norm.cpp's eval batch norm per channel c: mean and 1/sqrt(var + eps) in double, rounded to the
// compute type, a = rstd * weight and y = (x - mean) * a + bias in the compute type; with `relu`,
// then eager's relu of that rounded value (sm::Relu: negatives to 0, NaN and -0.0 kept).
template <class T, bool Relu>
void batch_norm_blocked(const TensorList& in, const Tensor& y, double eps) {
  using C = compute_t<T>;
  Tensor x = in[0].contiguous_data();
  const Shape& s = x.shape();
  const int64_t N = s[0], CB = s[1], HW = s[2] * s[3], b = s[4], Ch = CB * b;
  const std::vector<double> rm = doubles_of(in[1]), rv = doubles_of(in[2]), w = doubles_of(in[3]), bi = doubles_of(in[4]);
  std::vector<C> mc(Ch), ac(Ch), cc(Ch);
  for (int64_t c = 0; c < Ch; ++c) {
    const double r = 1.0 / std::sqrt(rv[c] + eps);
    const C rc = static_cast<C>(r), wc = w.empty() ? C(1) : static_cast<C>(w[c]);
    mc[c] = static_cast<C>(rm[c]);
    ac[c] = rc * wc;
    cc[c] = bi.empty() ? C(0) : static_cast<C>(bi[c]);
  }
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  // Over cells (a plane's pixel: b lanes), so one nhwc image (a single plane) uses every thread.
  parallel_for(0, N * CB * HW, std::max<int64_t>(1, kParallelGrain / b), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1;) {
      const int64_t pl = i / HW, end = std::min(i1, (pl + 1) * HW), c0 = (pl % CB) * b;
      const C* __restrict m = mc.data() + c0;
      const C* __restrict a = ac.data() + c0;
      const C* __restrict c = cc.data() + c0;
      for (; i < end; ++i) {
        const T* __restrict xp = X + i * b;
        T* __restrict yp = Y + i * b;
        int64_t l0 = 0;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
          for (; l0 + 8 <= b; l0 += 8) bn_lanes8<T, Relu>(xp + l0, yp + l0, m + l0, a + l0, c + l0);
        }
        for (int64_t l = l0; l < b; ++l) {
          const T v = static_cast<T>((static_cast<C>(xp[l]) - m[l]) * a[l] + c[l]);
          if constexpr (Relu) yp[l] = static_cast<T>(sm::Relu::apply(static_cast<C>(v)));
          else yp[l] = v;
        }
      }
    }
  });
}

void batch_norm_blocked_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  if (out[0].numel() == 0) return;
  LUCID_DISPATCH_FLOATING(in[0].dtype(), "batch_norm_blocked", [&] {
    if (a.b("relu", false)) batch_norm_blocked<scalar_t, true>(in, out[0], a.f("eps"));
    else batch_norm_blocked<scalar_t, false>(in, out[0], a.f("eps"));
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(BlockChannels, CPU, block_channels_kernel);
LUCID_REGISTER_KERNEL(UnblockChannels, CPU, unblock_channels_kernel);
LUCID_REGISTER_KERNEL(MaxPool2dBlocked, CPU, max_pool2d_blocked_kernel);
LUCID_REGISTER_KERNEL(AvgPool2dBlocked, CPU, avg_pool2d_blocked_kernel);
LUCID_REGISTER_KERNEL(AdaptiveAvgPool2dBlocked, CPU, adaptive_avg_pool2d_blocked_kernel);
LUCID_REGISTER_KERNEL(BatchNormBlocked, CPU, batch_norm_blocked_kernel);

}  // namespace lucid::cpu
