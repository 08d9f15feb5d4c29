// C++ API of the core ops (named like the Python API). VJPs and other families call these.
#pragma once
#include <cstdint>
#include "lucid/dispatch/dispatch.h"

namespace lucid {

Tensor cast(const Tensor& x, DType dtype);  // always a new tensor (clone when dtype is equal)
// x copied onto `device` in `dtype` (always a new tensor; differentiable: the gradient goes back).
Tensor to_device(const Tensor& x, const Device& device, DType dtype, bool non_blocking = false);
// x's values in contiguous CPU memory, for the few composites that compute on the host (nonzero,
// unique, repeat_interleave's counts): x itself when it is already a contiguous CPU tensor, else a
// copy (from a GPU: one device-to-host copy, which waits for the device, as torch's nonzero).
// Not recorded by autograd. `on_device(t, d)`: t moved to device d (t itself when already there).
Tensor host_copy(const Tensor& x);
Tensor on_device(const Tensor& t, const Device& d);
// dst.copy_(src): src broadcast to dst's shape and cast to its dtype, with PyTorch's overlap
// errors (see dispatch_inplace). non_blocking: a host<->device copy may return before it has
// finished where the host memory is pinned (the Copy op's attribute).
const Tensor& copy_(const Tensor& dst, const Tensor& src, bool non_blocking = false);
Tensor sum_to(const Tensor& x, const Shape& shape);
Tensor expand(const Tensor& x, const Shape& shape);
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor add(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& x);
Tensor mul_scalar(const Tensor& a, double s);
const Tensor& fill_(const Tensor& x, double value);
Tensor full(const Shape& shape, double value, DType dtype);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);

}  // namespace lucid

namespace lucid {
Tensor sub(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor permute(const Tensor& x, const IntList& dims);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor sum(const Tensor& x, const IntList& dims = {}, bool keepdim = false);  // dims empty: all
// Normalises a dim list (wraps negatives, checks duplicates); empty means all dims.
IntList reduce_dims(const IntList& dims, int64_t ndim, const char* op);
Shape reduced_shape(const Shape& s, const IntList& dims, bool keepdim);
// Moves `dims` of x to the end and returns a contiguous [outer, inner] view of it.
Tensor reduction_rows(const Tensor& x, const IntList& dims, int64_t& outer, int64_t& inner);
}  // namespace lucid

namespace lucid {
// View of `base` (contiguous) by geometry relative to base's first element, and its scatter.
Tensor as_strided(const Tensor& base, const Shape& shape, const Strides& strides, int64_t offset);
Tensor as_strided_scatter(const Tensor& base, const Tensor& src, const Shape& shape, const Strides& strides, int64_t offset);
}  // namespace lucid
