// Device-side loads and stores of the floating dtypes for the DNN kernels (pool.cu,
// batch_norm.cu, conv_pointwise.cu): lucid keeps float16/bfloat16 as their IEEE bits
// (core/half.h, whose conversions are x86 intrinsics), which here are read as __half /
// __nv_bfloat16 and converted with CUDA's round-to-nearest-even intrinsics, so a value
// round-trips exactly as on the CPU. Arithmetic is in acc_t: float for the 16-bit types and
// float32, double for float64 (the CPU kernels' compute_t). with_float_storage() maps a lucid
// DType to its device storage type for a host-side dispatch.
// (The ELEMENTWISE lane's cuda_dtype.cuh will be the backend-wide home of this; these kernels can
// move to it once it lands.)
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "lucid/core/dtype.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

template <class S> struct AccOf { using type = float; };
template <> struct AccOf<double> { using type = double; };
template <class S> using acc_t = typename AccOf<S>::type;

__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }
__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class S> __device__ __forceinline__ S from_acc(acc_t<S> v) {
  if constexpr (std::is_same_v<S, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return v;
}

// Calls f(S{}) with S the device storage type of floating dtype t; TypeError naming `op` otherwise.
template <class F>
void with_float_storage(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: f(float{}); return;
    case DType::Float64: f(double{}); return;
    case DType::Float16: f(__half{}); return;
    case DType::BFloat16: f(__nv_bfloat16{}); return;
    default: break;
  }
  throw TypeError(str(op, ": expected a floating dtype, got ", dtype_name(t)));
}

// A value of any floating dtype, read as double (small operands of mixed dtypes: norm weights,
// running statistics).
__device__ __forceinline__ double load_as_double(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::Float32: return static_cast<const float*>(p)[i];
    case DType::Float64: return static_cast<const double*>(p)[i];
    case DType::Float16: return __half2float(static_cast<const __half*>(p)[i]);
    case DType::BFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return 0.0;
  }
}

// Stores double v in dtype t, as the CPU's cast from double (16-bit types through float).
__device__ __forceinline__ void store_from_double(void* p, DType t, int64_t i, double v) {
  switch (t) {
    case DType::Float32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case DType::Float64: static_cast<double*>(p)[i] = v; return;
    case DType::Float16: static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v)); return;
    case DType::BFloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v)); return;
    default: return;
  }
}

// Blocks for n elements at `threads` per block, capped (the kernels loop over the rest).
inline unsigned grid_for(int64_t n, int threads, int64_t cap = 65535LL * 8) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  return static_cast<unsigned>(b < cap ? b : cap);
}

}  // namespace lucid::cuda
