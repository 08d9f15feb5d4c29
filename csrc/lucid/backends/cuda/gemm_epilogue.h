// The GEMM epilogue the CUDA matrix-product kernels run after cuBLASLt (or the integer GEMM), in
// place over the finished product, one elementwise pass:
//   v = base_from_out ? out : base
//   v += bias[col]                                   (bias given: cuBLASLt did not add it)
//   v += residual_scale * residual   if residual_first
//   v = act(v)                                       (ops/scalar_functors.h's Relu / Gelu)
//   v += residual_scale * residual   otherwise
// in the compute type of out's dtype (float for 16-bit floats, int64 for integers), rounded
// once into out. The activations are lucid's own functors, so ReLU keeps NaN and -0.0 (cuBLASLt's
// ReLU epilogue is max(x, 0)) and GELU is the erf form (cuBLASLt's GELU epilogue is the tanh
// approximation, used only for gelu_tanh, see kernels/matmul.cpp).
#pragma once
#include "lucid/core/tensor.h"
#include "lucid/ops/fused_activation.h"

namespace lucid::cuda {

struct GemmEpilogue {
  bool base_from_out = true;
  double base = 0.0;           // the starting value when !base_from_out
  Tensor bias;                 // undefined, or 1-D [out.shape[-1]] (any stride)
  Tensor residual;             // undefined, or broadcastable to out's shape (any strides)
  double residual_scale = 1.0;
  bool residual_first = false;
  FusedActivation act = FusedActivation::None;
  bool active() const { return !base_from_out || bias.defined() || residual.defined() || act != FusedActivation::None; }
};

// Runs ep over out (contiguous; its device's current stream). Nothing to do is no launch.
void gemm_epilogue(const Tensor& out, const GemmEpilogue& ep);

}  // namespace lucid::cuda
