// Device-side dtypes of the CUDA backend. On the host a float16/bfloat16 element is lucid::Half /
// lucid::BFloat16 (core/half.h), whose conversions use x86 intrinsics that device code cannot
// call; on the device the same 16 bits are CUDA's __half / __nv_bfloat16 (cuda_fp16.h,
// cuda_bf16.h). This header gives device code its own storage type per dtype (device_t), the
// float compute type of the 16-bit ones (core/dtype.h's compute_t, specialised here), loads and
// stores between the two, the converting cast of the Copy kernel (with the CPU kernel's results),
// the atomic accumulation of every dtype (index_add, scatter_add, backward scatters), and
// LUCID_CUDA_DISPATCH_* switches with the dtype sets of core/dtype.h's LUCID_DISPATCH_*, whose
// `scalar_t` is the device storage type. Kernels of every family include it; keep it small.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lucid/core/dtype.h"
#include "lucid/core/host_device.h"

namespace lucid {

// 16-bit floats compute in float on the device too, as on the host.
template <> struct compute_type<__half> { using type = float; };
template <> struct compute_type<__nv_bfloat16> { using type = float; };
template <> struct dtype_of<__half> { static constexpr DType value = DType::Float16; };
template <> struct dtype_of<__nv_bfloat16> { static constexpr DType value = DType::BFloat16; };

}  // namespace lucid

namespace lucid::cuda {

static_assert(sizeof(__half) == sizeof(Half) && sizeof(__nv_bfloat16) == sizeof(BFloat16),
              "a 16-bit float has the same bits on host and device");

// The device storage type of a host storage type (the type a kernel's pointers have).
template <class T> struct device_type { using type = T; };
template <> struct device_type<Half> { using type = __half; };
template <> struct device_type<BFloat16> { using type = __nv_bfloat16; };
template <class T> using device_t = typename device_type<T>::type;

template <class T> constexpr bool is_half_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// A stored element as its compute type (16-bit floats widen exactly to float).
template <class T> LUCID_HOST_DEVICE inline compute_t<T> to_compute(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else return v;
}

// A float as bfloat16, bit for bit core/half.h's BFloat16(float): round to nearest even, and a
// NaN kept quiet with the top bits of its payload and its sign (the hardware conversion of
// __float2bfloat16_rn is not documented to keep them).
LUCID_HOST_DEVICE inline __nv_bfloat16 float_to_bfloat16(float v) {
  uint32_t u;
#ifdef __CUDA_ARCH__
  u = __float_as_uint(v);
#else
  std::memcpy(&u, &v, sizeof u);
#endif
  __nv_bfloat16_raw r;
  if ((u & 0x7fffffffu) > 0x7f800000u) r.x = static_cast<unsigned short>((u >> 16) | 0x40);
  else r.x = static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return __nv_bfloat16(r);
}

// A compute-type value stored as T: 16-bit floats round to nearest even from float (a double
// is first rounded to float, as the host's Half(float) constructor is reached); other types are
// a plain static_cast, as the CPU kernels' static_cast<O>(value).
template <class T, class C> LUCID_HOST_DEVICE inline T from_compute(C v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return float_to_bfloat16(static_cast<float>(v));
  else return static_cast<T>(v);
}

// The Copy kernel's cast of one element, with the CPU kernel's results (backends/cpu/loops.cpp,
// copy_into): to bool is `value != 0` (NaN gives true); from a 16-bit float through float; to a
// 16-bit float through float (a double or an int64 rounds to float first, as on the host); other
// pairs are static_cast (integers wrap, as on the host). A float out of the range of an integer
// type is undefined behaviour in C++ and differs between the devices: the host's cvttss2si gives
// the "integer indefinite" value (INT_MIN), the GPU's cvt saturates and maps NaN to 0. Narrow
// integer types (int8, uint8) are reached through int64, as PyTorch's c10::convert, so that
// in-range negative floats give the host's wrapped result (-1.0 -> uint8 255) and values within
// the int32 range agree with the host too.
template <class To, class From> LUCID_HOST_DEVICE inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return to_compute(v) != static_cast<compute_t<From>>(0);
  } else if constexpr (is_half_v<From>) {
    return convert<To>(to_compute(v));
  } else if constexpr (is_half_v<To>) {
    return from_compute<To>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && sizeof(To) == 1 && std::is_floating_point_v<From>) {
    return static_cast<To>(static_cast<int64_t>(v));
  } else {
    return static_cast<To>(v);
  }
}

