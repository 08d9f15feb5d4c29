// Element types of lucid's dtypes on the device, for the CUDA data-movement and indexing kernels:
// DeviceT<T> maps lucid::Half / lucid::BFloat16 (host types whose conversions use x86 intrinsics)
// to raw 16-bit storage, to_compute / from_compute convert to and from the compute type (float
// for 16-bit floats, as compute_t on the host; bfloat16 rounds exactly as core/half.h, NaN kept
// quiet), and atomic_accumulate adds (bool: ors) a value into memory for every dtype (native
// atomics for 16/32/64-bit types, a CAS loop on the enclosing 32-bit word for 8-bit ones).
//
// This is the INDEX lane's own minimal helper; ELEMENTWISE's cuda_dtype.cuh is the shared one once
// it is on main, and these should then move there.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "lucid/core/dtype.h"

namespace lucid::cuda {

// Storage tags of the 16-bit floats on the device (same bits as lucid::Half / BFloat16).
struct HalfBits {
  uint16_t bits;
};
struct BF16Bits {
  uint16_t bits;
};

template <class T> struct DeviceTypeOf { using type = T; };
template <> struct DeviceTypeOf<Half> { using type = HalfBits; };
template <> struct DeviceTypeOf<BFloat16> { using type = BF16Bits; };
template <class T> using DeviceT = typename DeviceTypeOf<T>::type;

template <class T> struct DeviceCompute { using type = T; };
template <> struct DeviceCompute<HalfBits> { using type = float; };
template <> struct DeviceCompute<BF16Bits> { using type = float; };
template <class T> using dcompute_t = typename DeviceCompute<T>::type;

template <class T>
__device__ __forceinline__ dcompute_t<T> to_compute(T v) { return v; }
template <>
__device__ __forceinline__ float to_compute<HalfBits>(HalfBits v) { return __half2float(__ushort_as_half(v.bits)); }
template <>
__device__ __forceinline__ float to_compute<BF16Bits>(BF16Bits v) { return __uint_as_float(static_cast<uint32_t>(v.bits) << 16); }

template <class T>
__device__ __forceinline__ T from_compute(dcompute_t<T> v) { return static_cast<T>(v); }
template <>
__device__ __forceinline__ HalfBits from_compute<HalfBits>(float v) { return HalfBits{__half_as_ushort(__float2half_rn(v))}; }
template <>
__device__ __forceinline__ BF16Bits from_compute<BF16Bits>(float v) {
  uint32_t u = __float_as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return BF16Bits{static_cast<uint16_t>((u >> 16) | 0x40)};
  return BF16Bits{static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}

// a + b in the compute type, stored back (bool: a || b), as the CPU's add_into.
template <class T>
__device__ __forceinline__ T add_values(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else return from_compute<T>(to_compute(a) + to_compute(b));
}

// *p += v (bool: *p = *p || v) atomically. The order of concurrent additions is unspecified, so
// floating results can differ in the last bits from run to run (as torch's CUDA index_add/scatter_add).
template <class T>
__device__ __forceinline__ void atomic_accumulate(T* p, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));  // two's complement wraps as the CPU
  } else if constexpr (std::is_same_v<T, HalfBits>) {
    atomicAdd(reinterpret_cast<__half*>(p), __ushort_as_half(v.bits));
  } else if constexpr (std::is_same_v<T, BF16Bits>) {
    // Not the native bf16 atomicAdd: its rounding of the sum is not guaranteed to be the CPU's
    // (float add, then round to nearest even as core/half.h); a CAS loop on the 16-bit half-word.
    uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t{3});
    const unsigned shift = (addr & 2) ? 16 : 0;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      BF16Bits cur{static_cast<uint16_t>((assumed >> shift) & 0xffffu)};
      BF16Bits sum = from_compute<BF16Bits>(to_compute(cur) + to_compute(v));
      unsigned int next = (assumed & ~(0xffffu << shift)) | (static_cast<unsigned int>(sum.bits) << shift);
      old = atomicCAS(word, assumed, next);
    } while (old != assumed);
  } else {
    static_assert(sizeof(T) == 1, "atomic_accumulate: unsupported type");
    uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(addr & 3) * 8;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      T cur;
      uint8_t byte = static_cast<uint8_t>((assumed >> shift) & 0xffu);
      memcpy(&cur, &byte, 1);
      T sum = add_values(cur, v);
      uint8_t nb;
      memcpy(&nb, &sum, 1);
      unsigned int next = (assumed & ~(0xffu << shift)) | (static_cast<unsigned int>(nb) << shift);
      old = atomicCAS(word, assumed, next);
    } while (old != assumed);
  }
}

}  // namespace lucid::cuda
