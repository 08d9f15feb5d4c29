// cast_contiguous (device_copy.h): the converting copy of contiguous buffers, one small
// grid-stride kernel per dtype pair with cuda_dtype.cuh's convert (the CPU kernel's rules). Kept
// apart from the strided copies so the 72 pairs compile in their own translation unit.
#include <algorithm>

#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/device_copy.h"
#include "lucid/backends/cuda/stream.h"

namespace lucid::cuda {

namespace {

constexpr int kThreads = 256;

template <class To, class From>
__global__ void __launch_bounds__(kThreads) cast_kernel(To* out, const From* in, int64_t n) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) out[i] = convert<To>(in[i]);
}

// A template, so that the same-dtype pairs are discarded, never instantiated.
template <class To, class From>
void launch_cast(const Tensor& dst, const Tensor& src, cudaStream_t stream) {
  if constexpr (std::is_same_v<To, From>) {
    throw Error("cast_contiguous: source and destination have the same dtype");
  } else {
    const int64_t n = dst.numel();
    const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, int64_t{1} << 24));
    cast_kernel<To, From><<<blocks, kThreads, 0, stream>>>(static_cast<To*>(dst.data_ptr()), static_cast<const From*>(src.data_ptr()), n);
    check_launch("copy (cast)");
  }
}

}  // namespace

void cast_contiguous(const Tensor& dst, const Tensor& src) {
  const int64_t n = dst.numel();
  LUCID_CHECK(dst.is_contiguous() && src.is_contiguous() && src.numel() == n && dst.device() == src.device(), Error,
              "cast_contiguous: expected contiguous tensors of one size on one device");
  if (n == 0) return;
  DeviceGuard g(dst.device());
  cudaStream_t stream = current_stream(dst.device());
  LUCID_CUDA_DISPATCH_ALL(dst.dtype(), "copy", [&] {
    using To = scalar_t;
    LUCID_CUDA_DISPATCH_ALL(src.dtype(), "copy", [&] {
      launch_cast<To, scalar_t>(dst, src, stream);
    });
  });
}

}  // namespace lucid::cuda
