// Geometry shared by the movement family's op records (infer, view functions) and the backends'
// kernels: broadcasting checks, the dim rules of cat, flip and unfold, slices and diagonals as
// views. Shapes, strides and offsets only, no data: each backend's kernels build the views they
// move data between from these, so every backend agrees with the record on the geometry.
#pragma once
#include <cstdint>

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

// Validates unfold's window (size within the dim, step positive) and wraps `dim`.
void check_unfold(const Shape& shape, int64_t& dim, int64_t size, int64_t step);

}  // namespace lucid
