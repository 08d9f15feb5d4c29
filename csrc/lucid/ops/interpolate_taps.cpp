// The one compiled definition of Interpolate's taps (interpolate_taps.h), shared by every backend's
// kernels, so they agree on source indices and weights to the bit.
#include "lucid/ops/interpolate_taps.h"

#include <algorithm>
#include <cmath>

#include "lucid/ops/nn_layout.h"

namespace lucid::nnutil {

template <class C>
InterpTaps<C> interp_taps(int64_t in, int64_t out, int mode, bool align, double scale) {
  InterpTaps<C> t;
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

template InterpTaps<float> interp_taps<float>(int64_t, int64_t, int, bool, double);
template InterpTaps<double> interp_taps<double>(int64_t, int64_t, int, bool, double);

}  // namespace lucid::nnutil
