// Private helpers shared by the nn and loss op files (nn_*.cpp, loss_*.cpp): contiguous copies
// in a given dtype, small parameter vectors read as doubles, the reduction enum of the losses,
// and the float-only dtype check. Not part of the public C++ API (see nn.h for that).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lucid/backends/cpu/loops.h"
#include "lucid/ops/op_def.h"

namespace lucid::nnutil {

// Contiguous tensor with t's values in dtype dt (t itself when it already is one).
inline Tensor contig_as(const Tensor& t, DType dt) {
  if (t.dtype() == dt && t.is_contiguous()) return t;
  Tensor c = Tensor::empty(t.shape(), dt);
  cpu::copy_into(c, t);
  return c;
}

// A small tensor (weights, running stats) as a vector of doubles; empty when undefined.
inline std::vector<double> doubles(const Tensor& t) {
  if (!t.defined()) return {};
  Tensor c = contig_as(t, DType::Float64);
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.numel());
}

// Dtype of statistics (mean, rstd) saved by norm ops: float64 stays, everything else float32.
inline DType stat_dtype(DType x) { return x == DType::Float64 ? DType::Float64 : DType::Float32; }

inline void check_floating(const Tensor& t, const char* op, const char* arg) {
  LUCID_CHECK(is_floating(t.dtype()), TypeError, op, ": argument '", arg, "' expected a floating point tensor, got ",
              dtype_name(t.dtype()));
}

// Loss reductions, numbered like PyTorch's Reduction enum.
enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

inline int64_t parse_reduction(const std::string& s, const char* op) {
  if (s == "none") return kNone;
  if (s == "mean") return kMean;
  if (s == "sum") return kSum;
  throw ValueError(str(op, ": argument 'reduction' expected 'none', 'mean' or 'sum', got '", s, "'"));
}

inline Shape reduced_loss_shape(const Shape& s, int64_t reduction) { return reduction == kNone ? s : Shape{}; }

}  // namespace lucid::nnutil

// VJP of a fused backward op that has no double backward yet: differentiating through it
// raises a clear error (instead of silently treating the gradient as a constant).
#define LUCID_NO_DOUBLE_BACKWARD(opname)                                                             \
  [](const ::lucid::VjpContext&) -> ::lucid::TensorList {                                           \
    throw ::lucid::NotImplementedError(opname ": double backward (differentiating a gradient that " \
                                              "went through this op) is not implemented");          \
  }
