// Host dispatch and mixed-dtype operand access of the DNN kernels (pool.cu, batch_norm.cu,
// conv_pointwise.cu): with_float_storage() maps a floating lucid DType to its device storage type
// (cuda_dtype.cuh's device_t) with these kernels' TypeError; load_as_double / store_from_double
// read and write small operands whose dtype is known only at run time (norm weights, running
// statistics). Element conversions are cuda_dtype.cuh's to_compute / from_compute.
#pragma once
#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/core/dtype.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

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
    case DType::Float16: return to_compute(static_cast<const __half*>(p)[i]);
    case DType::BFloat16: return to_compute(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return 0.0;
  }
}

// Stores double v in dtype t, as the CPU's cast from double (16-bit types through float).
__device__ __forceinline__ void store_from_double(void* p, DType t, int64_t i, double v) {
  switch (t) {
    case DType::Float32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case DType::Float64: static_cast<double*>(p)[i] = v; return;
    case DType::Float16: static_cast<__half*>(p)[i] = from_compute<__half>(v); return;
    case DType::BFloat16: static_cast<__nv_bfloat16*>(p)[i] = from_compute<__nv_bfloat16>(v); return;
    default: return;
  }
}

}  // namespace lucid::cuda
