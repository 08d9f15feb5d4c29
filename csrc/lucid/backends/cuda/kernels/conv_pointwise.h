// The elementwise work around cuDNN's convolutions (kernels/conv.cpp), on NCHW-contiguous
// tensors of N images, C channels and S spatial elements per channel:
//   conv_epilogue   y = act(y + bias[c] (+ residual, residual_first)) (+ residual otherwise): the
//                   bias of Conv/ConvTranspose and ConvFused's whole epilogue (ops/fused_activation.h)
//                   in one pass, computed in float (double for float64) and rounded once. ReLU is
//                   lucid's own functor (sm::Relu: NaN and -0.0 pass through, as eager relu and
//                   PyTorch), GELU the erf or tanh form of sm::Gelu, so the fused op equals the
//                   unfused chain.
//   pad_planes      explicit zero padding of [P, H, W] planes into [P, Hp, Wp] (the asymmetric part
//                   of a 'same' convolution's padding, which cuDNN then need not see, as torch does)
//   crop_planes     its adjoint: the [P, H, W] window of [P, Hp, Wp] planes
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "lucid/core/dtype.h"
#include "lucid/ops/fused_activation.h"

namespace lucid::cuda {

// bias: null or [C] of y's dtype; residual: null or contiguous like y.
void conv_epilogue(DType t, void* y, const void* bias, const void* residual, int64_t N, int64_t C, int64_t S,
                   FusedActivation act, bool residual_first, cudaStream_t stream);

void pad_planes(size_t elem_size, const void* src, void* dst, int64_t P, int64_t H, int64_t W, int64_t Hp, int64_t Wp,
                int64_t top, int64_t left, cudaStream_t stream);

void crop_planes(size_t elem_size, const void* src, void* dst, int64_t P, int64_t H, int64_t W, int64_t Hp, int64_t Wp,
                 int64_t top, int64_t left, cudaStream_t stream);

}  // namespace lucid::cuda
