// Convolution kernels for the Conv / ConvBackwardInput / ConvBackwardWeight / ConvTranspose ops.
// float32 and bfloat16 run on oneDNN convolution (forward, backward data, backward weights) and
// deconvolution primitives on blocked layouts (nChw16c activations when channels allow, weights
// as oneDNN picks; we reorder from/to plain NC[H]W), cached per geometry in an LRU. Weights seen
// twice unchanged come prepacked in the primitive's layout (packed_weights.h), so inference does
// not reorder them per call. float16 computes in float32; float64 runs as im2col + GEMM (oneDNN
// has no f64 on CPU). Tensors are batched [N, C, spatial...] with one or two spatial dims, or,
// for the compiler's layout pass, conv_forward's activations blocked (ConvParams::in_block); conv weights are [OC, IC/G, k...], transposed-conv weights
// [IC, OC/G, k...] as in PyTorch. Dilation is PyTorch's (1 = dense).
#pragma once
#include <cstdint>
#include <vector>

#include "lucid/backends/cpu/dnnl_matmul.h"  // MatmulPostOp: the post-op vocabulary shared with GEMMs
#include "lucid/core/tensor.h"
#include "lucid/ops/attrs.h"

namespace lucid::cpu {

struct ConvParams {
  IntList stride, dilation, pad_l, pad_r;
  int64_t groups = 1;
  // conv_forward only: x (in_block) and y (out_block) are 2-D activations in the channel-blocked
  // layout [N, C/b, H, W, b] (ops/blocked_layout.h) with b = 16, read and written by the
  // primitive as its nChw16c without a reorder; 0: NCHW. float32 and bfloat16.
  int64_t in_block = 0, out_block = 0;
};

// y = post_ops(conv(x, w) + bias) (bias undefined or [OC]). A Sum post-op adds scale * (y's value
// before the call): the caller pre-fills y with the residual (ConvFused).
void conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvParams& p, const Tensor& y,
                  const std::vector<MatmulPostOp>& post_ops = {});
// gx (allocated with the input's shape) = gradient of conv wrt x.
void conv_backward_data(const Tensor& gy, const Tensor& w, const ConvParams& p, const Tensor& gx);
// gw (allocated with the weight's shape) = gradient of conv wrt w.
void conv_backward_weights(const Tensor& gy, const Tensor& x, const ConvParams& p, const Tensor& gw);
// y = conv_transpose(x, w) + bias: the adjoint of conv (w is [IC, OC/G, k...]); pads symmetric
// (pad_l == pad_r); y's spatial size carries PyTorch's output_padding.
void deconv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvParams& p, const Tensor& y);

size_t conv_cache_size();

// True when the convolutions' primitives run on nChw16c activations (LUCID_CONV_LAYOUT=blocked,
// the default, on a CPU where oneDNN's kernels are AVX-512): the layout pass keeps activations
// blocked only then (elsewhere nChw16c is not the primitives' layout, and blocking would add
// reorders instead of removing them).
bool conv_layout_is_blocked();

}  // namespace lucid::cpu
