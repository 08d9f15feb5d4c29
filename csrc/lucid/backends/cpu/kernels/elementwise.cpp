// The generic CPU kernel of the plain elementwise ops (see elementwise.h).
#include "lucid/backends/cpu/kernels/elementwise.h"

namespace lucid::cpu {

void run_elementwise(OpId id, EwDType rule, const TensorList& in, const TensorList& out) {
  DType c = elementwise_compute_dtype(id, rule, in);
  // Inputs of another dtype are cast first (a wrapped scalar costs one element).
  TensorList cast;
  cast.reserve(in.size());
  for (const Tensor& t : in) {
    if (t.dtype() == c) { cast.push_back(t); continue; }
    Tensor u = Tensor::empty(t.shape(), c);
    copy_into(u, t);
    cast.push_back(u);
  }
  BlockFn fn = ew_block(id, c);
  const Tensor& o = out[0];
  DType odt = (rule == EwDType::Bool || rule == EwDType::BoolInputs) ? DType::Bool : c;
  Tensor dst = o;
  if (o.dtype() != odt) dst = Tensor::empty(o.shape(), odt);  // in-place into a wider dtype
  const Tensor* ops[kMaxOperands];
  ops[0] = &dst;
  for (size_t i = 0; i < cast.size(); ++i) ops[i + 1] = &cast[i];
  StridedIter it(ops, static_cast<int>(cast.size()) + 1);
  it.for_each([fn](char** p, const int64_t* s, int64_t n) { fn(p, s, n); });
  if (!(dst == o)) copy_into(o, dst);
}

}  // namespace lucid::cpu
