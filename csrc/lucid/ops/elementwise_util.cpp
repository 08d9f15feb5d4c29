#include "lucid/ops/elementwise_util.h"

namespace lucid {

static DType compute_dtype(EwDType rule, const TensorList& in) {
  if (rule == EwDType::BoolInputs) return DType::Bool;
  DType t = result_type(in);
  if (rule == EwDType::Float && !is_floating(t)) t = default_float_dtype();
  return t;
}

std::vector<TensorMeta> infer_elementwise(OpId id, EwDType rule, const TensorList& in) {
  const OpDef& def = op_def(id);
  Shape shape = in[0].shape();
  for (size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].shape(), def.api_name);
  DType c = compute_dtype(rule, in);
  LUCID_CHECK(def.ew_block[static_cast<int>(c)], TypeError, def.api_name, ": not implemented for dtype ",
              dtype_name(c));
  DType out = (rule == EwDType::Bool || rule == EwDType::BoolInputs) ? DType::Bool : c;
  return {{shape, out}};
}

void run_elementwise(OpId id, EwDType rule, const TensorList& in, const TensorList& out) {
  const OpDef& def = op_def(id);
  DType c = compute_dtype(rule, in);
  // Inputs of another dtype are cast first (a wrapped scalar costs one element).
  TensorList cast;
  cast.reserve(in.size());
  for (const Tensor& t : in) {
    if (t.dtype() == c) { cast.push_back(t); continue; }
    Tensor u = Tensor::empty(t.shape(), c);
    cpu::copy_into(u, t);
    cast.push_back(u);
  }
  BlockFn fn = def.ew_block[static_cast<int>(c)];
  const Tensor& o = out[0];
  DType odt = (rule == EwDType::Bool || rule == EwDType::BoolInputs) ? DType::Bool : c;
  Tensor dst = o;
  if (o.dtype() != odt) dst = Tensor::empty(o.shape(), odt);  // in-place into a wider dtype
  const Tensor* ops[cpu::kMaxOperands];
  ops[0] = &dst;
  for (size_t i = 0; i < cast.size(); ++i) ops[i + 1] = &cast[i];
  cpu::StridedIter it(ops, static_cast<int>(cast.size()) + 1);
  it.for_each([fn](char** p, const int64_t* s, int64_t n) { fn(p, s, n); });
  if (!(dst == o)) cpu::copy_into(o, dst);
}

}  // namespace lucid
