// The few standard-library names ops/scalar_functors.h uses, for NVRTC, which has no C++ standard
// headers: fused kernels are compiled from in-memory sources only (no include path on disk at run
// time), so <cmath>, <cstdint>, <type_traits> and <cuda/std/limits> of scalar_functors.h resolve to
// this one header (nvrtc_program.cpp names it under each of those include names). It is never
// compiled by the host compiler or nvcc: the build embeds it, with scalar_functors.h and
// core/host_device.h, as strings (cmake/cuda_libraries.cmake, lucid_cuda_nvrtc_headers).
//
// What it gives, and nothing more: fixed-width integer types (LP64, as the host: int64_t is long,
// so a functor struct has the host's layout), std::is_same_v / is_floating_point_v / is_signed_v /
// is_unsigned_v for the types a functor is instantiated with, the <cmath> functions the functors
// call as float and double overloads of CUDA's device math library (the same libdevice functions
// nvcc's <cmath> overloads call, so the eager kernels and the generated ones compute alike), and
// cuda::std::numeric_limits' lowest/max/infinity/quiet_NaN (device functions: nothing
// asks for them in a constant expression). std::initializer_list is NVRTC's own
// (a braced list in a range-for needs it; its layout is the front end's: pointer + length).
#pragma once

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;

namespace std {
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;

template <class A, class B> constexpr bool is_same_v = false;
template <class A> constexpr bool is_same_v<A, A> = true;
template <class T> constexpr bool is_floating_point_v = is_same_v<T, float> || is_same_v<T, double>;
template <class T> constexpr bool is_integral_v =
    is_same_v<T, bool> || is_same_v<T, signed char> || is_same_v<T, unsigned char> || is_same_v<T, char> ||
    is_same_v<T, short> || is_same_v<T, unsigned short> || is_same_v<T, int> || is_same_v<T, unsigned> ||
    is_same_v<T, long> || is_same_v<T, unsigned long> || is_same_v<T, long long> || is_same_v<T, unsigned long long>;
template <class T> constexpr bool is_signed_v = is_floating_point_v<T> || (is_integral_v<T> && T(-1) < T(0));
template <class T> constexpr bool is_unsigned_v = is_integral_v<T> && !is_same_v<T, bool> && T(0) < T(-1);

#define LUCID_NVRTC_MATH1(name)                                                   \
  __device__ inline float name(float a) { return ::name##f(a); }                 \
  __device__ inline double name(double a) { return ::name(a); }
#define LUCID_NVRTC_MATH2(name)                                                   \
  __device__ inline float name(float a, float b) { return ::name##f(a, b); }      \
  __device__ inline double name(double a, double b) { return ::name(a, b); }
LUCID_NVRTC_MATH1(exp) LUCID_NVRTC_MATH1(log) LUCID_NVRTC_MATH1(log2) LUCID_NVRTC_MATH1(log10)
LUCID_NVRTC_MATH1(log1p) LUCID_NVRTC_MATH1(expm1) LUCID_NVRTC_MATH1(sqrt) LUCID_NVRTC_MATH1(sin)
LUCID_NVRTC_MATH1(cos) LUCID_NVRTC_MATH1(tan) LUCID_NVRTC_MATH1(tanh) LUCID_NVRTC_MATH1(erf)
LUCID_NVRTC_MATH1(erfc) LUCID_NVRTC_MATH1(floor) LUCID_NVRTC_MATH1(ceil) LUCID_NVRTC_MATH1(trunc)
LUCID_NVRTC_MATH1(nearbyint) LUCID_NVRTC_MATH1(fabs) LUCID_NVRTC_MATH1(asin) LUCID_NVRTC_MATH1(acos)
LUCID_NVRTC_MATH1(atan) LUCID_NVRTC_MATH1(sinh) LUCID_NVRTC_MATH1(cosh) LUCID_NVRTC_MATH1(asinh)
LUCID_NVRTC_MATH1(acosh) LUCID_NVRTC_MATH1(atanh) LUCID_NVRTC_MATH1(lgamma)
LUCID_NVRTC_MATH2(fmod) LUCID_NVRTC_MATH2(copysign) LUCID_NVRTC_MATH2(pow) LUCID_NVRTC_MATH2(atan2)
#undef LUCID_NVRTC_MATH1
#undef LUCID_NVRTC_MATH2
__device__ inline bool isinf(float a) { return ::isinf(a); }
__device__ inline bool isinf(double a) { return ::isinf(a); }
}  // namespace std

namespace cuda::std {
template <class T> struct numeric_limits;
#define LUCID_NVRTC_LIMITS(T, LO, HI)                                             \
  template <> struct numeric_limits<T> {                                          \
    __host__ __device__ static constexpr T lowest() { return LO; }                \
    __host__ __device__ static constexpr T max() { return HI; }                   \
  };
LUCID_NVRTC_LIMITS(bool, false, true)
LUCID_NVRTC_LIMITS(signed char, -128, 127)
LUCID_NVRTC_LIMITS(unsigned char, 0, 255)
LUCID_NVRTC_LIMITS(short, -32768, 32767)
LUCID_NVRTC_LIMITS(unsigned short, 0, 65535)
LUCID_NVRTC_LIMITS(int, -2147483647 - 1, 2147483647)
LUCID_NVRTC_LIMITS(unsigned, 0u, 4294967295u)
LUCID_NVRTC_LIMITS(long, -9223372036854775807L - 1, 9223372036854775807L)
LUCID_NVRTC_LIMITS(unsigned long, 0ul, 18446744073709551615ul)
#undef LUCID_NVRTC_LIMITS
template <> struct numeric_limits<float> {
  __host__ __device__ static constexpr float lowest() { return -3.40282346638528859812e+38f; }
  __host__ __device__ static constexpr float max() { return 3.40282346638528859812e+38f; }
  __device__ static float infinity() { return __int_as_float(0x7f800000); }
  __device__ static float quiet_NaN() { return __int_as_float(0x7fc00000); }
};
template <> struct numeric_limits<double> {
  __host__ __device__ static constexpr double lowest() { return -1.79769313486231570815e+308; }
  __host__ __device__ static constexpr double max() { return 1.79769313486231570815e+308; }
  __device__ static double infinity() { return __longlong_as_double(0x7ff0000000000000LL); }
  __device__ static double quiet_NaN() { return __longlong_as_double(0x7ff8000000000000LL); }
};
}  // namespace cuda::std
