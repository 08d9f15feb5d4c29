// Records of the channel-blocked layout ops (see blocked_layout.h). Each pooling / norm record is
// its NCHW op's own record applied to the logical [N, C, H, W] shape, so the validation and the
// output geometry are the NCHW op's, with the result blocked again.
#include "lucid/ops/blocked_layout.h"

#include "lucid/ops/core.h"

namespace lucid {

namespace {

void check_blocked(const char* op, const Tensor& x) {
  LUCID_CHECK(x.ndim() == 5, ValueError, op, ": argument 'input' expected a 5-D channel-blocked tensor [N, C/b, H, W, b], got ",
              x.ndim(), "-D ", shape_str(x.shape()));
  LUCID_CHECK(x.shape()[4] > 0, ValueError, op, ": argument 'input' expected a positive block (last dim), got ",
              shape_str(x.shape()));
}

// A shape carrier with blocked x's logical NCHW shape (no data is read through it).
Tensor logical(const Tensor& x) { return Tensor::make_view(x, unblocked_shape(x.shape()), Strides(4, 0), 0); }

// The NCHW record `base` on the logical shape; its first result, blocked.
std::vector<TensorMeta> through_layout(OpId base, const char* op, const TensorList& in, const Attrs& a) {
  check_blocked(op, in[0]);
  TensorList li = in;
  li[0] = logical(in[0]);
  std::vector<TensorMeta> r = op_def(base).infer(li, a);
  TensorMeta m = r[0];
  m.shape = blocked_shape(m.shape, in[0].shape()[4]);
  return {m};
}

Attrs eval_batch_norm_attrs(double eps) { return Attrs{{"training", false}, {"momentum", 0.1}, {"eps", eps}}; }

}  // namespace

LUCID_REGISTER_OP(BlockChannels, "block:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    const int64_t b = a.i("block");
    LUCID_CHECK(x.ndim() == 4, ValueError, "block_channels: argument 'input' expected a 4-D tensor [N, C, H, W], got ",
                x.ndim(), "-D ", shape_str(x.shape()));
    LUCID_CHECK(b > 0 && x.shape()[1] % b == 0, ValueError, "block_channels: argument 'block' expected a positive divisor of the ",
                x.shape()[1], " channels, got ", b);
    return std::vector<TensorMeta>{{blocked_shape(x.shape(), b), x.dtype(), x.device()}};
  };
  d.vjp = [](const VjpContext& c) { return TensorList{unblock_channels(c.grads[0])}; };
  return d;
}());

LUCID_REGISTER_OP(UnblockChannels, "", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs&) {
    check_blocked("unblock_channels", in[0]);
    return std::vector<TensorMeta>{{unblocked_shape(in[0].shape()), in[0].dtype(), in[0].device()}};
  };
  d.vjp = [](const VjpContext& c) { return TensorList{block_channels(c.grads[0], c.input_meta[0].shape[4])}; };
  return d;
}());

LUCID_REGISTER_OP(MaxPool2dBlocked, "kernel_size:ints, stride:ints, padding:ints, dilation:ints, ceil_mode:bool", [] {
  OpDef d;
  d.num_inputs = 1;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) { return through_layout(OpId::MaxPool2d, "max_pool2d_blocked", in, a); };
  return d;
}());

LUCID_REGISTER_OP(AvgPool2dBlocked, "kernel_size:ints, stride:ints, padding:ints, ceil_mode:bool, count_include_pad:bool, divisor_override:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) { return through_layout(OpId::AvgPool2d, "avg_pool2d_blocked", in, a); };
  return d;
}());

LUCID_REGISTER_OP(AdaptiveAvgPool2dBlocked, "output_size:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    return through_layout(OpId::AdaptiveAvgPool2d, "adaptive_avg_pool2d_blocked", in, a);
  };
  return d;
}());

LUCID_REGISTER_OP(BatchNormBlocked, "eps:float, relu:bool?", [] {
  OpDef d;
  d.num_inputs = 5;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    return through_layout(OpId::BatchNorm, "batch_norm_blocked", in, eval_batch_norm_attrs(a.f("eps")));
  };
  return d;
}());

Tensor block_channels(const Tensor& x, int64_t block) { return dispatch1(OpId::BlockChannels, {x}, {{"block", block}}); }

Tensor unblock_channels(const Tensor& x) { return dispatch1(OpId::UnblockChannels, {x}); }

Tensor max_pool2d_blocked(const Tensor& x, IntList kernel, IntList stride, IntList padding, IntList dilation,
                          bool ceil_mode) {
  return dispatch1(OpId::MaxPool2dBlocked, {x}, {{"kernel_size", kernel}, {"stride", stride}, {"padding", padding},
                                                 {"dilation", dilation}, {"ceil_mode", ceil_mode}});
}

Tensor avg_pool2d_blocked(const Tensor& x, IntList kernel, IntList stride, IntList padding, bool ceil_mode,
                          bool count_include_pad, int64_t divisor_override) {
  return dispatch1(OpId::AvgPool2dBlocked, {x}, {{"kernel_size", kernel}, {"stride", stride}, {"padding", padding},
                                                 {"ceil_mode", ceil_mode}, {"count_include_pad", count_include_pad},
                                                 {"divisor_override", divisor_override}});
}

Tensor adaptive_avg_pool2d_blocked(const Tensor& x, IntList output_size) {
  return dispatch1(OpId::AdaptiveAvgPool2dBlocked, {x}, {{"output_size", output_size}});
}

Tensor batch_norm_blocked(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                          const Tensor& bias, double eps, bool relu) {
  return dispatch1(OpId::BatchNormBlocked, {x, running_mean, running_var, weight, bias}, {{"eps", eps}, {"relu", relu}});
}

}  // namespace lucid
