// Infer shared by the plain elementwise ops (see elementwise_util.h).
#include "lucid/ops/elementwise_util.h"

namespace lucid {

DType elementwise_compute_dtype(EwDType rule, const TensorList& in) {
  if (rule == EwDType::BoolInputs) return DType::Bool;
  DType t = result_type(in);
  if (rule == EwDType::Float && !is_floating(t)) t = default_float_dtype();
  return t;
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
