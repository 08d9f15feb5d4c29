// CPU kernels of the convolution ops (records in ops/conv_ops.cpp): Conv, ConvFused,
// ConvBackwardInput, ConvBackwardWeight and ConvTranspose, each one oneDNN primitive of
// backends/cpu/dnnl_conv (ConvFused with its epilogue as post-ops, ops/fused_epilogue.h).
#include <vector>

#include "lucid/backends/cpu/dnnl_conv.h"
#include "lucid/backends/cpu/fused_epilogue.h"
#include "lucid/ops/linalg_geometry.h"

namespace lucid::cpu {

namespace {

ConvParams params(const ConvOptions& o) { return {o.stride, o.dilation, o.padding_l, o.padding_r, o.groups}; }

void conv_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  conv_forward(in[0], in[1], in[2], params(ConvOptions::from(a)), out[0]);
}

void conv_fused_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  ConvParams p = params(ConvOptions::from(a));
  p.in_block = a.i("in_block", 0);
  p.out_block = a.i("out_block", 0);
  run_fused_epilogue(a, "conv_fused", in[3], out[0], [&](const std::vector<MatmulPostOp>& post) {
    conv_forward(in[0], in[1], in[2], p, out[0], post);
  });
}

void conv_backward_input_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  conv_backward_data(in[0], in[1], params(ConvOptions::from(a)), out[0]);
}

void conv_backward_weight_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  conv_backward_weights(in[0], in[1], params(ConvOptions::from(a)), out[0]);
}

void conv_transpose_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  deconv_forward(in[0], in[1], in[2], params(transpose_as_conv(a)), out[0]);
}

}  // namespace

LUCID_REGISTER_KERNEL(Conv, CPU, conv_kernel);
LUCID_REGISTER_KERNEL(ConvFused, CPU, conv_fused_kernel);
LUCID_REGISTER_KERNEL(ConvBackwardInput, CPU, conv_backward_input_kernel);
LUCID_REGISTER_KERNEL(ConvBackwardWeight, CPU, conv_backward_weight_kernel);
LUCID_REGISTER_KERNEL(ConvTranspose, CPU, conv_transpose_kernel);

}  // namespace lucid::cpu
