// Private helpers of the nn and loss op records (nn_*.cpp, loss_*.cpp): the float-only dtype
// check, the dtype conversion their VJPs use, and the VJP of fused backward ops without a double
// backward. What the records share with the backend kernels is in nn_layout.h. Not part of the
// public C++ API (see nn.h for that).
#pragma once
#include "lucid/ops/core.h"
#include "lucid/ops/op_def.h"

namespace lucid::nnutil {

// t in dtype dt: t itself when it has it, else a converted copy made by the Copy op. For VJPs and
// C++ API code only: it dispatches, so a kernel (which must not) copies with contig_as
// (backends/cpu/kernels/nn_operands.h) instead.
inline Tensor as_dtype(const Tensor& t, DType dt) { return t.dtype() == dt ? t : cast(t, dt); }

inline void check_floating(const Tensor& t, const char* op, const char* arg) {
  LUCID_CHECK(is_floating(t.dtype()), TypeError, op, ": argument '", arg, "' expected a floating point tensor, got ",
              dtype_name(t.dtype()));
}

}  // namespace lucid::nnutil

// VJP of a fused backward op that has no double backward yet: differentiating through it
// raises a clear error (instead of silently treating the gradient as a constant).
#define LUCID_NO_DOUBLE_BACKWARD(opname)                                                             \
  [](const ::lucid::VjpContext&) -> ::lucid::TensorList {                                           \
    throw ::lucid::NotImplementedError(opname ": double backward (differentiating a gradient that " \
                                              "went through this op) is not implemented");          \
  }
