// float16 / bfloat16 elements in device code: lucid stores them as their 16 bits (core/half.h,
// whose conversions use x86 intrinsics, host only); these wrap the same bits and convert with
// cuda_fp16.h / cuda_bf16.h (round to nearest even, as the CPU). Used by the GEMM epilogue and
// the fused optimizer kernels until the backend's shared cuda_dtype.cuh (ELEMENTWISE) replaces it.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace lucid::cuda {

struct F16Bits {
  uint16_t bits;
  __device__ float to_float() const { return __half2float(__ushort_as_half(bits)); }
  __device__ static F16Bits from_float(float v) { return F16Bits{__half_as_ushort(__float2half_rn(v))}; }
};
struct BF16Bits {
  uint16_t bits;
  __device__ float to_float() const { return __bfloat162float(__ushort_as_bfloat16(bits)); }
  __device__ static BF16Bits from_float(float v) { return BF16Bits{__bfloat16_as_ushort(__float2bfloat16_rn(v))}; }
};

// Load/store of a stored element in its compute type (float for the 16-bit floats).
template <class T> struct DeviceElem {
  using C = T;
  __device__ static C load(T v) { return v; }
  __device__ static T store(C v) { return v; }
};
template <> struct DeviceElem<F16Bits> {
  using C = float;
  __device__ static C load(F16Bits v) { return v.to_float(); }
  __device__ static F16Bits store(C v) { return F16Bits::from_float(v); }
};
template <> struct DeviceElem<BF16Bits> {
  using C = float;
  __device__ static C load(BF16Bits v) { return v.to_float(); }
  __device__ static BF16Bits store(C v) { return BF16Bits::from_float(v); }
};

}  // namespace lucid::cuda
