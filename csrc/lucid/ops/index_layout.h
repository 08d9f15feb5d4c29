// Geometry of the indexing ops (ops/index_ops.cpp) shared by their records (infer) and the
// backends' kernels, device-neutral (shapes only, no data): where the indexed dims of
// x[idx0, idx1, ...] land in the result (AdvLayout, as PyTorch places them), and the 0-d-as-1-d
// view gather and scatter work on.
#pragma once
#include <cstdint>

#include "lucid/ops/op_def.h"

namespace lucid {

// A 0-d tensor seen as shape [1] (a view); any other tensor itself.
Tensor as_1d_if_scalar(const Tensor& t);

// The result of indexing a tensor of shape xs with one integer index tensor per dim of `dims`.
struct AdvLayout {
  Shape B;          // broadcast shape of the index tensors
  Shape out;        // shape of x[indices]
  IntList rest;     // non-indexed dims of x, in order
  int64_t pos = 0;  // how many rest dims come before the B dims in `out`
};

// Validates dims (strictly increasing, in range) and index dtypes, broadcasts the index shapes
// (IndexError naming `op` when they do not broadcast together); the indexed dims land in place
// when they are adjacent, first otherwise.
AdvLayout adv_layout(const Shape& xs, const IntList& dims, const TensorList& idx, const char* op);

}  // namespace lucid
