// CUDA kernel of Dropout (op record in ops/nn_softmax.cpp): y = x * mask * (1 / (1 - p)) in the
// compute type (float for 16-bit), in the CPU kernel's order of operations, so the result is the
// CPU's bit for bit; p = 1 gives zeros. The keep-mask (bool or x's dtype) is drawn by the caller
// (Bernoulli, the same numbers as the CPU for the same seed). Operands are made contiguous; a
// strided in-place destination is written through a contiguous temporary.
#include "lucid/backends/cuda/kernels/nn_device.cuh"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

template <class D, class M>
__global__ void dropout_kernel(D* o, const D* x, const M* m, int64_t n, compute_t<D> scale) {
  using C = compute_t<D>;
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    C mv;
    if constexpr (std::is_same_v<M, bool>) mv = C(m[i]);
    else mv = to_compute(m[i]);
    o[i] = from_compute<D>(to_compute(x[i]) * mv * scale);
  }
}

void dropout(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  double p = a.f("p");
  if (out[0].numel() == 0) return;
  Tensor x = in[0].contiguous_data(), m = in[1].contiguous_data();
  cudaStream_t s = current_stream(out[0].device());
  with_contiguous_out(out[0], [&](const Tensor& o) {
    LUCID_DISPATCH_FLOATING(x.dtype(), "dropout", [&] {
      using D = device_t<scalar_t>;
      using C = compute_t<D>;
      const C scale = p >= 1.0 ? C(0) : static_cast<C>(1.0 / (1.0 - p));
      int64_t n = o.numel();
      if (m.dtype() == DType::Bool)
        dropout_kernel<D, bool><<<grid_for(n), kThreads, 0, s>>>(o.data<D>(), x.data<D>(), m.data<bool>(), n, scale);
      else
        dropout_kernel<D, D><<<grid_for(n), kThreads, 0, s>>>(o.data<D>(), x.data<D>(), m.data<D>(), n, scale);
      check_launch("dropout");
    });
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Dropout, CUDA, dropout);

}  // namespace lucid::cuda
