// Shapes and strides (in elements), broadcasting, and dim normalisation helpers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lucid/core/error.h"

namespace lucid {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

int64_t numel_of(const Shape& s);
Strides contiguous_strides(const Shape& s);
std::string shape_str(const Shape& s);

// Broadcast two shapes like NumPy/PyTorch; `op` names the op in the error.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Normalise dim into [0, ndim); raises IndexError naming the op.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace lucid
