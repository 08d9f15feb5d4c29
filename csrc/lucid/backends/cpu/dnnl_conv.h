// Convolution kernels for the Conv / ConvBackwardInput / ConvBackwardWeight / ConvTranspose ops.
// float32 and bfloat16 run on oneDNN convolution (forward, backward data, backward weights) and
// deconvolution primitives on the activation layout of conv_activation_layout (nChw16c when
// channels allow, or nhwc for bfloat16 on AMX; weights as oneDNN picks; we reorder from/to plain
// NC[H]W), cached per geometry in an LRU. Weights seen
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
  // layout [N, C/b, H, W, b] (ops/blocked_layout.h), read and written by the primitive without a
  // reorder: b = 16 is oneDNN's nChw16c, b = C its nhwc (channels last); 0: NCHW. float32 and
  // bfloat16.
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

// The activation layout the convolutions of dtype t run on, on this CPU, with LUCID_CONV_LAYOUT
// unset or "blocked" (the default; "any" and "plain" give Plain):
//   Blocked16:    nChw16c, oneDNN's fastest direct kernels on AVX-512 (float32; bfloat16
//                 without AMX);
//   Blocked8:     nChw8c, float32 on AVX2 without AVX-512: the block of oneDNN's AVX2 direct
//                 kernels (an 8-float vector);
//   ChannelsLast: nhwc, bfloat16 where oneDNN has AMX: its AMX convolutions read and write nhwc,
//                 while on nChw16c it runs the AVX-512 bf16 kernels (measured 32x64x56x56, 3x3:
//                 1.8 ms against 33 ms, 2 threads);
//   Plain:        none of these (no AVX2, other dtypes): convolutions reorder to oneDNN's choice.
// Eager convolutions reorder NCHW into it around the primitive; the layout pass keeps a model's
// activations in it between convolutions (block 16 or 8, or block = C for ChannelsLast).
enum class ConvLayout { Plain, Blocked16, Blocked8, ChannelsLast };
// The channel block of a blocked layout (16, 8), or 0 (Plain, ChannelsLast).
inline int64_t conv_layout_block(ConvLayout l) { return l == ConvLayout::Blocked16 ? 16 : l == ConvLayout::Blocked8 ? 8 : 0; }
ConvLayout conv_activation_layout(DType t);

// Whether a convolution of dtype t with its residual fused (oneDNN's sum post-op; float64 runs
// lucid's own kernel) computes exactly conv, then add: float64, and float32 on AVX-512 CPUs. On
// AVX2 oneDNN adds the residual into partial sums (measured up to 5e-7 apart, 3->5 channels), so
// the epilogue pass leaves the add outside there.
bool conv_residual_exact(DType t);

}  // namespace lucid::cpu
