// CUDA kernels of Im2Col and Col2Im (torch.nn.functional.unfold / fold; records in
// ops/conv_fold.cpp; CPU kernels in backends/cpu/kernels/fold.cpp), over the shared window geometry
// (FoldGeo, ops/linalg_geometry.h). Im2Col writes each column element from its input pixel (or 0
// in the padding). Col2Im gathers instead of scattering: each output pixel sums the column entries
// of the windows covering it in double, in ascending kernel offset, which is the CPU's summation
// order for that pixel, so the results are the CPU's bits and no atomics are needed.
#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/backends/cuda/strided_move.h"
#include "lucid/ops/linalg_geometry.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

// Element e of the [N, C*KH*KW, OH*OW] column matrix from x [N, C, H, W] (U: an unsigned type of the item size).
template <class U>
__global__ void im2col_kernel(const U* x, U* col, FoldGeo g, int64_t n) {
  const int64_t KK = g.KH * g.KW, L = g.OH * g.OW;
  LUCID_GRID_LOOP(int64_t, e, n) {
    int64_t l = e % L, rr = e / L;
    int64_t r = rr % (g.C * KK), b = rr / (g.C * KK);
    int64_t c = r / KK, kh = (r % KK) / g.KW, kw = r % g.KW;
    int64_t oh = l / g.OW, ow = l % g.OW;
    int64_t ih = oh * g.sh - g.ph + kh * g.dh, iw = ow * g.sw - g.pw + kw * g.dw;
    col[e] = (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) ? x[((b * g.C + c) * g.H + ih) * g.W + iw] : U(0);
  }
}

// Pixel e of x [N, C, H, W] from the column matrix [N, C*KH*KW, OH*OW].
template <class T>
__global__ void col2im_kernel(const T* col, T* x, FoldGeo g, int64_t n) {
  const int64_t KK = g.KH * g.KW, L = g.OH * g.OW;
  LUCID_GRID_LOOP(int64_t, e, n) {
    int64_t iw = e % g.W, ih = (e / g.W) % g.H, bc = e / (g.H * g.W);  // bc = b * C + c
    const T* cp = col + bc * KK * L;
    double acc = 0;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      int64_t th = ih + g.ph - kh * g.dh;
      if (th < 0 || th % g.sh != 0 || th / g.sh >= g.OH) continue;
      int64_t oh = th / g.sh;
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        int64_t tw = iw + g.pw - kw * g.dw;
        if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.OW) continue;
        acc += static_cast<double>(to_compute(cp[(kh * g.KW + kw) * L + oh * g.OW + tw / g.sw]));
      }
    }
    x[e] = from_compute<T>(static_cast<compute_t<T>>(acc));
  }
}

void im2col_fn(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard dg(out[0].device());
  Tensor x = contiguous(in[0]);
  int64_t nd = x.ndim();
  FoldGeo g = fold_geo("unfold", x.shape()[nd - 3], x.shape()[nd - 2], x.shape()[nd - 1], a);
  const int64_t n = out[0].numel();
  if (n == 0) return;
  cudaStream_t s = current_stream(out[0].device());
  auto run = [&](auto tag) {  // a move of bits: by item size (0 bits are +0 in every floating dtype)
    using U = decltype(tag);
    im2col_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<const U*>(x.data_ptr()), static_cast<U*>(out[0].data_ptr()), g, n);
  };
  switch (itemsize(x.dtype())) {
    case 2: run(uint16_t{}); break;
    case 4: run(uint32_t{}); break;
    default: run(uint64_t{}); break;
  }
  check_launch("im2col_kernel");
}

void col2im_fn(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard dg(out[0].device());
  Tensor x = contiguous(in[0]);
  const IntList &os = a.ints("output_size"), &k = a.ints("kernel_size");
  int64_t nd = x.ndim();
  FoldGeo g = fold_geo("fold", x.shape()[nd - 2] / (k[0] * k[1]), os[0], os[1], a);
  const int64_t n = out[0].numel();
  if (n == 0) return;
  cudaStream_t s = current_stream(out[0].device());
  LUCID_DISPATCH_FLOATING(x.dtype(), "fold", [&] {
    using T = device_t<scalar_t>;
    col2im_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(x.data_ptr()), static_cast<T*>(out[0].data_ptr()), g, n);
  });
  check_launch("col2im_kernel");
}

}  // namespace

LUCID_REGISTER_KERNEL(Im2Col, CUDA, im2col_fn);
LUCID_REGISTER_KERNEL(Col2Im, CUDA, col2im_fn);

}  // namespace lucid::cuda
