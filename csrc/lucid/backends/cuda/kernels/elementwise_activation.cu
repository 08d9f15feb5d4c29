// CUDA kernels of the functor table's activations without parameters and their fused backwards
// (relu, sigmoid, silu, mish, relu_backward...), expanded from their functors
// (backends/cuda/elementwise.cuh, unit EwUnit::Activation).
#include "lucid/backends/cuda/elementwise.cuh"

namespace lucid::cuda {

#define LUCID_EW(Op, F, Arity, Rule, Domain) LUCID_EW_CUDA_ROW(Op, ew_unit(OpId::Op, Arity, false) == EwUnit::Activation)
#define LUCID_EW_ATTR(Op, F, Arity, Rule, Domain)
#include "lucid/ops/list/elementwise_functors.def"

}  // namespace lucid::cuda
