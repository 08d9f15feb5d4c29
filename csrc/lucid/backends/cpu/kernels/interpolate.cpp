// CPU kernels of Interpolate and InterpolateBackward (op records in ops/nn_embed.cpp) for 4-D
// input: per output index along each dim a few source taps with weights (ops/interpolate_taps.h:
// nearest, nearest-exact, bilinear, bicubic), applied per plane; the backward is the adjoint (taps
// scatter-added).
#include <algorithm>
#include <cmath>
#include <vector>

#include "lucid/core/parallel.h"
#include "lucid/ops/interpolate_taps.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

// Forward (Adjoint=false): small[N,C,H,W] -> big[N,C,OH,OW]; adjoint: big grad -> small grad.
template <class T, bool Adjoint>
void interp_run(const T* src, T* dst, int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW, const Attrs& a) {
  using C = compute_t<T>;
  int mode = nnutil::parse_interp_mode(a.s("mode"));
  bool align = a.b("align_corners");
  nnutil::InterpTaps<C> th = nnutil::interp_taps<C>(H, OH, mode, align, a.f("scale_h")),
                        tw = nnutil::interp_taps<C>(W, OW, mode, align, a.f("scale_w"));
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
