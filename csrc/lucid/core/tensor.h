// Tensor: a handle (shared_ptr) to a TensorImpl, which is a strided view over a Storage plus
// autograd metadata. Views share the Storage; `contiguous()` copies only when needed.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "lucid/core/dtype.h"
#include "lucid/core/shape.h"
#include "lucid/core/storage.h"

namespace lucid {

struct Node;  // autograd graph node (autograd/node.h)
class Tensor;

using TensorHook = std::function<Tensor(const Tensor&)>;  // returns undefined to keep the grad

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  std::shared_ptr<struct TensorImpl> grad;
  std::vector<TensorHook> hooks;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;
  int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;
  bool is_wrapped_number = false;  // a Python scalar turned into a 0-d tensor
  bool is_view = false;            // produced by a view op (aliases another tensor's storage)
  std::shared_ptr<TensorImpl> view_base;  // for views: the non-view tensor owning the storage
  std::unique_ptr<AutogradMeta> autograd;

  AutogradMeta& meta() {
    if (!autograd) autograd = std::make_unique<AutogradMeta>();
    return *autograd;
  }
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Fresh contiguous tensor (uninitialised memory) on `device` (its allocator, core/allocator.h).
  static Tensor empty(const Shape& shape, DType dtype, const Device& device = Device{});
  // A view over `base`'s storage with new geometry; no autograd metadata.
  static Tensor make_view(const Tensor& base, Shape shape, Strides strides, int64_t offset);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  const Shape& shape() const { return impl_->shape; }
  const Strides& strides() const { return impl_->strides; }
  int64_t ndim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t size(int64_t d) const;
  int64_t numel() const { return numel_of(impl_->shape); }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device; }
  int64_t offset() const { return impl_->offset; }
  bool is_contiguous() const;

  void* data_ptr() const {
    return static_cast<char*>(impl_->storage->data) + impl_->offset * itemsize(impl_->dtype);
  }
  template <class T> T* data() const { return static_cast<T*>(data_ptr()); }

  uint32_t version() const { return impl_->storage->version.load(std::memory_order_relaxed); }
  void bump_version() const { impl_->storage->bump_version(); }
  bool same_storage(const Tensor& o) const { return impl_->storage == o.impl_->storage; }

  // Autograd accessors.
  bool requires_grad() const { return impl_->autograd && impl_->autograd->requires_grad; }
  void set_requires_grad(bool r);
  const std::shared_ptr<Node>& grad_fn() const;
  bool is_leaf() const { return !impl_->autograd || !impl_->autograd->grad_fn; }
  Tensor grad() const;
  void set_grad(const Tensor& g);

  // A tensor sharing storage and geometry, without autograd history.
  Tensor detach() const;
  // torch's `t.data = src`: this tensor (its identity and autograd metadata kept) now views src's
  // storage with src's shape, strides, offset and dtype, as a root tensor (not a view of src).
  void set_data(const Tensor& src);
  // Contiguous version (self if already contiguous); a copy is not recorded by autograd.
  Tensor contiguous_data() const;

  bool operator==(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace lucid
