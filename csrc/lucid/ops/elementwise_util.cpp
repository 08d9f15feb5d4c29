// Infer shared by the plain elementwise ops (see elementwise_util.h).
#include "lucid/ops/elementwise_util.h"

namespace lucid {

DType elementwise_compute_dtype(EwDType rule, const TensorList& in) {
  if (rule == EwDType::BoolInputs) return DType::Bool;
  DType t = result_type(in);
  if (rule == EwDType::Float && !is_floating(t)) t = default_float_dtype();
  return t;
}

// A wrapped Python number whose float32 value the 16-bit dtype c holds exactly: reading it at
// either precision gives the same bits, so the op can stay in c.
static bool wrapped_exact_in(const Tensor& s, DType c) {
  if (!s.impl()->is_wrapped_number) return false;
  float f = 0.f;
  LUCID_DISPATCH_ALL(s.dtype(), "elementwise", [&] { f = static_cast<float>(*s.data<scalar_t>()); });
  if (f != f) return true;  // NaN either way
  float n = c == DType::Float16 ? static_cast<float>(Half(f)) : static_cast<float>(BFloat16(f));
  return n == f;
}

DType elementwise_compute_dtype(OpId id, EwDType rule, const TensorList& in) {
  DType c = elementwise_compute_dtype(rule, in);
  if (c != DType::Float16 && c != DType::BFloat16) return c;
  int k = op_def(id).float_scalar_input;
  if (k < 0 || k >= static_cast<int>(in.size()) || !in[k].defined()) return c;
  const Tensor& s = in[k];
  if (s.ndim() != 0 || s.dtype() == c || wrapped_exact_in(s, c)) return c;
  return DType::Float32;
}

std::vector<TensorMeta> infer_elementwise(OpId id, EwDType rule, const TensorList& in) {
  const OpDef& def = op_def(id);
  Shape shape = in[0].shape();
  for (size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].shape(), def.api_name);
  DType c = elementwise_compute_dtype(rule, in);
  LUCID_CHECK(def.ew_dtypes & dtype_bit(c), TypeError, def.api_name, ": not implemented for dtype ", dtype_name(c));
  DType out = (rule == EwDType::Bool || rule == EwDType::BoolInputs) ? DType::Bool : c;
  return {{shape, out}};
}

}  // namespace lucid
