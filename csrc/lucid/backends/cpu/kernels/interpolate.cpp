// CPU kernels of Interpolate and InterpolateBackward (op records in ops/nn_embed.cpp) for 4-D
// input: per output index along each dim a few source taps with weights (nearest, nearest-exact,
// bilinear, bicubic with A = -0.75), applied per plane; the backward is the adjoint (taps
// scatter-added). Source indices and weights follow PyTorch's CPU kernels (float index math for
// float inputs).
#include <algorithm>
#include <cmath>
#include <vector>

#include "lucid/core/parallel.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

using nnutil::kBicubic;
using nnutil::kBilinear;
using nnutil::kNearest;
using nnutil::kNearestExact;

// Per output index along one dim: n source indices and their weights (n = 1, 2 or 4).
template <class C>
struct Taps {
  int n = 1;
  std::vector<int64_t> idx;  // [out * n]
  std::vector<C> w;          // [out * n]
};

template <class C>
Taps<C> make_taps(int64_t in, int64_t out, int mode, bool align, double scale) {
  Taps<C> t;
  t.n = mode == kBicubic ? 4 : (mode == kBilinear ? 2 : 1);
  t.idx.resize(out * t.n);
  t.w.resize(out * t.n);
  if (mode == kNearest || mode == kNearestExact) {
    float s = scale > 0 ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
    for (int64_t o = 0; o < out; ++o) {
      int64_t src;
      if (mode == kNearest) {
        if (out == in) src = o;
        else if (out == 2 * in) src = o >> 1;
        else src = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
      } else {
        src = std::min(static_cast<int64_t>(std::floor((static_cast<float>(o) + 0.5f) * s)), in - 1);
      }
      t.idx[o] = src;
      t.w[o] = C(1);
    }
    return t;
  }
  C s;
  if (align) s = out > 1 ? static_cast<C>(in - 1) / static_cast<C>(out - 1) : C(0);
  else s = scale > 0 ? static_cast<C>(1.0 / scale) : static_cast<C>(in) / static_cast<C>(out);
  for (int64_t o = 0; o < out; ++o) {
    C real = align ? s * static_cast<C>(o) : s * (static_cast<C>(o) + C(0.5)) - C(0.5);
    if (mode == kBilinear) {
      if (!align && real < 0) real = 0;
      int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
      C l = std::min(std::max(real - static_cast<C>(i0), C(0)), C(1));
      t.idx[2 * o] = i0;
      t.idx[2 * o + 1] = i0 + (i0 < in - 1 ? 1 : 0);
      t.w[2 * o] = C(1) - l;
      t.w[2 * o + 1] = l;
    } else {
      // Cubic convolution (A = -0.75) over 4 clamped neighbours.
      int64_t i0 = static_cast<int64_t>(std::floor(real));
      C x = real - static_cast<C>(i0);
      const C A = C(-0.75);
      auto c1 = [&](C v) { return ((A + 2) * v - (A + 3)) * v * v + 1; };
      auto c2 = [&](C v) { return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A; };
      C cw[4] = {c2(x + 1), c1(x), c1(1 - x), c2(2 - x)};
      for (int k = 0; k < 4; ++k) {
        t.idx[4 * o + k] = std::min(std::max(i0 - 1 + k, int64_t{0}), in - 1);
        t.w[4 * o + k] = cw[k];
      }
    }
  }
  return t;
}

// Forward (Adjoint=false): small[N,C,H,W] -> big[N,C,OH,OW]; adjoint: big grad -> small grad.
template <class T, bool Adjoint>
void interp_run(const T* src, T* dst, int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, const Attrs& a) {
  using C = compute_t<T>;
  int mode = nnutil::parse_interp_mode(a.s("mode"));
  bool align = a.b("align_corners");
  Taps<C> th = make_taps<C>(H, OH, mode, align, a.f("scale_h")), tw = make_taps<C>(W, OW, mode, align, a.f("scale_w"));
  const int nh = th.n, nw = tw.n;
  parallel_for(0, planes, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(OH * OW, 1)), [&](int64_t b, int64_t e) {
    std::vector<C> acc(Adjoint ? H * W : 0);
    for (int64_t p = b; p < e; ++p) {
      if constexpr (!Adjoint) {
        const T* x = src + p * H * W;
        T* y = dst + p * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            C v = 0;
            for (int i = 0; i < nh; ++i) {
              const T* row = x + th.idx[oh * nh + i] * W;
              C rv = 0;
              for (int j = 0; j < nw; ++j) rv += tw.w[ow * nw + j] * static_cast<C>(row[tw.idx[ow * nw + j]]);
              v += th.w[oh * nh + i] * rv;
            }
            y[oh * OW + ow] = static_cast<T>(v);
          }
      } else {
        const T* g = src + p * OH * OW;
        std::fill(acc.begin(), acc.end(), C(0));
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            C gv = static_cast<C>(g[oh * OW + ow]);
            for (int i = 0; i < nh; ++i) {
              C* row = acc.data() + th.idx[oh * nh + i] * W;
              C gh = th.w[oh * nh + i] * gv;
              for (int j = 0; j < nw; ++j) row[tw.idx[ow * nw + j]] += tw.w[ow * nw + j] * gh;
            }
          }
        T* y = dst + p * H * W;
        for (int64_t k = 0; k < H * W; ++k) y[k] = static_cast<T>(acc[k]);
      }
    }
  });
}

template <bool Adjoint>
void interp_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = in[0].contiguous_data();
  const Shape& s = Adjoint ? out[0].shape() : x.shape();
  const IntList& sz = a.ints("size");
  int64_t planes = s[0] * s[1];
  if (x.numel() == 0 || out[0].numel() == 0) return;
  LUCID_DISPATCH_FLOATING(x.dtype(), "interpolate", [&] {
    interp_run<scalar_t, Adjoint>(x.data<scalar_t>(), out[0].data<scalar_t>(), planes, s[2], s[3], sz[0], sz[1], a);
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Interpolate, CPU, interp_kernel<false>);
LUCID_REGISTER_KERNEL(InterpolateBackward, CPU, interp_kernel<true>);

}  // namespace lucid::cpu
