// Interpolate's source taps (ops/nn_embed.cpp's Interpolate / InterpolateBackward): per output index
// along one dim, n source indices and weights (nearest and nearest-exact 1, bilinear 2, bicubic 4
// with A = -0.75), following PyTorch's CPU kernels (float index math for float inputs). Device-
// neutral: every backend applies the same taps, computed on the host by one compiled definition
// (interpolate_taps.cpp, instantiated for float and double), so the CPU and CUDA kernels read the
// same sources with the same weights, bit for bit.
#pragma once
#include <cstdint>
#include <vector>

namespace lucid::nnutil {

template <class C>
struct InterpTaps {
  int n = 1;
  std::vector<int64_t> idx;  // [out * n]
  std::vector<C> w;          // [out * n]
};

// Taps of a dim of `in` input positions resized to `out` (mode: nn_layout.h's InterpMode; scale > 0
// is the user's scale factor, used for the source coordinates as PyTorch does).
// Defined for C = float and double only (interpolate_taps.cpp).
template <class C>
InterpTaps<C> interp_taps(int64_t in, int64_t out, int mode, bool align, double scale);

}  // namespace lucid::nnutil
