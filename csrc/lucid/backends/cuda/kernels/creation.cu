// CUDA kernels of Fill (full/zeros/ones and the in-place fill_/zero_, any strides) and of the
// deterministic creation ops (records in ops/core_ops.cpp and ops/creation_ops.cpp): Empty
// (nothing to write), Arange, Linspace, Eye. Each gives the CPU kernel's values to the last bit
// (backends/cpu/kernels/creation.cpp, strided_copy.cpp's fill): a fill's value is converted on
// the host by the CPU's own expression and written by its bits; arange and linspace compute each
// element in double with the CPU's formula, whose multiply-add the host compiler fuses (built
// with -mfma; creation.cpp.o has vfmadd/vfnmadd for them), so the device uses fma explicitly.
#include <cstring>

#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/device_copy.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>((n + kThreads - 1) / kThreads, 1), int64_t{1} << 24));
}

// A compute-type value stored as T with the CPU's static_cast<T>(static_cast<compute_t<T>>(v)):
// integers through convert (int8/uint8 by way of int64), floats rounded to float first for the
// 16-bit ones.
template <class T> __device__ T store_double(double v) {
  if constexpr (std::is_integral_v<T>) return convert<T>(v);
  else return from_compute<T>(static_cast<compute_t<T>>(v));
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    arange_kernel(T* p, int64_t n, double start, double step, int64_t s0, int64_t st, bool exact) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (std::is_integral_v<T>) {
      // (int64 arithmetic wraps as on the host; the cast to T keeps the low bits)
      const int64_t v = exact ? static_cast<int64_t>(static_cast<uint64_t>(s0) + static_cast<uint64_t>(st) * static_cast<uint64_t>(i))
                              : static_cast<int64_t>(fma(step, static_cast<double>(i), start));
      p[i] = static_cast<T>(v);
    } else {
      p[i] = store_double<T>(fma(step, static_cast<double>(i), start));
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    linspace_kernel(T* p, int64_t n, double start, double end, double step, int64_t half) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double v = i < half ? fma(step, static_cast<double>(i), start) : fma(-step, static_cast<double>(n - 1 - i), end);
    p[i] = store_double<T>(v);
  }
}

template <class U>
__global__ void __launch_bounds__(kThreads) diagonal_kernel(U* p, int64_t m, int64_t k, U one) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < k; i += stride) p[i * m + i] = one;
}

void check_dense(const Tensor& o, const char* op) {
  LUCID_CHECK(o.is_contiguous(), Error, op, ": expected a contiguous output");
}

void empty_kernel(const TensorList&, const TensorList&, const Attrs&) {}

void fill_kernel(const TensorList&, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  const double value = a.f("value");
  uint64_t bits = 0;
  LUCID_DISPATCH_ALL(o.dtype(), "fill", [&] {
    const scalar_t sv = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(value));  // the CPU's fill
    std::memcpy(&bits, &sv, sizeof(sv));
  });
  fill_bits(o, bits);
}

void arange_kernel_cuda(const TensorList&, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  const int64_t n = o.numel();
  if (n == 0) return;
  check_dense(o, "arange");
  const double start = a.f("start"), step = a.f("step");
  const int64_t s0 = static_cast<int64_t>(start), st = static_cast<int64_t>(step);
  const bool exact = static_cast<double>(s0) == start && static_cast<double>(st) == step;
  DeviceGuard g(o.device());
  LUCID_CUDA_DISPATCH_NUMERIC(o.dtype(), "arange", [&] {
    arange_kernel<scalar_t><<<blocks_for(n), kThreads, 0, current_stream(o.device())>>>(o.data<scalar_t>(), n, start, step, s0, st,
                                                                                        exact);
  });
  check_launch("arange");
}

void linspace_kernel_cuda(const TensorList&, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  const int64_t n = a.i("steps");
  if (o.numel() == 0) return;
  check_dense(o, "linspace");
  DeviceGuard g(o.device());
  // The host part is the CPU kernel's: start and end in the output type for integers, the step
  // in double.
  LUCID_DISPATCH_NUMERIC(o.dtype(), "linspace", [&] {
    double start = a.f("start"), end = a.f("end");
    if constexpr (std::is_integral_v<scalar_t>) {
      start = static_cast<double>(static_cast<scalar_t>(start));
      end = static_cast<double>(static_cast<scalar_t>(end));
    }
    const double step = n > 1 ? (end - start) / static_cast<double>(n - 1) : 0.0;
    using T = device_t<scalar_t>;
    linspace_kernel<T><<<blocks_for(n), kThreads, 0, current_stream(o.device())>>>(static_cast<T*>(o.data_ptr()), n, start, end, step,
                                                                                  n / 2);
  });
  check_launch("linspace");
}

void eye_kernel(const TensorList&, const TensorList& out, const Attrs&) {
  const Tensor& o = out[0];
  if (o.numel() == 0) return;
  check_dense(o, "eye");
  const int64_t n = o.shape()[0], m = o.shape()[1], k = std::min(n, m);
  DeviceGuard g(o.device());
  cudaStream_t stream = current_stream(o.device());
  check_cuda(cudaMemsetAsync(o.data_ptr(), 0, o.numel() * itemsize(o.dtype()), stream), "cudaMemsetAsync (eye)");
  uint64_t bits = 0;
  LUCID_DISPATCH_ALL(o.dtype(), "eye", [&] {
    const scalar_t one = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(1));
    std::memcpy(&bits, &one, sizeof(one));
  });
  switch (itemsize(o.dtype())) {
    case 1: diagonal_kernel<uint8_t><<<blocks_for(k), kThreads, 0, stream>>>(static_cast<uint8_t*>(o.data_ptr()), m, k, static_cast<uint8_t>(bits)); break;
    case 2: diagonal_kernel<uint16_t><<<blocks_for(k), kThreads, 0, stream>>>(static_cast<uint16_t*>(o.data_ptr()), m, k, static_cast<uint16_t>(bits)); break;
    case 4: diagonal_kernel<uint32_t><<<blocks_for(k), kThreads, 0, stream>>>(static_cast<uint32_t*>(o.data_ptr()), m, k, static_cast<uint32_t>(bits)); break;
    default: diagonal_kernel<uint64_t><<<blocks_for(k), kThreads, 0, stream>>>(static_cast<uint64_t*>(o.data_ptr()), m, k, bits); break;
  }
  check_launch("eye");
}

}  // namespace

LUCID_REGISTER_KERNEL(Fill, CUDA, fill_kernel);
LUCID_REGISTER_KERNEL(Empty, CUDA, empty_kernel);
LUCID_REGISTER_KERNEL(Arange, CUDA, arange_kernel_cuda);
LUCID_REGISTER_KERNEL(Linspace, CUDA, linspace_kernel_cuda);
LUCID_REGISTER_KERNEL(Eye, CUDA, eye_kernel);

}  // namespace lucid::cuda
