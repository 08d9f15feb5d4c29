// Geometry shared by the movement family's op records (infer, view functions) and the backends'
// kernels: broadcasting checks, the dim rules of cat, flip and unfold, slices and diagonals as
// views. Shapes, strides and offsets only, no data: each backend's kernels build the views they
// move data between from these, so every backend agrees with the record on the geometry.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "lucid/core/tensor.h"
#include "lucid/ops/attrs.h"

namespace lucid {

// Whether `from` broadcasts to exactly `to`.
inline bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[i + off]) return false;
  return true;
}

// cat: PyTorch still accepts 1-D empty tensors of shape [0] next to tensors of any rank: they are skipped.
inline bool cat_skipped(const Tensor& t) { return t.ndim() == 1 && t.shape()[0] == 0; }

// flip's dims wrapped, in the given order; ValueError naming `op` for a repeated dim.
IntList unique_dims(const IntList& dims, int64_t nd, const char* op);

// Canonical slice parameters: dims wrapped, start/end clamped into [0, size] as Python does.
struct SliceSpec {
  IntList dims, starts, ends, steps;
};
SliceSpec normalize_slice(const Shape& shape, const Attrs& a, const char* op);  // attrs dims/starts/ends/steps
// The region of `x` a slice spec selects, as a view (no autograd).
Tensor slice_region(const Tensor& x, const SliceSpec& s);

// The (offset, dim1, dim2) diagonal of x as a view (no autograd), as torch.diagonal.
Tensor diagonal_view(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2);

// A view of x narrowed to [start, start + len) along dim (no autograd).
inline Tensor narrow_view(const Tensor& x, int64_t dim, int64_t start, int64_t len) {
  Shape s = x.shape();
  s[dim] = len;
  return Tensor::make_view(x, s, x.strides(), x.offset() + (len > 0 ? start * x.strides()[dim] : 0));
}

// Whether two tensors are the same view of one storage (an in-place call's input and output).
inline bool same_view(const Tensor& a, const Tensor& b) {
  return a.same_storage(b) && a.offset() == b.offset() && a.strides() == b.strides() && a.shape() == b.shape();
}

// pad: the source index of output position j in a dim of size n padded by l on the left, for the
// modes that read the input ("reflect", "replicate", "circular").
inline int64_t pad_source(const std::string& mode, int64_t j, int64_t n, int64_t l) {
  int64_t i = j - l;
  if (mode == "reflect") {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
    return i;
  }
  if (mode == "replicate") return std::clamp<int64_t>(i, 0, n - 1);
  return ((i % n) + n) % n;  // circular
}

// Validates unfold's window (size within the dim, step positive) and wraps `dim`.
void check_unfold(const Shape& shape, int64_t& dim, int64_t size, int64_t step);

}  // namespace lucid
