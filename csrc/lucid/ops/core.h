// C++ API of the core ops (named like the Python API). VJPs and other families call these.
#pragma once
#include "lucid/dispatch/dispatch.h"

namespace lucid {

Tensor cast(const Tensor& x, DType dtype);  // always a new tensor (clone when dtype is equal)
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
