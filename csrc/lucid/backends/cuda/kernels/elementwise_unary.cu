// CUDA kernels of the functor table's plain unary rows not in another unit (neg, abs, exp, log,
// sqrt, floor, round, isnan, logical_not...), expanded from their functors
// (backends/cuda/elementwise.cuh, unit EwUnit::Unary).
#include "lucid/backends/cuda/elementwise.cuh"

namespace lucid::cuda {

#define LUCID_EW(Op, F, Arity, Rule, Domain) LUCID_EW_CUDA_ROW(Op, ew_unit(OpId::Op, Arity, false) == EwUnit::Unary)
#define LUCID_EW_ATTR(Op, F, Arity, Rule, Domain)
#include "lucid/ops/list/elementwise_functors.def"

}  // namespace lucid::cuda
