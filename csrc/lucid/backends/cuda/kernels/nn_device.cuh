// Shared pieces of the CUDA kernels of the nn family (random ops, dropout, losses, attention in
// backends/cuda/kernels/{random,dropout,loss_pointwise,loss_nll,attention}.cu):
//   - row kernels' block size (the grid-stride geometry is launch_geometry.cuh's);
//   - a deterministic block sum of doubles (fixed shape, so sums do not change run to run);
//   - host helpers: a contiguous copy of an operand in a given dtype, a contiguous stand-in for a
//     strided in-place destination, and the device-side "first bad element" check that lets a
//     kernel raise the CPU kernel's error (one small device-to-host read, which synchronises).
// Element types and conversions are cuda_dtype.cuh's (device_t, to_compute, from_compute).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "lucid/backends/cuda/deferred_check.h"
#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/core/dtype.h"
#include "lucid/core/tensor.h"
#include "lucid/dispatch/dispatch.h"

namespace lucid::cuda {

// ---- launch geometry ----------------------------------------------------------------------------
// Threads of a one-block-per-row kernel over rows of `width` elements: a multiple of 32 (the
// block reductions' warps), at most kThreads, so short rows do not idle most of a block.
inline int row_threads(int64_t width) {
  int64_t t = (width + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : (t > kThreads ? kThreads : t));
}

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024), in a fixed order; the
// result is valid in thread 0. `scratch` holds 32 doubles of shared memory.
__device__ __forceinline__ double block_sum(double v, double* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  int nw = blockDim.x >> 5;
  v = (threadIdx.x < nw) ? scratch[threadIdx.x] : 0.0;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  __syncthreads();
  return v;
}

// Max of v over the block (blockDim.x a multiple of 32), the result in every thread; `scratch`
// holds 32 values of shared memory.
template <class C>
__device__ __forceinline__ C block_max(C v, C* scratch) {
  for (int o = 16; o > 0; o >>= 1) {
    C u = __shfl_down_sync(0xffffffffu, v, o);
    v = u > v ? u : v;
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 1; i < (blockDim.x >> 5); ++i) v = scratch[i] > v ? scratch[i] : v;
    scratch[0] = v;
  }
  __syncthreads();
  v = scratch[0];
  __syncthreads();
  return v;
}

// Sum over the block, the result in every thread.
__device__ __forceinline__ double block_sum_all(double v, double* scratch) {
  v = block_sum(v, scratch);
  if (threadIdx.x == 0) scratch[0] = v;
  __syncthreads();
  v = scratch[0];
  __syncthreads();
  return v;
}

// ---- deterministic sums of per-element doubles ---------------------------------------------------
// sum over i < n of f(i) (f a functor with `__device__ double operator()(int64_t) const`), in two
// passes of fixed shape: kSumBlocks partial sums, then one block adds them. The grid depends only
// on n, so the result is the same on every run.
constexpr int kSumBlocks = 512;

inline int sum_blocks(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kSumBlocks ? kSumBlocks : b));
}

template <class F>
__global__ void partial_sum_kernel(F f, int64_t n, double* part) {
  __shared__ double scratch[32];
  double v = 0;
  for (int64_t i = global_index(); i < n; i += global_stride()) v += f(i);
  v = block_sum(v, scratch);
  if (threadIdx.x == 0) part[blockIdx.x] = v;
}

// res[0] = sum of part[0..nparts) (one block of kThreads threads).
static __global__ void finish_sum_kernel(const double* part, int nparts, double* res) {
  __shared__ double scratch[32];
  double v = 0;
  for (int i = threadIdx.x; i < nparts; i += blockDim.x) v += part[i];
  v = block_sum(v, scratch);
  if (threadIdx.x == 0) res[0] = v;
}

// ---- host helpers -------------------------------------------------------------------------------
// The sum of f(i) over i < n into a one-element float64 tensor on `dev` (see partial_sum_kernel).
template <class F>
Tensor device_sum(const Device& dev, const F& f, int64_t n) {
  cudaStream_t s = current_stream(dev);
  int nb = sum_blocks(n);
  Tensor part = Tensor::empty({nb}, DType::Float64, dev), res = Tensor::empty({1}, DType::Float64, dev);
  partial_sum_kernel<F><<<nb, kThreads, 0, s>>>(f, n, part.data<double>());
  check_launch("partial sum");
  finish_sum_kernel<<<1, kThreads, 0, s>>>(part.data<double>(), nb, res.data<double>());
  check_launch("sum");
  return res;
}

// Contiguous tensor with t's values in dtype dt, on t's device (t itself when it already is one).
inline Tensor contig_as(const Tensor& t, DType dt) {
  if (t.dtype() == dt) return t.contiguous_data();
  Tensor c = Tensor::empty(t.shape(), dt, t.device());
  copy_values(c, t);
  return c;
}

// Runs fill(contiguous destination); a strided in-place destination gets a contiguous temporary
// copied back with the device's Copy kernel.
template <class F>
void with_contiguous_out(const Tensor& o, const F& fill) {
  if (o.is_contiguous()) {
    fill(o);
    return;
  }
  Tensor t = Tensor::empty(o.shape(), o.dtype(), o.device());
  fill(t);
  copy_values(o, t);
}

template <class V>
__global__ void set_scalar_kernel(V* p, V v) {
  p[0] = v;
}

// A one-element tensor of dtype dt (V its C++ type) holding v, written by a kernel on the
// device's stream (no host buffer, nothing waits).
template <class V>
Tensor device_scalar(const Device& dev, DType dt, V v) {
  Tensor t = Tensor::empty({1}, dt, dev);
  set_scalar_kernel<V><<<1, 1, 0, current_stream(dev)>>>(t.data<V>(), v);
  check_launch("device scalar");
  return t;
}

// A device int64 slot holding "no index yet" (INT64_MAX), for kernels that record the first
// offending element with atomicMin (first_bad_index reads it back).
inline Tensor bad_index_slot(const Device& dev) { return device_scalar<int64_t>(dev, DType::Int64, INT64_MAX); }

__device__ __forceinline__ void record_bad_index(int64_t* slot, int64_t i) {
  atomicMin(reinterpret_cast<unsigned long long*>(slot), static_cast<unsigned long long>(i));
}

// Reads a few values of a device tensor back to the host (synchronises the stream: only to raise
// the CPU kernel's error for bad input, which needs the value on the host).
template <class T>
T read_back(const Tensor& t, int64_t index) {
  T v{};
  cudaStream_t s = current_stream(t.device());
  check_cuda(cudaMemcpyAsync(&v, t.data<T>() + index, sizeof(T), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (read back)");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize (read back)");
  raise_deferred_errors(false);
  return v;
}

// The first offending index recorded in a slot of bad_index_slot, or -1.
inline int64_t first_bad_index(const Tensor& slot) {
  int64_t v = read_back<int64_t>(slot, 0);
  return v == INT64_MAX ? -1 : v;
}

}  // namespace lucid::cuda
