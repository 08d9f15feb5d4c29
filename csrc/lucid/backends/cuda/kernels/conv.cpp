// CUDA kernels of the convolution ops (records in ops/conv_ops.cpp), each one cuDNN convolution
// (backends/cuda/cudnn_conv_graph: cached cudnn-frontend graphs) plus the elementwise work cuDNN
// is not asked to do (kernels/conv_pointwise.cu):
//   Conv                forward, then the bias (as torch, which adds it after cudnn_convolution)
//   ConvFused           forward, then bias, activation and residual in one epilogue pass (cuDNN's
//                       fused pointwise nodes run only on some layouts and dtypes, and its ReLU is
//                       max(x, 0), which loses NaN: ops/fused_activation.h needs eager relu's NaN)
//   ConvBackwardInput   backward data
//   ConvBackwardWeight  backward filter
//   ConvTranspose       backward data of the convolution it transposes (x as dy, y as dx; the
//                       output's size carries output_padding), then the bias
// Tensors are [N, C, L] or [N, C, H, W]; 1-D convolutions run as 2-D with H = 1. Inputs are made
// contiguous (cuDNN takes NCHW strides; lucid's outputs are NCHW-contiguous). Asymmetric padding
// (padding='same' with an even kernel extent) is split as torch does: its symmetric part goes to
// cuDNN, the rest is explicit zero padding of the input (forward, backward filter) or a crop of
// the padded input gradient (backward data). Empty operands give zeros (or the bias) without a
// cuDNN call, as the CPU kernels. A batch of 2^31 or more activation elements runs in chunks of
// whole images (cuDNN's engines index in 32 bits).
#include <algorithm>
#include <array>

#include "lucid/backends/cuda/cudnn_conv_graph.h"
#include "lucid/backends/cuda/kernels/conv_pointwise.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/ops/fused_activation.h"
#include "lucid/ops/linalg_geometry.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

const char* conv_op_name(int64_t ndim, bool transposed) {
  if (transposed) return ndim == 3 ? "conv_transpose1d" : "conv_transpose2d";
  return ndim == 3 ? "conv1d" : "conv2d";
}

// [N, C, L] -> [N, C, 1, L]; [N, C, H, W] as is.
std::array<int64_t, 4> dims4(const Shape& s) {
  if (s.size() == 3) return {s[0], s[1], 1, s[2]};
  return {s[0], s[1], s[2], s[3]};
}

std::array<int64_t, 4> contiguous4(const std::array<int64_t, 4>& d) {
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

// A per-spatial-dim option lifted to 2-D: a 1-D convolution's H dim takes `one`.
std::array<int64_t, 2> lift(const IntList& v, int64_t one) {
  if (v.size() == 1) return {one, v[0]};
  return {v[0], v[1]};
}

// acc += t (same shape, contiguous), through the epilogue's residual add.
void add_into(const Tensor& acc, const Tensor& t) {
  conv_epilogue(acc.dtype(), acc.data_ptr(), nullptr, t.data_ptr(), 1, 1, acc.numel(), FusedActivation::None, false,
                current_stream(acc.device()));
}

// cuDNN's engines index with 32 bits, as torch assumes: a batch whose activations reach 2^31
// elements runs as chunks of whole images (a backward filter sums the chunks' gradients).
constexpr int64_t kMaxCudnnElems = (int64_t{1} << 31) - 1;

// x: the activation side, w: the filter, y: the output side (see cudnn_conv_graph.h), all
// NCHW-contiguous; o's padding symmetric.
void cudnn_conv(ConvDirection dir, const char* op, const Tensor& x, const Tensor& w, const Tensor& y,
                const ConvOptions& o) {
  ConvCall c;
  c.direction = dir;
  c.dtype = y.dtype();
  c.device = y.device();
  c.op = op;
  c.x_dim = dims4(x.shape());
  c.w_dim = dims4(w.shape());
  c.y_dim = dims4(y.shape());
  c.x_stride = contiguous4(c.x_dim);
  c.w_stride = contiguous4(c.w_dim);
  c.y_stride = contiguous4(c.y_dim);
  c.pad = lift(o.padding_l, 0);
  c.stride = lift(o.stride, 1);
  c.dilation = lift(o.dilation, 1);
  c.x = x.data_ptr();
  c.w = w.data_ptr();
  c.y = y.data_ptr();
  const int64_t N = c.x_dim[0], per_image = std::max(c.x_stride[0], c.y_stride[0]);
  if (N * per_image <= kMaxCudnnElems || N == 1) {
    run_cudnn_conv(c);
    return;
  }
  const int64_t chunk = std::max<int64_t>(1, kMaxCudnnElems / per_image);
  const size_t item = itemsize(y.dtype());
  Tensor part = dir == ConvDirection::BackwardFilter ? Tensor::empty(w.shape(), w.dtype(), w.device()) : Tensor();
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    ConvCall p = c;
    p.x_dim[0] = p.y_dim[0] = std::min(chunk, N - n0);
    p.x = static_cast<char*>(c.x) + n0 * c.x_stride[0] * item;
    p.y = static_cast<char*>(c.y) + n0 * c.y_stride[0] * item;
    if (part.defined() && n0 > 0) p.w = part.data_ptr();
    run_cudnn_conv(p);
    if (part.defined() && n0 > 0) add_into(w, part);
  }
}

