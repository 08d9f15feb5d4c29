#include "lucid/core/tensor.h"

namespace lucid {

Tensor Tensor::empty(const Shape& shape, DType dtype, const Device& device) {
  for (int64_t d : shape)
    LUCID_CHECK(d >= 0, ValueError, "empty: argument 'size' expected non-negative sizes, got ", shape_str(shape));
  const int64_t nbytes = contiguous_nbytes(shape, static_cast<int64_t>(itemsize(dtype)));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(static_cast<size_t>(nbytes), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::make_view(const Tensor& base, Shape shape, Strides strides, int64_t offset) {
  numel_of(shape);  // a view's element count must fit int64 too (expand to [2**32, 2**32] raises)
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl_->storage;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.impl_->dtype;
  return Tensor(std::move(impl));
}

int64_t Tensor::size(int64_t d) const {
  return impl_->shape[wrap_dim(d, ndim(), "size")];
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // no element to misplace (PyTorch's rule); contiguous_strides skips 0-dims
  int64_t expected = 1;
  for (int64_t i = ndim() - 1; i >= 0; --i) {
    int64_t s = impl_->shape[i];
    if (s == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= s;
  }
  return true;
}

void Tensor::set_requires_grad(bool r) {
  if (!r && !impl_->autograd) return;
  if (r) LUCID_CHECK(is_floating(dtype()), TypeError,
                     "requires_grad_: only floating point tensors can require gradients, got dtype ",
                     dtype_name(dtype()));
  LUCID_CHECK(is_leaf() || r, ValueError,
              "requires_grad_: you can only change requires_grad of leaf tensors; use detach()");
  impl_->meta().requires_grad = r;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<Node> none;
  return impl_->autograd ? impl_->autograd->grad_fn : none;
}

Tensor Tensor::grad() const {
  if (!impl_->autograd || !impl_->autograd->grad) return Tensor();
  return Tensor(impl_->autograd->grad);
}

void Tensor::set_grad(const Tensor& g) {
  if (!g.defined()) {
    if (impl_->autograd) impl_->autograd->grad.reset();
    return;
  }
  LUCID_CHECK(g.shape() == shape(), ValueError, "grad: assigned grad has shape ", shape_str(g.shape()),
              " but the tensor has shape ", shape_str(shape()));
  LUCID_CHECK(g.dtype() == dtype(), TypeError, "grad: assigned grad has dtype ", dtype_name(g.dtype()),
              " but the tensor has dtype ", dtype_name(dtype()));
  impl_->meta().grad = g.impl_ptr();
}

Tensor Tensor::detach() const {
  Tensor t = make_view(*this, impl_->shape, impl_->strides, impl_->offset);
  t.impl_->is_wrapped_number = impl_->is_wrapped_number;
  return t;
}

void Tensor::set_data(const Tensor& src) {
  if (src.impl_ == impl_) return;
  impl_->storage = src.impl_->storage;
  impl_->shape = src.impl_->shape;
  impl_->strides = src.impl_->strides;
  impl_->offset = src.impl_->offset;
  impl_->dtype = src.impl_->dtype;
  impl_->is_wrapped_number = false;
  impl_->is_view = false;
  impl_->view_base.reset();
}

}  // namespace lucid
