// C++ API of the movement family (shape, view, concatenation and indexing ops), named like the
// Python API. View ops (view, squeeze, unsqueeze, slice, select, narrow, split, chunk, unbind)
// alias their input's storage; the others copy. VJPs everywhere call these functions.
#pragma once
#include <cstdint>
#include "lucid/ops/core.h"

namespace lucid {

// ---- views (movement_views.cpp) ----
Tensor view(const Tensor& x, const Shape& shape);  // raises when strides do not allow a view
Tensor squeeze(const Tensor& x);                   // every size-1 dim
Tensor squeeze(const Tensor& x, const IntList& dims);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes);
// Python-style slicing of several dims at once (start/end clamped, step > 0).
Tensor slice(const Tensor& x, const IntList& dims, const IntList& starts, const IntList& ends, const IntList& steps);
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor select(const Tensor& x, const IntList& dims, const IntList& indices);  // dims ascending
// base with base[slices] = src (src broadcast to the slice region); a copy.
Tensor slice_scatter(const Tensor& base, const Tensor& src, const IntList& dims, const IntList& starts,
                     const IntList& ends, const IntList& steps);
TensorList split(const Tensor& x, int64_t split_size, int64_t dim = 0);
TensorList split_with_sizes(const Tensor& x, const IntList& sizes, int64_t dim = 0);
TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
TensorList unbind(const Tensor& x, int64_t dim = 0);
Tensor movedim(const Tensor& x, const IntList& src, const IntList& dst);
Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step);
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
// Zeros of `shape` whose (offset, dim1, dim2) diagonal is x (diag_embed, diag of a vector).
Tensor diagonal_embed(const Tensor& x, const Shape& shape, int64_t offset, int64_t dim1, int64_t dim2);
Tensor diag_embed(const Tensor& x, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
Tensor diag(const Tensor& x, int64_t diagonal = 0);
TensorList tensor_split(const Tensor& x, int64_t sections, int64_t dim = 0);
TensorList tensor_split_at(const Tensor& x, const IntList& indices, int64_t dim = 0);

// ---- copies (movement_copy.cpp) ----
Tensor cat(const TensorList& xs, int64_t dim = 0);
Tensor stack(const TensorList& xs, int64_t dim = 0);
Tensor flip(const Tensor& x, const IntList& dims);
Tensor roll(const Tensor& x, const IntList& shifts, const IntList& dims);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor repeat(const Tensor& x, const IntList& repeats);
Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t dim, bool flat);
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, int64_t dim, bool flat);
Tensor rot90(const Tensor& x, int64_t k, const IntList& dims);
// torch.nn.functional.pad: pad pairs from the last dim backwards; mode constant/reflect/replicate/circular.
Tensor pad(const Tensor& x, const IntList& pad, const std::string& mode = "constant", double value = 0.0);

// ---- indexing (index_ops.cpp) ----
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor take_along_dim(const Tensor& x, const Tensor& indices, int64_t dim, bool flat = false);
// x with x.index_select(dim, index) += alpha * source (repeated indices add up).
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, double alpha = 1.0);
const Tensor& index_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, double alpha = 1.0);
// Advanced indexing: `indices[k]` (integer tensors, broadcast together) index dim dims[k] of x.
Tensor index_gather(const Tensor& x, const IntList& dims, const TensorList& indices);
Tensor index_put(const Tensor& x, const IntList& dims, const TensorList& indices, const Tensor& values,
                 bool accumulate = false);
const Tensor& index_put_(const Tensor& x, const IntList& dims, const TensorList& indices, const Tensor& values,
                         bool accumulate = false);
// Integer index tensors of the true elements of a bool mask (one int64 1-D tensor per dim).
TensorList nonzero_indices(const Tensor& mask);
Tensor nonzero(const Tensor& x);  // (count, ndim) int64 coordinates of the non-zero elements
Tensor take(const Tensor& x, const Tensor& index);
Tensor masked_select(const Tensor& x, const Tensor& mask);

}  // namespace lucid
