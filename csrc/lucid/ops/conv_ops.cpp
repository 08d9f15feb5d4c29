// Convolution ops. Three ops carry every convolution derivative, so backward is traceable and
// differentiable to any order:
//   Conv(x, w, b)                  y  = conv(x, w) + b
//   ConvBackwardInput(gy, w)       gx = conv^T(gy, w)        (adjoint of Conv in x)
//   ConvBackwardWeight(gy, x)      gw = corr(gy, x)          (adjoint of Conv in w)
// and ConvTranspose(x, w, b) (oneDNN deconvolution) whose VJP is Conv + ConvBackwardWeight.
// This file holds their records (validation, VJPs) and the torch.nn.functional entry points; the
// CPU kernels are in backends/cpu/kernels/conv.cpp (oneDNN, backends/cpu/dnnl_conv). Validation
// names the Python op (conv1d/conv2d, conv_transpose1d/2d), the argument, what was expected and
// what was given.
#include "lucid/ops/blocked_layout.h"
#include "lucid/ops/core.h"
#include "lucid/ops/fused_activation.h"
#include "lucid/ops/linalg.h"
#include "lucid/ops/linalg_geometry.h"

namespace lucid {

Attrs ConvOptions::attrs() const {
  return Attrs{{"stride", stride}, {"padding_l", padding_l}, {"padding_r", padding_r}, {"dilation", dilation},
               {"groups", groups}};
}

ConvOptions ConvOptions::from(const Attrs& a) {
  ConvOptions o;
  o.stride = a.ints("stride");
  o.padding_l = a.ints("padding_l");
  o.padding_r = a.ints("padding_r");
  o.dilation = a.ints("dilation");
  o.groups = a.i("groups");
  return o;
}

namespace {

std::string conv_name(int64_t nsp, bool transposed = false) {
  return str(transposed ? "conv_transpose" : "conv", nsp, "d");
}

void check_list(const std::string& op, const char* arg, const IntList& v, int64_t nsp, int64_t min) {
  LUCID_CHECK(static_cast<int64_t>(v.size()) == nsp, ValueError, op, ": argument '", arg, "' expected ", nsp,
              " values, got ", v.size());
  for (int64_t e : v)
    LUCID_CHECK(e >= min, ValueError, op, ": argument '", arg, "' expected values >= ", min, ", got ", shape_str(v));
}

int64_t weight_nsp(const Tensor& w, const char* op) {
  LUCID_CHECK(w.ndim() == 3 || w.ndim() == 4, ValueError, op, ": argument 'weight' expected a 3-D (conv1d) or 4-D (conv2d) tensor, got ",
              w.ndim(), "-D ", shape_str(w.shape()));
  return w.ndim() - 2;
}

void check_float_dtypes(const std::string& op, const Tensor& x, const char* xn, const Tensor& w, const char* wn) {
  LUCID_CHECK(is_floating(x.dtype()), TypeError, op, ": argument '", xn, "' expected a floating dtype, got ",
              dtype_name(x.dtype()));
  LUCID_CHECK(w.dtype() == x.dtype(), TypeError, op, ": argument '", wn, "' expected dtype ", dtype_name(x.dtype()),
              " (the input's), got ", dtype_name(w.dtype()));
}

// Output spatial sizes of a convolution (validates everything on the way).
Shape conv_out_shape(const Tensor& x, const Tensor& w, const Tensor& b, const ConvOptions& o) {
  int64_t nsp = weight_nsp(w, "conv");
  std::string op = conv_name(nsp);
  LUCID_CHECK(x.ndim() == nsp + 2, ValueError, op, ": argument 'input' expected a ", nsp + 1, "-D (unbatched) or ",
              nsp + 2, "-D (batched) tensor, got ", x.ndim(), "-D ", shape_str(x.shape()));
  check_float_dtypes(op, x, "input", w, "weight");
  check_list(op, "stride", o.stride, nsp, 1);
  check_list(op, "dilation", o.dilation, nsp, 1);
  check_list(op, "padding", o.padding_l, nsp, 0);
  check_list(op, "padding", o.padding_r, nsp, 0);
  int64_t OC = w.shape()[0], C = x.shape()[1];
  LUCID_CHECK(o.groups >= 1, ValueError, op, ": argument 'groups' expected a positive int, got ", o.groups);
  LUCID_CHECK(OC % o.groups == 0, ValueError, op, ": argument 'groups' expected a divisor of out_channels ", OC,
              " (weight.shape[0]), got ", o.groups);
  LUCID_CHECK(C % o.groups == 0, ValueError, op, ": argument 'groups' expected a divisor of in_channels ", C,
              " (input.shape[1]), got ", o.groups);
  LUCID_CHECK(C == w.shape()[1] * o.groups, ValueError, op, ": argument 'input' expected ", w.shape()[1] * o.groups,
              " channels (weight.shape[1] * groups = ", w.shape()[1], " * ", o.groups, "), got ", C,
              " (input shape ", shape_str(x.shape()), ", weight shape ", shape_str(w.shape()), ")");
  if (b.defined()) {
    check_float_dtypes(op, x, "input", b, "bias");
    LUCID_CHECK(b.ndim() == 1 && b.shape()[0] == OC, ValueError, op, ": argument 'bias' expected shape [", OC,
                "], got ", shape_str(b.shape()));
  }
  Shape out{x.shape()[0], OC};
  for (int64_t i = 0; i < nsp; ++i) {
    int64_t in = x.shape()[2 + i] + o.padding_l[i] + o.padding_r[i];
    int64_t ext = o.dilation[i] * (w.shape()[2 + i] - 1) + 1;
    LUCID_CHECK(in >= ext, ValueError, op, ": padded input size ", in, " in spatial dim ", i,
                " is smaller than the effective kernel size ", ext, " (input shape ", shape_str(x.shape()),
                ", weight shape ", shape_str(w.shape()), ")");
    out.push_back((in - ext) / o.stride[i] + 1);
  }
  return out;
}

int64_t channel_dims_sum_dims(int64_t ndim, IntList& dims) {
  dims = {0};
  for (int64_t i = 2; i < ndim; ++i) dims.push_back(i);
  return static_cast<int64_t>(dims.size());
}

Tensor bias_grad(const Tensor& g) {
  IntList dims;
  channel_dims_sum_dims(g.ndim(), dims);
  return sum(g, dims);
}

}  // namespace

// ---- Conv ---------------------------------------------------------------------------------
LUCID_REGISTER_OP(Conv, "stride:ints, padding_l:ints, padding_r:ints, dilation:ints, groups:int", [] {
  OpDef d;
  d.num_inputs = 3;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    return std::vector<TensorMeta>{{conv_out_shape(in[0], in[1], in[2], ConvOptions::from(a)), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    ConvOptions o = ConvOptions::from(c.attrs);
    const Tensor &x = c.inputs[0], &w = c.inputs[1], &g = c.grads[0];
    TensorList r(3);
    if (c.needs_grad[0]) r[0] = conv_backward_input(g, w, x.shape(), o);
    if (c.needs_grad[1]) r[1] = conv_backward_weight(g, x, w.shape(), o);
    if (c.needs_grad[2]) r[2] = bias_grad(g);
    return r;
  };
  return d;
}());

Tensor convolution(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvOptions& o) {
  return dispatch1(OpId::Conv, {x, w, bias}, o.attrs());
}

// ---- ConvFused: conv + bias + activation + residual in one oneDNN call ----------------------
// out = act(conv(x, w) + b) + residual, or act(conv(x, w) + b + residual) when residual_first.
// The compiler emits it after autodiff (like LinearFused), so it is not differentiable.
// in_block / out_block (the CPU layout pass, ops/blocked_layout.h): the input, and the output
// with its residual, are 2-D activations in the channel-blocked layout [N, C/b, H, W, b] with
// that block (0 or absent: NCHW); float32 and bfloat16 only.
LUCID_REGISTER_OP(ConvFused, "stride:ints, padding_l:ints, padding_r:ints, dilation:ints, groups:int, activation:str, residual_first:bool?, in_block:int?, out_block:int?", [] {
  OpDef d;
  d.num_inputs = 4;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const int64_t ib = a.i("in_block", 0), ob = a.i("out_block", 0);
    Tensor x = in[0];
    if (ib || ob) {
      LUCID_CHECK(ib >= 0 && ob >= 0 && in[1].ndim() == 4, ValueError,
                  "conv_fused: channel-blocked layouts expected a 2-D convolution and blocks >= 0, got in_block=", ib,
                  ", out_block=", ob, ", weight shape ", shape_str(in[1].shape()));
      LUCID_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::BFloat16, TypeError,
                  "conv_fused: channel-blocked layouts expected float32 or bfloat16, got ", dtype_name(x.dtype()));
    }
    if (ib) {
      LUCID_CHECK(x.ndim() == 5 && x.shape()[4] == ib, ValueError, "conv_fused: argument 'input' expected a blocked tensor [N, C/",
                  ib, ", H, W, ", ib, "], got shape ", shape_str(x.shape()));
      x = Tensor::make_view(x, unblocked_shape(x.shape()), Strides(4, 0), 0);  // shape carrier
    }
    Shape out = conv_out_shape(x, in[1], in[2], ConvOptions::from(a));
    if (ob) {
      LUCID_CHECK(out[1] % ob == 0, ValueError, "conv_fused: attribute 'out_block' expected a divisor of the ", out[1],
                  " output channels, got ", ob);
      out = blocked_shape(out, ob);
    }
    fused_activation(a, "conv_fused");  // validates the name
    if (in[3].defined()) {
      check_float_dtypes("conv_fused", in[0], "input", in[3], "residual");
      LUCID_CHECK(in[3].shape() == out, ValueError, "conv_fused: argument 'residual' expected shape ", shape_str(out),
                  ", got ", shape_str(in[3].shape()));
    }
    return std::vector<TensorMeta>{{out, in[0].dtype()}};
  };
  return d;
}());