void zero(const Tensor& t) {
  check_cuda(cudaMemsetAsync(t.data_ptr(), 0, static_cast<size_t>(t.numel()) * itemsize(t.dtype()),
                             current_stream(t.device())),
             "cudaMemsetAsync");
}

Tensor contig(const Tensor& t) { return t.defined() ? t.contiguous_data() : t; }

// The asymmetric part of o's padding as explicit zeros: the padded input's shape, where the
// input sits in it, and o with the symmetric rest.
struct ExplicitPad {
  Shape shape;
  int64_t top = 0, left = 0;
  ConvOptions conv;
};

ExplicitPad explicit_pad(const Shape& xs, const ConvOptions& o) {
  ExplicitPad e{xs, 0, 0, o};
  const size_t nsp = xs.size() - 2;
  for (size_t i = 0; i < nsp; ++i) {
    const int64_t lo = std::min(o.padding_l[i], o.padding_r[i]);
    e.shape[2 + i] += o.padding_l[i] + o.padding_r[i] - 2 * lo;
    e.conv.padding_l[i] = e.conv.padding_r[i] = lo;
    (i + 1 == nsp ? e.left : e.top) = o.padding_l[i] - lo;
  }
  return e;
}

// Planes [P, H, W] of an NC[H]W shape (H = 1 for 1-D).
struct Planes {
  int64_t P, H, W;
};
Planes planes(const Shape& s) { return {s[0] * s[1], s.size() == 4 ? s[2] : 1, s.back()}; }

Tensor pad_input(const Tensor& x, const ExplicitPad& e) {
  Tensor xp = Tensor::empty(e.shape, x.dtype(), x.device());
  const Planes a = planes(x.shape()), b = planes(e.shape);
  pad_planes(itemsize(x.dtype()), x.data_ptr(), xp.data_ptr(), a.P, a.H, a.W, b.H, b.W, e.top, e.left,
             current_stream(x.device()));
  return xp;
}

// y = conv(x, w) with o's padding (either symmetry); x, w contiguous.
void forward_into(const Tensor& x0, const Tensor& w, const ConvOptions& o0, const Tensor& y, const char* op) {
  if (x0.numel() == 0 || w.numel() == 0) {  // no input channels (or an all-padding input): zeros
    zero(y);
    return;
  }
  Tensor x = x0;
  ConvOptions o = o0;
  if (o.padding_l != o.padding_r) {
    ExplicitPad e = explicit_pad(x.shape(), o);
    x = pad_input(x, e);
    o = e.conv;
  }
  cudnn_conv(ConvDirection::Forward, op, x, w, y, o);
}

void add_bias(const Tensor& y, const Tensor& b) {
  if (!b.defined()) return;
  const Shape& s = y.shape();
  conv_epilogue(y.dtype(), y.data_ptr(), b.data_ptr(), nullptr, s[0], s[1], y.numel() / (s[0] * s[1]),
                FusedActivation::None, false, current_stream(y.device()));
}

