// CUDA kernels of Interpolate and InterpolateBackward for 4-D input (records in ops/nn_embed.cpp;
// CPU kernels in backends/cpu/kernels/interpolate.cpp). The taps (source indices and weights per
// output row and column) are the CPU's, from the one host definition of ops/interpolate_taps.h,
// copied to the device per call; the forward applies them per output element in the CPU's order
// (rows of taps outer, columns inner, in the compute type: float for 16-bit floats). The backward
// scatter-adds each output gradient into its taps with atomics in the compute type (float scratch
// for 16-bit floats, rounded once at the end), so its sums come in an unspecified order: the last
// bits can differ from the CPU's sequential sums, as torch's CUDA upsample backward.
#include <vector>

#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/backends/cuda/strided_move.h"
#include "lucid/ops/interpolate_taps.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

// The taps of both dims on the device: one int64 buffer [hi | wi] and one C buffer [hw | ww].
template <class C>
struct DeviceTaps {
  Tensor idx, w;
  int nh = 1, nw = 1;
  int64_t OH = 0, OW = 0;
};

template <class C>
DeviceTaps<C> device_taps(int64_t H, int64_t W, int64_t OH, int64_t OW, const Attrs& a, const Device& dev) {
  int mode = nnutil::parse_interp_mode(a.s("mode"));
  bool align = a.b("align_corners");
  nnutil::InterpTaps<C> th = nnutil::interp_taps<C>(H, OH, mode, align, a.f("scale_h"));
  nnutil::InterpTaps<C> tw = nnutil::interp_taps<C>(W, OW, mode, align, a.f("scale_w"));
  std::vector<int64_t> idx(th.idx);
  idx.insert(idx.end(), tw.idx.begin(), tw.idx.end());
  std::vector<C> w(th.w);
  w.insert(w.end(), tw.w.begin(), tw.w.end());
  DeviceTaps<C> t;
  t.nh = th.n;
  t.nw = tw.n;
  t.OH = OH;
  t.OW = OW;
  t.idx = Tensor::empty({static_cast<int64_t>(idx.size())}, DType::Int64, dev);
  t.w = Tensor::empty({static_cast<int64_t>(w.size())}, dtype_of<C>::value, dev);
  cudaStream_t s = current_stream(dev);
  // From pageable memory: the copy stages the buffer before returning, so the vectors may go.
  check_cuda(cudaMemcpyAsync(t.idx.data_ptr(), idx.data(), idx.size() * sizeof(int64_t), cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync(interpolate taps)");
  check_cuda(cudaMemcpyAsync(t.w.data_ptr(), w.data(), w.size() * sizeof(C), cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync(interpolate taps)");
  return t;
}

// y[p, oh, ow] = sum_i wh[oh, i] * (sum_j ww[ow, j] * x[p, hi[oh, i], wi[ow, j]]).
template <class T, class C>
__global__ void interp_forward_kernel(const T* x, T* y, const int64_t* idx, const C* w, int nh, int nw, int64_t H, int64_t W,
                                      int64_t OH, int64_t OW, int64_t n) {
  const int64_t* hi = idx;
  const int64_t* wi = idx + OH * nh;
  const C* hw = w;
  const C* ww = w + OH * nh;
  LUCID_GRID_LOOP(int64_t, e, n) {
    int64_t ow = e % OW, oh = (e / OW) % OH, p = e / (OH * OW);
    const T* xp = x + p * H * W;
    C v = 0;
    for (int i = 0; i < nh; ++i) {
      const T* row = xp + hi[oh * nh + i] * W;
      C rv = 0;
      for (int j = 0; j < nw; ++j) rv += ww[ow * nw + j] * static_cast<C>(to_compute(row[wi[ow * nw + j]]));
      v += hw[oh * nh + i] * rv;
    }
    y[e] = from_compute<T>(static_cast<compute_t<T>>(v));
  }
}

// acc[p, hi, wi] += ww * (wh * g[p, oh, ow]) for every tap of output element e (the CPU's products).
template <class T, class C>
__global__ void interp_backward_kernel(const T* g, C* acc, const int64_t* idx, const C* w, int nh, int nw, int64_t H,
                                       int64_t W, int64_t OH, int64_t OW, int64_t n) {
  const int64_t* hi = idx;
  const int64_t* wi = idx + OH * nh;
  const C* hw = w;
  const C* ww = w + OH * nh;
  LUCID_GRID_LOOP(int64_t, e, n) {
    int64_t ow = e % OW, oh = (e / OW) % OH, p = e / (OH * OW);
    C gv = static_cast<C>(to_compute(g[e]));
    C* ap = acc + p * H * W;
    for (int i = 0; i < nh; ++i) {
      C* row = ap + hi[oh * nh + i] * W;
      C gh = hw[oh * nh + i] * gv;
      for (int j = 0; j < nw; ++j) atomicAdd(row + wi[ow * nw + j], ww[ow * nw + j] * gh);
    }
  }
}

template <class T, class C>
__global__ void round_kernel(const C* acc, T* out, int64_t n) {
  LUCID_GRID_LOOP(int64_t, i, n) out[i] = from_compute<T>(static_cast<compute_t<T>>(acc[i]));
}

template <bool Adjoint>
void interp_fn(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Device dev = out[0].device();
  DeviceGuard dg(dev);
  Tensor x = contiguous(in[0]);
  const Shape& s = Adjoint ? out[0].shape() : x.shape();
  const IntList& sz = a.ints("size");
  if (Adjoint) zero(out[0]);
  if (x.numel() == 0 || out[0].numel() == 0) return;
  const int64_t H = s[2], W = s[3], OH = sz[0], OW = sz[1];
  const int64_t n = s[0] * s[1] * OH * OW;  // output elements of the forward
  cudaStream_t st = current_stream(dev);
  LUCID_DISPATCH_FLOATING(x.dtype(), "interpolate", [&] {
    using T = device_t<scalar_t>;
    using C = compute_t<scalar_t>;
    DeviceTaps<C> t = device_taps<C>(H, W, OH, OW, a, dev);
    const int64_t* ip = t.idx.template data<int64_t>();
    const C* wp = t.w.template data<C>();
    if constexpr (!Adjoint) {
      interp_forward_kernel<T, C><<<grid_for(n), kThreads, 0, st>>>(static_cast<const T*>(x.data_ptr()),
                                                                        static_cast<T*>(out[0].data_ptr()), ip, wp, t.nh, t.nw,
                                                                        H, W, OH, OW, n);
      check_launch("interp_forward_kernel");
    } else {
      constexpr bool direct = std::is_same_v<T, C>;  // float32 / float64 accumulate in the output
      Tensor acc = direct ? out[0] : Tensor::empty(out[0].shape(), dtype_of<C>::value, dev);
      if (!direct) zero(acc);
      interp_backward_kernel<T, C><<<grid_for(n), kThreads, 0, st>>>(static_cast<const T*>(x.data_ptr()), acc.template data<C>(),
                                                                         ip, wp, t.nh, t.nw, H, W, OH, OW, n);
      check_launch("interp_backward_kernel");
      if constexpr (!direct) {
        const int64_t m = out[0].numel();
        round_kernel<T, C><<<grid_for(m), kThreads, 0, st>>>(acc.template data<C>(), static_cast<T*>(out[0].data_ptr()), m);
        check_launch("round_kernel");
      }
    }
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Interpolate, CUDA, interp_fn<false>);
LUCID_REGISTER_KERNEL(InterpolateBackward, CUDA, interp_fn<true>);

}  // namespace lucid::cuda
