// Memory overlap between strided tensors, with PyTorch's rules (ATen/MemoryOverlap): an in-place
// op must not write a tensor in which two elements share one location (an expanded view), nor
// read an input that partially overlaps what it writes (x[1:].add_(x[:-1]) would otherwise read
// values it has already overwritten and give a running sum). Like PyTorch, the exact checks are
// made only for non-overlapping, dense tensors; for other geometries the status is TooHard, and
// callers that may still alias (dispatch_inplace) copy such an input first when the memory
// spans intersect, so the result is that of the cloned program (PyTorch computes those in its
// iteration order). Only tensors that share a Storage can overlap; callers test that first.
#pragma once
#include "lucid/core/tensor.h"

namespace lucid {

enum class MemOverlap { No, Yes, TooHard };                      // within one tensor
enum class MemOverlapStatus { Full, Partial, TooHard, No };      // between two tensors

// Strides are a permutation of the contiguous ones (size-1 and size-0 dims ignored).
bool is_non_overlapping_and_dense(const Tensor& t);
// Some dim of size > 1 has stride 0 (an expanded dim): two elements share one location.
bool has_broadcast_dim(const Tensor& t);
// Yes: has_broadcast_dim; No: dense; TooHard: anything else.
MemOverlap has_internal_overlap(const Tensor& t);
// Full: same tensor, or the same span with the same strides; Partial: intersecting spans of
// two dense tensors that are not Full; TooHard: a non-dense tensor is involved; No otherwise.
MemOverlapStatus get_overlap_status(const Tensor& a, const Tensor& b);
// Whether the byte spans [first element, last element] of a and b (same storage) intersect.
bool spans_intersect(const Tensor& a, const Tensor& b);

// PyTorch's error texts, and checks that raise them (lucid::Error, a RuntimeError in Python)
// prefixed with `op` (the in-place op's name, "copy_").
extern const char* const kInternalOverlapError;
extern const char* const kPartialOverlapError;
void assert_no_internal_overlap(const Tensor& t, const char* op);
void assert_no_partial_overlap(const Tensor& written, const Tensor& read, const char* op);

}  // namespace lucid
