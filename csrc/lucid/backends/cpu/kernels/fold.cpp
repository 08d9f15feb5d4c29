// CPU kernels of Im2Col and Col2Im (torch.nn.functional.unfold / fold; records in
// ops/conv_fold.cpp): direct loops over the window geometry (ops/linalg_geometry.h), channels
// (rows of the column matrix) in parallel, one batch item at a time. col2im sums overlapping
// windows in double.
#include <algorithm>
#include <vector>

#include "lucid/core/parallel.h"
#include "lucid/ops/linalg_geometry.h"

namespace lucid::cpu {

namespace {

template <class T>
void im2col(const T* x, T* col, const FoldGeo& g) {
  const int64_t KK = g.KH * g.KW, L = g.OH * g.OW;
  parallel_for(0, g.C * KK, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(L, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t c = r / KK, kh = (r % KK) / g.KW, kw = r % g.KW;
      const T* xp = x + c * g.H * g.W;
      T* cp = col + r * L;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        int64_t ih = oh * g.sh - g.ph + kh * g.dh;
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          int64_t iw = ow * g.sw - g.pw + kw * g.dw;
          cp[oh * g.OW + ow] = (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) ? xp[ih * g.W + iw] : T(0);
        }
      }
    }
  });
}

template <class T>
void col2im(const T* col, T* x, const FoldGeo& g) {
  const int64_t KK = g.KH * g.KW, L = g.OH * g.OW;
  parallel_for(0, g.C, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(KK * L, 1)), [&](int64_t c0, int64_t c1) {
    std::vector<double> acc(g.H * g.W);
    for (int64_t c = c0; c < c1; ++c) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = 0; k < KK; ++k) {
        int64_t kh = k / g.KW, kw = k % g.KW;
        const T* cp = col + (c * KK + k) * L;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            int64_t iw = ow * g.sw - g.pw + kw * g.dw;
            if (iw >= 0 && iw < g.W) acc[ih * g.W + iw] += static_cast<double>(static_cast<compute_t<T>>(cp[oh * g.OW + ow]));
          }
        }
      }
      T* xp = x + c * g.H * g.W;
      for (int64_t i = 0; i < g.H * g.W; ++i) xp[i] = static_cast<T>(static_cast<compute_t<T>>(acc[i]));
    }
  });
}

void im2col_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = in[0].contiguous_data();
  int64_t nd = x.ndim(), N = nd == 4 ? x.shape()[0] : 1;
  FoldGeo g = fold_geo("unfold", x.shape()[nd - 3], x.shape()[nd - 2], x.shape()[nd - 1], a);
  int64_t in_sz = g.C * g.H * g.W, out_sz = g.C * g.KH * g.KW * g.OH * g.OW;
  LUCID_DISPATCH_FLOATING(x.dtype(), "unfold", [&] {
    for (int64_t n = 0; n < N; ++n) im2col<scalar_t>(x.data<scalar_t>() + n * in_sz, out[0].data<scalar_t>() + n * out_sz, g);
  });
}

void col2im_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor x = in[0].contiguous_data();
  const IntList &os = a.ints("output_size"), &k = a.ints("kernel_size");
  int64_t nd = x.ndim(), N = nd == 3 ? x.shape()[0] : 1;
  FoldGeo g = fold_geo("fold", x.shape()[nd - 2] / (k[0] * k[1]), os[0], os[1], a);
  int64_t in_sz = x.shape()[nd - 2] * x.shape()[nd - 1], out_sz = g.C * g.H * g.W;
  LUCID_DISPATCH_FLOATING(x.dtype(), "fold", [&] {
    for (int64_t n = 0; n < N; ++n) col2im<scalar_t>(x.data<scalar_t>() + n * in_sz, out[0].data<scalar_t>() + n * out_sz, g);
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Im2Col, CPU, im2col_kernel);
LUCID_REGISTER_KERNEL(Col2Im, CPU, col2im_kernel);

}  // namespace lucid::cpu
