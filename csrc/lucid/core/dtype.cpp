// DType names and PyTorch's type-promotion table.
#include "lucid/core/dtype.h"

namespace lucid {

DType dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    if (name == dtype_name(t)) return t;
  }
  if (name == "float" ) return DType::Float32;
  if (name == "double") return DType::Float64;
  if (name == "half") return DType::Float16;
  if (name == "long") return DType::Int64;
  if (name == "int") return DType::Int32;
  throw ValueError(str("dtype: expected one of bool, uint8, int8, int32, int64, float16, bfloat16, "
                       "float32, float64; got '", name, "'"));
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  using D = DType;
  // Floats win over ints; within floats the wider wins; float16 with bfloat16 gives float32.
  if (is_floating(a) || is_floating(b)) {
    if (!is_floating(a)) return b;
    if (!is_floating(b)) return a;
    if ((a == D::Float16 && b == D::BFloat16) || (a == D::BFloat16 && b == D::Float16)) return D::Float32;
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  if (a == D::Bool) return b;
  if (b == D::Bool) return a;
  // Both integral.
  if ((a == D::UInt8 && b == D::Int8) || (a == D::Int8 && b == D::UInt8)) return D::Int32;  // no int16
  if (a == D::UInt8) return b;  // b is wider signed
  if (b == D::UInt8) return a;
  return itemsize(a) >= itemsize(b) ? a : b;
}

}  // namespace lucid
