// View geometry of the core ops, shared by their records (view functions, infer) and the
// backends' kernels: resolving a -1 in a requested shape, the strides that view a tensor as
// another shape without a copy (Reshape, View, Unflatten), and the region AsStrided views and
// AsStridedScatter writes. Shapes and strides only, no data.
#pragma once
#include "lucid/core/tensor.h"
#include "lucid/ops/attrs.h"

namespace lucid {

// Resolves one -1 and checks the element count; `op` names the op in errors.
Shape infer_reshape_shape(const char* op, const Shape& from, IntList to);
// Strides for viewing x as `shape` without a copy, if possible (PyTorch's computeStride).
bool view_strides(const Tensor& x, const Shape& shape, Strides& out);

// The view of `base` given by attributes shape, strides and offset (relative to base's first
// element), as AsStrided / AsStridedScatter take them (no autograd).
inline Tensor strided_region(const Tensor& base, const Attrs& a) {
  return Tensor::make_view(base, a.ints("shape"), a.ints("strides"), base.offset() + a.i("offset"));
}

}  // namespace lucid