void conv_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  DeviceGuard g(y.device());
  forward_into(contig(in[0]), contig(in[1]), ConvOptions::from(a), y, conv_op_name(y.ndim(), false));
  add_bias(y, contig(in[2]));
}

void conv_fused_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  // The channel-blocked layouts are the CPU layout pass's (ops/blocked_layout.h); no CUDA graph has them.
  LUCID_CHECK(!a.i("in_block", 0) && !a.i("out_block", 0), NotImplementedError,
              "conv_fused: channel-blocked layouts are not implemented on cuda");
  const Tensor& y = out[0];
  const FusedActivation act = fused_activation(a, "conv_fused");
  if (y.numel() == 0) return;
  DeviceGuard g(y.device());
  forward_into(contig(in[0]), contig(in[1]), ConvOptions::from(a), y, "conv_fused");
  const Tensor b = contig(in[2]), r = contig(in[3]);
  const Shape& s = y.shape();
  conv_epilogue(y.dtype(), y.data_ptr(), b.defined() ? b.data_ptr() : nullptr, r.defined() ? r.data_ptr() : nullptr,
                s[0], s[1], y.numel() / (s[0] * s[1]), act, a.b("residual_first", false), current_stream(y.device()));
}

void conv_backward_input_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& gx = out[0];
  if (gx.numel() == 0) return;
  DeviceGuard g(gx.device());
  const Tensor gy = contig(in[0]), w = contig(in[1]);
  if (gy.numel() == 0 || w.numel() == 0) {
    zero(gx);
    return;
  }
  const ConvOptions o = ConvOptions::from(a);
  const char* op = "conv_backward_input";
  if (o.padding_l == o.padding_r) {
    cudnn_conv(ConvDirection::BackwardData, op, gx, w, gy, o);
    return;
  }
  // The gradient of the explicitly padded input, then its window over the real input.
  const ExplicitPad e = explicit_pad(gx.shape(), o);
  Tensor gxp = Tensor::empty(e.shape, gx.dtype(), gx.device());
  cudnn_conv(ConvDirection::BackwardData, op, gxp, w, gy, e.conv);
  const Planes p = planes(gx.shape()), pp = planes(e.shape);
  crop_planes(itemsize(gx.dtype()), gxp.data_ptr(), gx.data_ptr(), p.P, p.H, p.W, pp.H, pp.W, e.top, e.left,
              current_stream(gx.device()));
}

void conv_backward_weight_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& gw = out[0];
  if (gw.numel() == 0) return;
  DeviceGuard g(gw.device());
  const Tensor gy = contig(in[0]);
  Tensor x = contig(in[1]);
  if (gy.numel() == 0 || x.numel() == 0) {
    zero(gw);
    return;
  }
  ConvOptions o = ConvOptions::from(a);
  if (o.padding_l != o.padding_r) {
    const ExplicitPad e = explicit_pad(x.shape(), o);
    x = pad_input(x, e);
    o = e.conv;
  }
  cudnn_conv(ConvDirection::BackwardFilter, "conv_backward_weight", x, gw, gy, o);
}

void conv_transpose_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  DeviceGuard g(y.device());
  const Tensor x = contig(in[0]), w = contig(in[1]);
  if (x.numel() == 0 || w.numel() == 0) {
    zero(y);
  } else {
    // The convolution it transposes maps y-space to x-space: its input is y, its output x.
    cudnn_conv(ConvDirection::BackwardData, conv_op_name(y.ndim(), true), y, w, x, transpose_as_conv(a));
  }
  add_bias(y, contig(in[2]));
}

}  // namespace

LUCID_REGISTER_KERNEL(Conv, CUDA, conv_kernel);
LUCID_REGISTER_KERNEL(ConvFused, CUDA, conv_fused_kernel);
LUCID_REGISTER_KERNEL(ConvBackwardInput, CUDA, conv_backward_input_kernel);
LUCID_REGISTER_KERNEL(ConvBackwardWeight, CUDA, conv_backward_weight_kernel);
LUCID_REGISTER_KERNEL(ConvTranspose, CUDA, conv_transpose_kernel);

}  // namespace lucid::cuda
