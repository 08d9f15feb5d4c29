// oneDNN engine/stream singletons and descriptor helpers (see dnnl_common.h).
#include "lucid/backends/cpu/dnnl_common.h"

namespace lucid::dnnl_util {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

bool has_isa(dnnl::cpu_isa isa) {
  // A mask test, not a comparison: avx2_vnni is numerically above avx512_core.
  return (static_cast<int>(dnnl::get_effective_cpu_isa()) & static_cast<int>(isa)) == static_cast<int>(isa);
}

bool has_amx() {
  static const bool amx = has_isa(dnnl::cpu_isa::avx512_core_amx);
  return amx;
}

dnnl::memory::data_type to_dnnl(DType t, bool* ok) {
  using dt = dnnl::memory::data_type;
  if (ok) *ok = true;
  switch (t) {
    case DType::Float32: return dt::f32;
    case DType::BFloat16: return dt::bf16;
    case DType::Float16: return dt::f16;
    case DType::Int32: return dt::s32;
    case DType::Int8: return dt::s8;
    case DType::UInt8: return dt::u8;
    default: break;
  }
  if (ok) *ok = false;
  return dt::undef;
}

dnnl::memory::desc strided_desc(const Shape& dims, const Strides& strides, DType t) {
  dnnl::memory::dims d(dims.begin(), dims.end()), s(strides.begin(), strides.end());
  return dnnl::memory::desc(d, to_dnnl(t), s);
}

dnnl::memory::desc plain_desc(const Shape& dims, DType t) {
  return strided_desc(dims, contiguous_strides(dims), t);
}

}  // namespace lucid::dnnl_util
