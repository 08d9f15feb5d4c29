// Shapes and strides (in elements), broadcasting, dim normalisation, and the overflow-checked
// size arithmetic: every element count, stride and byte count of the engine (creation, views,
// reshape, cat, repeat, the compiler's memory plan) is computed with checked_mul / checked_add
// or the functions below, so a product that does not fit int64 raises instead of wrapping into
// a tiny buffer (PyTorch's "Storage size calculation overflowed" / "integer multiplication
// overflow" errors).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lucid/core/error.h"

namespace lucid {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

// a * b and a + b; raise Error "<what>: integer multiplication (addition) overflow" when the
// result does not fit int64.
int64_t checked_mul(int64_t a, int64_t b, const char* what);
int64_t checked_add(int64_t a, int64_t b, const char* what);

// Product of the dims; raises "numel: integer multiplication overflow" (as PyTorch).
int64_t numel_of(const Shape& s);
// Bytes of a contiguous buffer of this shape; raises "Storage size calculation overflowed with
// sizes=[...]" when numel * itemsize does not fit int64.
int64_t contiguous_nbytes(const Shape& s, int64_t itemsize);
// Elements a strided view spans from its storage offset: 1 + offset + sum((size-1) * stride)
// (0 for an empty view). Strides must be non-negative; raises on overflow naming sizes and strides.
int64_t storage_extent(const Shape& s, const Strides& st, int64_t offset);
Strides contiguous_strides(const Shape& s);
// Elements of [start, end) taken every `step` (> 0), without overflow for any int64 step.
inline int64_t slice_length(int64_t start, int64_t end, int64_t step) {
  return end > start ? (end - start - 1) / step + 1 : 0;
}
// The stride of a dim of `size` elements taken every `step`: stride * step, checked; a dim of at
// most one element whose stride * step does not fit keeps `stride` (never read: x[::2**62]).
int64_t stepped_stride(int64_t stride, int64_t step, int64_t size, const char* what);
std::string shape_str(const Shape& s);

// Broadcast two shapes like NumPy/PyTorch; `op` names the op in the error.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Normalise dim into [0, ndim); raises IndexError naming the op.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace lucid
