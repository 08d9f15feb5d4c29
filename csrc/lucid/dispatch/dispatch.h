// dispatch(OpId, inputs, attrs): the single entry point every op call goes through.
//   infer (validate, shapes) -> allocate -> kernel (or view) -> autograd record -> trace hook.
// dispatch_inplace writes the result into an existing tensor (add_, copy_, optimizer updates).
#pragma once
#include <cstdint>
#include "lucid/ops/op_def.h"

namespace lucid {

TensorList dispatch(OpId id, const TensorList& inputs, const Attrs& attrs = {});
inline Tensor dispatch1(OpId id, const TensorList& inputs, const Attrs& attrs = {}) {
  return dispatch(id, inputs, attrs)[0];
}

// Computes op(inputs) into dst (dst is usually inputs[0]). The result shape must equal dst's
// and its dtype must be castable to dst's (no float into int), as in PyTorch.
const Tensor& dispatch_inplace(OpId id, const Tensor& dst, const TensorList& inputs, const Attrs& attrs = {});
// Computes a non-differentiable op's outputs into dsts, one each, in one kernel call (BatchNorm's
// running mean and variance): each result must have its destination's shape and dtype; no
// destination may require grad. The trace records one node and a write per destination.
void dispatch_inplace_many(OpId id, const TensorList& dsts, const TensorList& inputs, const Attrs& attrs = {});

// Writes src's values into dst with the Copy kernel of dst's device: src broadcast to dst's
// shape, converted to dst's dtype, either side strided (on the CPU, cpu::copy_into). Engine
// plumbing for a result written into a tensor the caller owns (dispatch_inplace, the compiled
// runtime's assigns): no autograd, no trace hook, no version bump, no overlap check (ops use
// copy_). Routed by dst's device, so backends stay out of dispatch and the runtime.
void copy_values(const Tensor& dst, const Tensor& src);

// A Python scalar as a 0-d "wrapped number" tensor (float64, int64 or bool), which only raises
// the category in type promotion (x_f32 + 1.5 stays float32).
Tensor scalar_tensor(double v);
Tensor scalar_tensor(int64_t v);
Tensor scalar_tensor_bool(bool v);

// PyTorch's result_type over tensors: dimensioned tensors > 0-d tensors > wrapped numbers.
DType result_type(const TensorList& ts);
DType default_float_dtype();
void set_default_float_dtype(DType t);

}  // namespace lucid
