// Private helpers shared by the nn and loss op records (nn_*.cpp, loss_*.cpp) and their backend
// kernels: the float-only dtype check, the dtype of saved norm statistics, the reduction enum of
// the losses, the class-index check, and the dtype conversion the VJPs use. Device-neutral (no
// backend code); the CPU kernels' operand copies are in backends/cpu/kernels/nn_operands.h. Not
// part of the public C++ API (see nn.h for that).
#pragma once
#include <cstdint>
#include <string>

#include "lucid/ops/core.h"
#include "lucid/ops/op_def.h"

namespace lucid::nnutil {

// t in dtype dt: t itself when it has it, else a converted copy made by the Copy op. For VJPs and
// C++ API code only: it dispatches, so a kernel (which must not) uses contig_as instead.
inline Tensor as_dtype(const Tensor& t, DType dt) { return t.dtype() == dt ? t : cast(t, dt); }

// Dtype of statistics (mean, rstd) saved by norm ops: float64 stays, everything else float32.
inline DType stat_dtype(DType x) { return x == DType::Float64 ? DType::Float64 : DType::Float32; }

inline void check_floating(const Tensor& t, const char* op, const char* arg) {
  LUCID_CHECK(is_floating(t.dtype()), TypeError, op, ": argument '", arg, "' expected a floating point tensor, got ",
              dtype_name(t.dtype()));
}

// Class-index targets of nll_loss / cross_entropy (host values, n of them): each is ignore or in
// [0, C); raises IndexError naming the op, the index and the number of classes.
inline void check_class_indices(const int64_t* p, int64_t n, int64_t C, int64_t ignore, const char* op) {
  for (int64_t i = 0; i < n; ++i)
    LUCID_CHECK(p[i] == ignore || (p[i] >= 0 && p[i] < C), IndexError, op, ": target index ", p[i],
                " is out of bounds for ", C, " classes (valid: 0..", C - 1, " or ignore_index=", ignore, ")");
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
