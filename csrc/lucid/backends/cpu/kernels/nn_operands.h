// Operand copies for the nn and loss CPU kernels (backends/cpu/kernels/{softmax, norm, attention,
// embedding, loss_*}.cpp): a contiguous tensor in a given dtype, and small parameter tensors
// (weights, running stats) read as doubles. They copy with cpu::copy_into, never through
// dispatch, so a kernel running under a tracer records nothing of its own.
#pragma once
#include <vector>

#include "lucid/backends/cpu/loops.h"
#include "lucid/core/tensor.h"

namespace lucid::nnutil {

// Contiguous tensor with t's values in dtype dt (t itself when it already is one).
inline Tensor contig_as(const Tensor& t, DType dt) { return cpu::as_dtype(t, dt).contiguous_data(); }

// A small tensor (weights, running stats) as a vector of doubles; empty when undefined.
inline std::vector<double> doubles(const Tensor& t) {
  if (!t.defined()) return {};
  Tensor c = contig_as(t, DType::Float64);
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.numel());
}

}  // namespace lucid::nnutil