Tensor conv_fused(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual, const ConvOptions& o,
                  const std::string& activation, bool residual_first) {
  Attrs a = o.attrs();
  a.set("activation", activation).set("residual_first", residual_first);
  return dispatch1(OpId::ConvFused, {x, w, bias, residual}, a);
}

// ---- ConvBackwardInput --------------------------------------------------------------------
LUCID_REGISTER_OP(ConvBackwardInput, "stride:ints, padding_l:ints, padding_r:ints, dilation:ints, groups:int, input_shape:ints", [] {
  OpDef d;
  d.num_inputs = 2;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor &gy = in[0], &w = in[1];
    int64_t nsp = weight_nsp(w, "conv_backward_input");
    LUCID_CHECK(gy.ndim() == nsp + 2, ValueError, "conv_backward_input: argument 'grad_output' expected ", nsp + 2,
                "-D, got ", gy.ndim(), "-D");
    check_float_dtypes("conv_backward_input", gy, "grad_output", w, "weight");
    const Shape& xs = a.ints("input_shape");
    LUCID_CHECK(static_cast<int64_t>(xs.size()) == nsp + 2, ValueError,
                "conv_backward_input: attribute 'input_shape' expected ", nsp + 2, " dims, got ", shape_str(xs));
    // The forward geometry must reproduce grad_output's shape.
    Tensor xm = Tensor::make_view(gy, xs, Strides(xs.size(), 0), 0);  // shape carrier only
    Shape ys = conv_out_shape(xm, w, Tensor(), ConvOptions::from(a));
    LUCID_CHECK(ys == gy.shape(), ValueError, "conv_backward_input: argument 'grad_output' expected shape ",
                shape_str(ys), ", got ", shape_str(gy.shape()));
    return std::vector<TensorMeta>{{xs, gy.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    ConvOptions o = ConvOptions::from(c.attrs);
    const Tensor &gy = c.inputs[0], &w = c.inputs[1], &gg = c.grads[0];
    TensorList r(2);
    if (c.needs_grad[0]) r[0] = convolution(gg, w, Tensor(), o);
    if (c.needs_grad[1]) r[1] = conv_backward_weight(gy, gg, w.shape(), o);
    return r;
  };
  return d;
}());

Tensor conv_backward_input(const Tensor& grad_out, const Tensor& w, const Shape& input_shape, const ConvOptions& o) {
  Attrs a = o.attrs();
  a.set("input_shape", input_shape);
  return dispatch1(OpId::ConvBackwardInput, {grad_out, w}, a);
}

// ---- ConvBackwardWeight -------------------------------------------------------------------
LUCID_REGISTER_OP(ConvBackwardWeight, "stride:ints, padding_l:ints, padding_r:ints, dilation:ints, groups:int, weight_shape:ints", [] {
  OpDef d;
  d.num_inputs = 2;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor &gy = in[0], &x = in[1];
    const Shape& ws = a.ints("weight_shape");
    LUCID_CHECK(ws.size() == 3 || ws.size() == 4, ValueError,
                "conv_backward_weight: attribute 'weight_shape' expected 3 or 4 dims, got ", shape_str(ws));
    check_float_dtypes("conv_backward_weight", gy, "grad_output", x, "input");
    Tensor wm = Tensor::make_view(x, ws, Strides(ws.size(), 0), 0);  // shape carrier only
    Shape ys = conv_out_shape(x, wm, Tensor(), ConvOptions::from(a));
    LUCID_CHECK(ys == gy.shape(), ValueError, "conv_backward_weight: argument 'grad_output' expected shape ",
                shape_str(ys), ", got ", shape_str(gy.shape()));
    return std::vector<TensorMeta>{{ws, gy.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    ConvOptions o = ConvOptions::from(c.attrs);
    const Tensor &gy = c.inputs[0], &x = c.inputs[1], &gg = c.grads[0];
    TensorList r(2);
    if (c.needs_grad[0]) r[0] = convolution(x, gg, Tensor(), o);
    if (c.needs_grad[1]) r[1] = conv_backward_input(gy, gg, x.shape(), o);
    return r;
  };
  return d;
}());

Tensor conv_backward_weight(const Tensor& grad_out, const Tensor& x, const Shape& weight_shape, const ConvOptions& o) {
  Attrs a = o.attrs();
  a.set("weight_shape", weight_shape);
  return dispatch1(OpId::ConvBackwardWeight, {grad_out, x}, a);
}

// ---- ConvTranspose ------------------------------------------------------------------------
ConvOptions transpose_as_conv(const Attrs& a) {
  ConvOptions o;
  o.stride = a.ints("stride");
  o.padding_l = a.ints("padding");
  o.padding_r = a.ints("padding");
  o.dilation = a.ints("dilation");
  o.groups = a.i("groups");
  return o;
}

namespace {

Shape conv_transpose_out_shape(const Tensor& x, const Tensor& w, const Tensor& b, const Attrs& a) {
  int64_t nsp = weight_nsp(w, "conv_transpose");
  std::string op = conv_name(nsp, true);
  LUCID_CHECK(x.ndim() == nsp + 2, ValueError, op, ": argument 'input' expected a ", nsp + 1, "-D (unbatched) or ",
              nsp + 2, "-D (batched) tensor, got ", x.ndim(), "-D ", shape_str(x.shape()));
  check_float_dtypes(op, x, "input", w, "weight");
  const IntList &s = a.ints("stride"), &p = a.ints("padding"), &op_ = a.ints("output_padding"), &dl = a.ints("dilation");
  check_list(op, "stride", s, nsp, 1);
  check_list(op, "padding", p, nsp, 0);
  check_list(op, "output_padding", op_, nsp, 0);
  check_list(op, "dilation", dl, nsp, 1);
  int64_t G = a.i("groups"), C = x.shape()[1];
  LUCID_CHECK(G >= 1, ValueError, op, ": argument 'groups' expected a positive int, got ", G);
  LUCID_CHECK(C == w.shape()[0], ValueError, op, ": argument 'input' expected ", w.shape()[0],
              " channels (weight.shape[0]), got ", C, " (input shape ", shape_str(x.shape()), ", weight shape ",
              shape_str(w.shape()), ")");
  LUCID_CHECK(C % G == 0, ValueError, op, ": argument 'groups' expected a divisor of in_channels ", C, ", got ", G);
  int64_t OC = w.shape()[1] * G;
  if (b.defined()) {
    check_float_dtypes(op, x, "input", b, "bias");
    LUCID_CHECK(b.ndim() == 1 && b.shape()[0] == OC, ValueError, op, ": argument 'bias' expected shape [", OC, "], got ",
                shape_str(b.shape()));
  }
  Shape out{x.shape()[0], OC};
  for (int64_t i = 0; i < nsp; ++i) {
    LUCID_CHECK(op_[i] < s[i], ValueError, op, ": argument 'output_padding' expected values smaller than stride ",
                shape_str(s), ", got ", shape_str(op_));
    int64_t o = (x.shape()[2 + i] - 1) * s[i] - 2 * p[i] + dl[i] * (w.shape()[2 + i] - 1) + op_[i] + 1;
    LUCID_CHECK(o >= 0, ValueError, op, ": output size in spatial dim ", i, " would be ", o,
                " (input shape ", shape_str(x.shape()), ", weight shape ", shape_str(w.shape()), ")");
    out.push_back(o);
  }
  return out;
}

}  // namespace

LUCID_REGISTER_OP(ConvTranspose, "stride:ints, padding:ints, output_padding:ints, dilation:ints, groups:int", [] {
  OpDef d;
  d.num_inputs = 3;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    return std::vector<TensorMeta>{{conv_transpose_out_shape(in[0], in[1], in[2], a), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    ConvOptions o = transpose_as_conv(c.attrs);
    const Tensor &x = c.inputs[0], &w = c.inputs[1], &g = c.grads[0];
    TensorList r(3);
    if (g.numel() == 0) {  // empty output: every gradient is zero
      for (int i = 0; i < 3; ++i)
        if (c.needs_grad[i]) r[i] = full(c.input_meta[i].shape, 0.0, c.input_meta[i].dtype);
      return r;
    }
    if (c.needs_grad[0]) r[0] = convolution(g, w, Tensor(), o);
    if (c.needs_grad[1]) r[1] = conv_backward_weight(x, g, w.shape(), o);
    if (c.needs_grad[2]) r[2] = bias_grad(g);
    return r;
  };
  return d;
}());

// ---- torch.nn.functional entry points -----------------------------------------------------
namespace {

// Unbatched input [C, spatial...]: run batched with N = 1.
template <class F>
Tensor maybe_unbatched(int nsp, const Tensor& x, const std::string& op, F f) {
  if (x.ndim() == nsp + 1) {
    Shape s = x.shape();
    s.insert(s.begin(), 1);
    Tensor y = f(reshape(x, s));
    Shape ys(y.shape().begin() + 1, y.shape().end());
    return reshape(y, ys);
  }
  LUCID_CHECK(x.ndim() == nsp + 2, ValueError, op, ": argument 'input' expected a ", nsp + 1, "-D (unbatched) or ",
              nsp + 2, "-D (batched) tensor, got ", x.ndim(), "-D ", shape_str(x.shape()));
  return f(x);
}

}  // namespace

Tensor conv_nd(int nsp, const Tensor& x, const Tensor& w, const Tensor& bias, IntList stride, IntList padding,
               const std::string& padding_mode, IntList dilation, int64_t groups) {
  std::string op = conv_name(nsp);
  LUCID_CHECK(w.ndim() == nsp + 2, ValueError, op, ": argument 'weight' expected a ", nsp + 2,
              "-D tensor [out_channels, in_channels/groups, kernel...], got ", w.ndim(), "-D ", shape_str(w.shape()));
  ConvOptions o;
  o.stride = stride;
  o.dilation = dilation;
  o.groups = groups;
  if (padding_mode == "same") {
    for (int64_t s : stride)
      LUCID_CHECK(s == 1, ValueError, op, ": argument 'padding' 'same' is not supported for strided convolutions (stride ",
                  shape_str(stride), ")");
    for (int i = 0; i < nsp; ++i) {
      int64_t total = dilation[i] * (w.shape()[2 + i] - 1);
      o.padding_l.push_back(total / 2);
      o.padding_r.push_back(total - total / 2);
    }
  } else if (padding_mode == "valid") {
    o.padding_l = o.padding_r = IntList(nsp, 0);
  } else {
    o.padding_l = o.padding_r = padding;
  }
  return maybe_unbatched(nsp, x, op, [&](const Tensor& xb) { return convolution(xb, w, bias, o); });
}

Tensor conv_transpose_nd(int nsp, const Tensor& x, const Tensor& w, const Tensor& bias, IntList stride, IntList padding,
                         IntList output_padding, int64_t groups, IntList dilation) {
  std::string op = conv_name(nsp, true);
  LUCID_CHECK(w.ndim() == nsp + 2, ValueError, op, ": argument 'weight' expected a ", nsp + 2,
              "-D tensor [in_channels, out_channels/groups, kernel...], got ", w.ndim(), "-D ", shape_str(w.shape()));
  Attrs a{{"stride", stride}, {"padding", padding}, {"output_padding", output_padding}, {"dilation", dilation},
          {"groups", groups}};
  return maybe_unbatched(nsp, x, op, [&](const Tensor& xb) { return dispatch1(OpId::ConvTranspose, {xb, w, bias}, a); });
}

}  // namespace lucid