// a + b in the compute type, stored back (bool: a || b), as the CPU's add_into.
template <class T> __device__ __forceinline__ T add_values(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else return from_compute<T>(to_compute(a) + to_compute(b));
}

// *p += v (bool: *p = *p || v) atomically, for every storage type: native atomics for the 16-, 32-
// and 64-bit types but bfloat16, a CAS loop on the enclosing 32-bit word for bfloat16 and the 8-bit
// types. The order of concurrent additions is unspecified, so floating results can differ in the
// last bits from run to run (as torch's CUDA index_add/scatter_add).
template <class T> __device__ __forceinline__ void atomic_accumulate(T* p, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));  // two's complement wraps as the CPU
  } else if constexpr (std::is_same_v<T, __half>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    // Not the native bf16 atomicAdd: its rounding of the sum is not guaranteed to be the CPU's
    // (float add, then round to nearest even as core/half.h); a CAS loop on the 16-bit half-word.
    uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t{3});
    const unsigned shift = (addr & 2) ? 16 : 0;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      __nv_bfloat16 cur = __ushort_as_bfloat16(static_cast<unsigned short>((assumed >> shift) & 0xffffu));
      __nv_bfloat16 sum = from_compute<__nv_bfloat16>(to_compute(cur) + to_compute(v));
      unsigned int next = (assumed & ~(0xffffu << shift)) | (static_cast<unsigned int>(__bfloat16_as_ushort(sum)) << shift);
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

// LUCID_CUDA_DISPATCH_*(dtype, op_name, [&] { ... scalar_t ... }): the dtype sets of core/dtype.h's
// LUCID_DISPATCH_* (same TypeError for another dtype), with scalar_t the device storage type
// (__half, __nv_bfloat16 for the 16-bit floats). Host code: it picks which kernel to launch.
#define LUCID_CUDA_DISPATCH_ALL(dt, op, ...)                  \
  switch (dt) {                                               \
    LUCID_DTYPE_CASE(Bool, bool, __VA_ARGS__)                 \
    LUCID_DTYPE_CASE(UInt8, uint8_t, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Int8, int8_t, __VA_ARGS__)               \
    LUCID_DTYPE_CASE(Int32, int32_t, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Float16, __half, __VA_ARGS__)            \
    LUCID_DTYPE_CASE(BFloat16, __nv_bfloat16, __VA_ARGS__)    \
    LUCID_DTYPE_CASE(Float32, float, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Float64, double, __VA_ARGS__)            \
    LUCID_DTYPE_FAIL(op, dt)                                  \
  }

#define LUCID_CUDA_DISPATCH_NUMERIC(dt, op, ...)              \
  switch (dt) {                                               \
    LUCID_DTYPE_CASE(UInt8, uint8_t, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Int8, int8_t, __VA_ARGS__)               \
    LUCID_DTYPE_CASE(Int32, int32_t, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Float16, __half, __VA_ARGS__)            \
    LUCID_DTYPE_CASE(BFloat16, __nv_bfloat16, __VA_ARGS__)    \
    LUCID_DTYPE_CASE(Float32, float, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Float64, double, __VA_ARGS__)            \
    LUCID_DTYPE_FAIL(op, dt)                                  \
  }

#define LUCID_CUDA_DISPATCH_FLOATING(dt, op, ...)             \
  switch (dt) {                                               \
    LUCID_DTYPE_CASE(Float16, __half, __VA_ARGS__)            \
    LUCID_DTYPE_CASE(BFloat16, __nv_bfloat16, __VA_ARGS__)    \
    LUCID_DTYPE_CASE(Float32, float, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Float64, double, __VA_ARGS__)            \
    LUCID_DTYPE_FAIL(op, dt)                                  \
  }

// The integer dtypes and bool (the functor table's Integral domain: bitwise ops).
#define LUCID_CUDA_DISPATCH_INTEGRAL(dt, op, ...)             \
  switch (dt) {                                               \
    LUCID_DTYPE_CASE(Bool, bool, __VA_ARGS__)                 \
    LUCID_DTYPE_CASE(UInt8, uint8_t, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Int8, int8_t, __VA_ARGS__)               \
    LUCID_DTYPE_CASE(Int32, int32_t, __VA_ARGS__)             \
    LUCID_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)             \
    LUCID_DTYPE_FAIL(op, dt)                                  \
  }
