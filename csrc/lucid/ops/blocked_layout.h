// The channel-blocked activation layouts as ordinary tensors: a batched 2-D activation
// [N, C, H, W] whose C is a multiple of the block b is held as the contiguous 5-D tensor
// [N, C/b, H, W, b], element (n, c, h, w) at [n, c / b, h, w, c % b]. b = 16 is oneDNN's nChw16c
// (b = 8, nChw8c, on AVX2 CPUs without AVX-512);
// b = C is nhwc (channels last: [N, 1, H, W, C]), the layout of its AMX bfloat16 kernels. The CPU compiler's
// layout pass (backends/cpu/compile/layout.cpp) keeps a model's activations in it between
// convolutions, so each conv reads and writes its primitive's layout instead of reordering to
// and from NCHW around every call. Because the blocked value is a real tensor with its real
// shape, every elementwise op, concatenation along dim 1 (nhwc: dim 4) and the graph's shape checks stay
// correct on it unchanged; only the ops below (and ConvFused's in_block / out_block attributes,
// ops/conv_ops.cpp) read the layout. Each is defined as its NCHW op seen through the layout:
//   BlockChannels(x) {block}       [N, C, H, W] -> [N, C/b, H, W, b]
//   UnblockChannels(x)             its inverse
//   MaxPool2dBlocked(x)            max_pool2d's values (no indices), attributes as MaxPool2d
//   AvgPool2dBlocked(x)            avg_pool2d, attributes as AvgPool2d
//   AdaptiveAvgPool2dBlocked(x)    adaptive_avg_pool2d, attributes as AdaptiveAvgPool2d
//   BatchNormBlocked(x, running_mean, running_var, weight, bias) {eps, relu}: batch_norm in eval
//                                  mode, then relu when `relu` (DenseNet's BN -> ReLU in one pass)
// The CPU kernels (backends/cpu/kernels/blocked_layout.cpp) compute each element exactly as
// the NCHW kernel does, so the pass changes no result. The ops are compiler-internal (not
// differentiable; the pass runs after autodiff); the C++ entry points exist for their tests.
#pragma once
#include <cstdint>

#include "lucid/core/tensor.h"
#include "lucid/ops/attrs.h"

namespace lucid {

// The block of nChw16c: a 16-float AVX-512 vector, the block of oneDNN's fastest float32 direct
// convolutions (the layout pass's other block, for nhwc, is the channel count itself).
constexpr int64_t kChannelBlock = 16;

// [N, C, H, W] -> [N, C/b, H, W, b] (C % b == 0, checked by the records).
inline Shape blocked_shape(const Shape& nchw, int64_t b) { return {nchw[0], nchw[1] / b, nchw[2], nchw[3], b}; }
// [N, C/b, H, W, b] -> [N, C, H, W].
inline Shape unblocked_shape(const Shape& s) { return {s[0], s[1] * s[4], s[2], s[3]}; }

// The blocked view of a contiguous NCHW tensor: shape [N, C/b, H, W, b] with the strides each
// element has in NCHW, so copying between it and a contiguous blocked tensor moves every element
// to its place (the reorder of a dtype oneDNN has none for, and fallbacks).
inline Tensor blocked_view_of_nchw(const Tensor& nchw, int64_t b) {
  const Shape& s = nchw.shape();
  const int64_t C = s[1], H = s[2], W = s[3];
  return Tensor::make_view(nchw, blocked_shape(s, b), {C * H * W, b * H * W, W, 1, H * W}, nchw.offset());
}

Tensor block_channels(const Tensor& x, int64_t block = kChannelBlock);
Tensor unblock_channels(const Tensor& x);
Tensor max_pool2d_blocked(const Tensor& x, IntList kernel, IntList stride, IntList padding, IntList dilation,
                          bool ceil_mode);
Tensor avg_pool2d_blocked(const Tensor& x, IntList kernel, IntList stride, IntList padding, bool ceil_mode,
                          bool count_include_pad, int64_t divisor_override);
Tensor adaptive_avg_pool2d_blocked(const Tensor& x, IntList output_size);
Tensor batch_norm_blocked(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                          const Tensor& bias, double eps, bool relu = false);

}  // namespace lucid
