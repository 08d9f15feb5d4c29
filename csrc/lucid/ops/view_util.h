// Shape rules shared by the reshape-like ops (Reshape, View, Unflatten): resolving a -1 in a
// requested shape, and the strides that view a tensor as another shape without a copy.
#pragma once
#include "lucid/core/tensor.h"
#include "lucid/ops/attrs.h"

namespace lucid {

// Resolves one -1 and checks the element count; `op` names the op in errors.
Shape infer_reshape_shape(const char* op, const Shape& from, IntList to);
// Strides for viewing x as `shape` without a copy, if possible (PyTorch's computeStride).
bool view_strides(const Tensor& x, const Shape& shape, Strides& out);

}  // namespace lucid
