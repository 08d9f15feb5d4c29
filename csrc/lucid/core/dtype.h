// DType: the element types lucid supports, their sizes, names and PyTorch's promotion rules,
// plus LUCID_DISPATCH_* macros that turn a runtime dtype into a C++ type for kernels.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "lucid/core/error.h"
#include "lucid/core/half.h"

namespace lucid {

enum class DType : uint8_t { Bool, UInt8, Int8, Int32, Int64, Float16, BFloat16, Float32, Float64 };
constexpr int kNumDTypes = 9;

inline size_t itemsize(DType t) {
  switch (t) {
    case DType::Bool: case DType::UInt8: case DType::Int8: return 1;
    case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::Float32: return 4;
    case DType::Int64: case DType::Float64: return 8;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  return "?";
}

DType dtype_from_name(const std::string& name);  // raises ValueError on unknown names

inline bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
inline bool is_integral(DType t, bool include_bool = false) {
  return t == DType::UInt8 || t == DType::Int8 || t == DType::Int32 || t == DType::Int64 ||
         (include_bool && t == DType::Bool);
}

// PyTorch's promote_types table (category first, then width; uint8 with int8 gives int16,
// which we do not have, so it gives int32).
DType promote_types(DType a, DType b);

// Scalar categories for "wrapped number" promotion: a Python scalar only raises the category.
enum class ScalarKind : uint8_t { Bool, Integral, Floating };
inline ScalarKind scalar_kind(DType t) {
  if (t == DType::Bool) return ScalarKind::Bool;
  return is_floating(t) ? ScalarKind::Floating : ScalarKind::Integral;
}

// PyTorch's checked scalar conversion (c10::overflows). Into an integer type, an integral value
// must lie in the type's range, unsigned types also taking negatives down to -max (they wrap);
// a fractional value must lie in [lowest, max], and inf and NaN fail. Into a float type, finite
// values must not exceed its largest finite value (inf and NaN pass). Anything converts to bool.
inline bool scalar_overflows(double v, DType t) {
  double lo = 0, hi = 0;
  switch (t) {
    case DType::Bool: case DType::Float64: return false;
    case DType::Float16: return std::isfinite(v) && std::abs(v) > 65504.0;
    case DType::BFloat16: return std::isfinite(v) && std::abs(v) > 3.3895313892515355e38;
    case DType::Float32: return std::isfinite(v) && std::abs(v) > 3.4028234663852886e38;
    case DType::UInt8: lo = 0, hi = 255; break;
    case DType::Int8: lo = -128, hi = 127; break;
    case DType::Int32: lo = -2147483648.0, hi = 2147483647.0; break;
    case DType::Int64: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
  }
  if (!std::isfinite(v)) return true;
  if (t == DType::UInt8 && v == std::floor(v) && v < 0) return v < -hi;
  return v < lo || v > hi;
}

// Raises Error (RuntimeError) naming op, as ATen's "value cannot be converted to type ... without overflow".
inline void check_scalar_fits(double v, DType t, const char* op) {
  LUCID_CHECK(!scalar_overflows(v, t), Error, op, ": value ", v, " cannot be converted to type ", dtype_name(t),
              " without overflow");
}


template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<Half> { static constexpr DType value = DType::Float16; };
template <> struct dtype_of<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };

// Type used for arithmetic on a stored type: 16-bit floats compute in float.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<Half> { using type = float; };
template <> struct compute_type<BFloat16> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

}  // namespace lucid

#define LUCID_DTYPE_CASE(enum_v, ctype, ...) \
  case ::lucid::DType::enum_v: {             \
    using scalar_t = ctype;                  \
    __VA_ARGS__();                           \
    break;                                   \
  }

#define LUCID_DTYPE_FAIL(op, dt) \
  default: throw ::lucid::TypeError(::lucid::str(op, ": dtype ", ::lucid::dtype_name(dt), " is not supported"));

// Every dtype.
#define LUCID_DISPATCH_ALL(dt, op, ...)                        \
  switch (dt) {                                                \
    LUCID_DTYPE_CASE(Bool, bool, __VA_ARGS__)                  \
    LUCID_DTYPE_CASE(UInt8, uint8_t, __VA_ARGS__)              \
    LUCID_DTYPE_CASE(Int8, int8_t, __VA_ARGS__)                \
    LUCID_DTYPE_CASE(Int32, int32_t, __VA_ARGS__)              \
    LUCID_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)              \
    LUCID_DTYPE_CASE(Float16, ::lucid::Half, __VA_ARGS__)      \
    LUCID_DTYPE_CASE(BFloat16, ::lucid::BFloat16, __VA_ARGS__) \
    LUCID_DTYPE_CASE(Float32, float, __VA_ARGS__)              \
    LUCID_DTYPE_CASE(Float64, double, __VA_ARGS__)             \
    LUCID_DTYPE_FAIL(op, dt)                                   \
  }

// Numeric dtypes (no bool).
#define LUCID_DISPATCH_NUMERIC(dt, op, ...)                    \
  switch (dt) {                                                \
    LUCID_DTYPE_CASE(UInt8, uint8_t, __VA_ARGS__)              \
    LUCID_DTYPE_CASE(Int8, int8_t, __VA_ARGS__)                \
    LUCID_DTYPE_CASE(Int32, int32_t, __VA_ARGS__)              \
    LUCID_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)              \
    LUCID_DTYPE_CASE(Float16, ::lucid::Half, __VA_ARGS__)      \
    LUCID_DTYPE_CASE(BFloat16, ::lucid::BFloat16, __VA_ARGS__) \
    LUCID_DTYPE_CASE(Float32, float, __VA_ARGS__)              \
    LUCID_DTYPE_CASE(Float64, double, __VA_ARGS__)             \
    LUCID_DTYPE_FAIL(op, dt)                                   \
  }

// Floating dtypes only.
#define LUCID_DISPATCH_FLOATING(dt, op, ...)                   \
  switch (dt) {                                                \
    LUCID_DTYPE_CASE(Float16, ::lucid::Half, __VA_ARGS__)      \
    LUCID_DTYPE_CASE(BFloat16, ::lucid::BFloat16, __VA_ARGS__) \
    LUCID_DTYPE_CASE(Float32, float, __VA_ARGS__)              \
    LUCID_DTYPE_CASE(Float64, double, __VA_ARGS__)             \
    LUCID_DTYPE_FAIL(op, dt)                                   \
  }
