// 2-D pooling ops: their records (validation and output shapes, VJPs) and C++ API:
//   MaxPool2d(x) -> (values, indices)        indices index the flattened H*W plane (PyTorch's)
//   MaxPool2dBackward(g, indices)            scatter-add through the indices
//   MaxPool2dGather(g, indices)              gather through the indices (its adjoint)
//   AvgPool2d / AvgPool2dBackward            count_include_pad, ceil_mode, divisor_override
//   AdaptiveAvgPool2d / AdaptiveAvgPool2dBackward, AdaptiveMaxPool2d
// Each backward op is linear in its gradient input and its VJP is its forward partner, so
// pooling is differentiable to any order with ops only. Input is [N, C, H, W] or [C, H, W].
// The CPU kernels are in backends/cpu/kernels/pool.cpp.
#include "lucid/ops/core.h"
#include "lucid/ops/linalg.h"

namespace lucid {

namespace {

void check_pool_input(const char* op, const Tensor& x) {
  LUCID_CHECK(x.ndim() == 3 || x.ndim() == 4, ValueError, op, ": argument 'input' expected a 3-D (unbatched) or 4-D (batched) tensor, got ",
              x.ndim(), "-D ", shape_str(x.shape()));
  LUCID_CHECK(is_floating(x.dtype()), TypeError, op, ": argument 'input' expected a floating dtype, got ", dtype_name(x.dtype()));
  for (int64_t i = 1; i < x.ndim(); ++i)
    LUCID_CHECK(x.shape()[i] > 0, ValueError, op, ": argument 'input' expected non-zero sizes in non-batch dims, got ",
                shape_str(x.shape()));
}

void check_len2(const char* op, const char* arg, const IntList& v, int64_t min) {
  LUCID_CHECK(v.size() == 2, ValueError, op, ": argument '", arg, "' expected 2 values, got ", v.size());
  for (int64_t e : v)
    LUCID_CHECK(e >= min, ValueError, op, ": argument '", arg, "' expected values >= ", min, ", got ", shape_str(v));
}

// PyTorch's pooling_output_shape.
int64_t pool_out(const char* op, int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceil_mode) {
  LUCID_CHECK(pad <= k / 2, ValueError, op, ": argument 'padding' expected at most half of the kernel size (", k / 2,
              "), got ", pad);
  int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (o - 1) * s >= in + pad) --o;
  LUCID_CHECK(o >= 1, ValueError, op, ": output size is too small (computed ", o, " from input size ", in,
              ", kernel ", k, ", stride ", s, ", padding ", pad, ", dilation ", d, ")");
  return o;
}

Shape with_spatial(const Shape& in, int64_t oh, int64_t ow) {
  Shape s = in;
  s[s.size() - 2] = oh;
  s[s.size() - 1] = ow;
  return s;
}

// ---- max pooling ----
Shape max_pool_shape(const Tensor& x, const Attrs& a) {
  const char* op = "max_pool2d";
  check_pool_input(op, x);
  const IntList &k = a.ints("kernel_size"), &s = a.ints("stride"), &p = a.ints("padding"), &d = a.ints("dilation");
  check_len2(op, "kernel_size", k, 1);
  check_len2(op, "stride", s, 1);
  check_len2(op, "padding", p, 0);
  check_len2(op, "dilation", d, 1);
  bool cm = a.b("ceil_mode");
  int64_t nd = x.ndim();
  return with_spatial(x.shape(), pool_out(op, x.shape()[nd - 2], k[0], p[0], s[0], d[0], cm),
                      pool_out(op, x.shape()[nd - 1], k[1], p[1], s[1], d[1], cm));
}

// ---- average pooling ----
Shape avg_pool_shape(const Shape& xs, const Attrs& a) {
  const char* op = "avg_pool2d";
  const IntList &k = a.ints("kernel_size"), &s = a.ints("stride"), &p = a.ints("padding");
  check_len2(op, "kernel_size", k, 1);
  check_len2(op, "stride", s, 1);
  check_len2(op, "padding", p, 0);
  bool cm = a.b("ceil_mode");
  int64_t nd = static_cast<int64_t>(xs.size());
  return with_spatial(xs, pool_out(op, xs[nd - 2], k[0], p[0], s[0], 1, cm), pool_out(op, xs[nd - 1], k[1], p[1], s[1], 1, cm));
}

Attrs without(const Attrs& a, const std::string& key) {
  Attrs r;
  for (auto& [k, v] : a.items())
    if (k != key) r.set(k, v);
  return r;
}

void check_grad_input(const char* op, const Tensor& g, const Shape& expected) {
  LUCID_CHECK(g.shape() == expected, ValueError, op, ": argument 'grad_output' expected shape ", shape_str(expected),
              ", got ", shape_str(g.shape()));
  LUCID_CHECK(is_floating(g.dtype()), TypeError, op, ": argument 'grad_output' expected a floating dtype, got ",
              dtype_name(g.dtype()));
}

void check_indices(const char* op, const Tensor& idx, const Shape& expected) {
  LUCID_CHECK(idx.dtype() == DType::Int64, TypeError, op, ": argument 'indices' expected dtype int64, got ",
              dtype_name(idx.dtype()));
  LUCID_CHECK(idx.shape() == expected, ValueError, op, ": argument 'indices' expected shape ", shape_str(expected),
              ", got ", shape_str(idx.shape()));
}

}  // namespace

// ---- MaxPool2d and its backward pair ------------------------------------------------------
LUCID_REGISTER_OP(MaxPool2d, "kernel_size:ints, stride:ints, padding:ints, dilation:ints, ceil_mode:bool", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.unsaved_outputs = {0};  // the VJP reads the indices only (PyTorch saves input and indices)
  d.infer = [](const TensorList& in, const Attrs& a) {
    Shape s = max_pool_shape(in[0], a);
    return std::vector<TensorMeta>{{s, in[0].dtype()}, {s, DType::Int64}};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::MaxPool2dBackward, {c.grads[0], c.outputs[1]},
                                {{"input_shape", c.input_meta[0].shape}})};
  };
  return d;
}());

LUCID_REGISTER_OP(MaxPool2dBackward, "input_shape:ints", [] {
  OpDef d;
  d.num_inputs = 2;
  d.save = kSaveInputs;
  d.nondiff_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& xs = a.ints("input_shape");
    LUCID_CHECK(xs.size() == 3 || xs.size() == 4, ValueError, "max_pool2d_backward: attribute 'input_shape' expected 3 or 4 dims, got ",
                shape_str(xs));
    LUCID_CHECK(in[0].ndim() == static_cast<int64_t>(xs.size()), ValueError,
                "max_pool2d_backward: argument 'grad_output' expected ", xs.size(), " dims, got ", in[0].ndim());
    Shape lead(xs.begin(), xs.end() - 2), glead(in[0].shape().begin(), in[0].shape().end() - 2);
    LUCID_CHECK(lead == glead, ValueError, "max_pool2d_backward: argument 'grad_output' expected leading dims ",
                shape_str(lead), ", got ", shape_str(glead));
    check_grad_input("max_pool2d_backward", in[0], in[0].shape());
    check_indices("max_pool2d_backward", in[1], in[0].shape());
    return std::vector<TensorMeta>{{xs, in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::MaxPool2dGather, {c.grads[0], c.inputs[1]}), Tensor()};
  };
  return d;
}());

LUCID_REGISTER_OP(MaxPool2dGather, "", [] {
  OpDef d;
  d.num_inputs = 2;
  d.save = kSaveInputs;
  d.nondiff_inputs = {1};
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor &src = in[0], &idx = in[1];
    LUCID_CHECK(is_floating(src.dtype()), TypeError, "max_pool2d_gather: argument 'input' expected a floating dtype, got ",
                dtype_name(src.dtype()));
    LUCID_CHECK(src.ndim() == idx.ndim() && src.ndim() >= 2, ValueError,
                "max_pool2d_gather: argument 'indices' expected ", src.ndim(), " dims, got ", idx.ndim());
    Shape lead(src.shape().begin(), src.shape().end() - 2), ilead(idx.shape().begin(), idx.shape().end() - 2);
    LUCID_CHECK(lead == ilead, ValueError, "max_pool2d_gather: argument 'indices' expected leading dims ", shape_str(lead),
                ", got ", shape_str(ilead));
    check_indices("max_pool2d_gather", idx, idx.shape());
    return std::vector<TensorMeta>{{idx.shape(), src.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::MaxPool2dBackward, {c.grads[0], c.inputs[1]},
                                {{"input_shape", c.input_meta[0].shape}}), Tensor()};
  };
  return d;
}());

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntList kernel, IntList stride, IntList padding,
                                                  IntList dilation, bool ceil_mode) {
  TensorList r = dispatch(OpId::MaxPool2d, {x}, {{"kernel_size", kernel}, {"stride", stride}, {"padding", padding},
                                                 {"dilation", dilation}, {"ceil_mode", ceil_mode}});
  return {r[0], r[1]};
}

// ---- AvgPool2d ----------------------------------------------------------------------------
LUCID_REGISTER_OP(AvgPool2d, "kernel_size:ints, stride:ints, padding:ints, ceil_mode:bool, count_include_pad:bool, divisor_override:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_pool_input("avg_pool2d", in[0]);
    return std::vector<TensorMeta>{{avg_pool_shape(in[0].shape(), a), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    Attrs a = c.attrs;
    a.set("input_shape", c.input_meta[0].shape);
    return TensorList{dispatch1(OpId::AvgPool2dBackward, {c.grads[0]}, a)};
  };
  return d;
}());

LUCID_REGISTER_OP(AvgPool2dBackward, "kernel_size:ints, stride:ints, padding:ints, ceil_mode:bool, count_include_pad:bool, divisor_override:int, input_shape:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& xs = a.ints("input_shape");
    LUCID_CHECK(xs.size() == 3 || xs.size() == 4, ValueError, "avg_pool2d_backward: attribute 'input_shape' expected 3 or 4 dims, got ",
                shape_str(xs));
    check_grad_input("avg_pool2d_backward", in[0], avg_pool_shape(xs, a));
    return std::vector<TensorMeta>{{xs, in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::AvgPool2d, {c.grads[0]}, without(c.attrs, "input_shape"))};
  };
  return d;
}());

Tensor avg_pool2d(const Tensor& x, IntList kernel, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad, int64_t divisor_override) {
  return dispatch1(OpId::AvgPool2d, {x}, {{"kernel_size", kernel}, {"stride", stride}, {"padding", padding},
                                          {"ceil_mode", ceil_mode}, {"count_include_pad", count_include_pad},
                                          {"divisor_override", divisor_override}});
}

// ---- AdaptiveAvgPool2d --------------------------------------------------------------------
LUCID_REGISTER_OP(AdaptiveAvgPool2d, "output_size:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_pool_input("adaptive_avg_pool2d", in[0]);
    const IntList& o = a.ints("output_size");
    check_len2("adaptive_avg_pool2d", "output_size", o, 1);
    return std::vector<TensorMeta>{{with_spatial(in[0].shape(), o[0], o[1]), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::AdaptiveAvgPool2dBackward, {c.grads[0]}, {{"input_shape", c.input_meta[0].shape}})};
  };
  return d;
}());

LUCID_REGISTER_OP(AdaptiveAvgPool2dBackward, "input_shape:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& xs = a.ints("input_shape");
    LUCID_CHECK(xs.size() == 3 || xs.size() == 4, ValueError,
                "adaptive_avg_pool2d_backward: attribute 'input_shape' expected 3 or 4 dims, got ", shape_str(xs));
    LUCID_CHECK(in[0].ndim() == static_cast<int64_t>(xs.size()), ValueError,
                "adaptive_avg_pool2d_backward: argument 'grad_output' expected ", xs.size(), " dims, got ", in[0].ndim());
    const Shape& gs = in[0].shape();
    check_grad_input("adaptive_avg_pool2d_backward", in[0], with_spatial(xs, gs[gs.size() - 2], gs.back()));
    return std::vector<TensorMeta>{{xs, in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    // The forward partner maps the input-shaped gradient back to grad_output's spatial size.
    const Shape& out_meta = c.input_meta[0].shape;
    return TensorList{dispatch1(OpId::AdaptiveAvgPool2d, {c.grads[0]},
                                {{"output_size", IntList{out_meta[out_meta.size() - 2], out_meta.back()}}})};
  };
  return d;
}());

// ---- AdaptiveMaxPool2d --------------------------------------------------------------------
LUCID_REGISTER_OP(AdaptiveMaxPool2d, "output_size:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.unsaved_outputs = {0};  // the VJP reads the indices only
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_pool_input("adaptive_max_pool2d", in[0]);
    const IntList& o = a.ints("output_size");
    check_len2("adaptive_max_pool2d", "output_size", o, 1);
    Shape s = with_spatial(in[0].shape(), o[0], o[1]);
    return std::vector<TensorMeta>{{s, in[0].dtype()}, {s, DType::Int64}};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{dispatch1(OpId::MaxPool2dBackward, {c.grads[0], c.outputs[1]},
                                {{"input_shape", c.input_meta[0].shape}})};
  };
  return d;
}());

std::pair<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x, IntList output_size) {
  LUCID_CHECK(x.ndim() == 3 || x.ndim() == 4, ValueError,
              "adaptive_max_pool2d: argument 'input' expected a 3-D (unbatched) or 4-D (batched) tensor, got ", x.ndim(),
              "-D ", shape_str(x.shape()));
  LUCID_CHECK(output_size.size() == 2, ValueError, "adaptive_max_pool2d: argument 'output_size' expected 2 values, got ",
              output_size.size());
  for (int i = 0; i < 2; ++i)
    if (output_size[i] <= 0) output_size[i] = x.shape()[x.ndim() - 2 + i];
  TensorList r = dispatch(OpId::AdaptiveMaxPool2d, {x}, {{"output_size", output_size}});
  return {r[0], r[1]};
}

Tensor adaptive_avg_pool2d(const Tensor& x, IntList output_size) {
  LUCID_CHECK(x.ndim() == 3 || x.ndim() == 4, ValueError,
              "adaptive_avg_pool2d: argument 'input' expected a 3-D (unbatched) or 4-D (batched) tensor, got ", x.ndim(),
              "-D ", shape_str(x.shape()));
  LUCID_CHECK(output_size.size() == 2, ValueError, "adaptive_avg_pool2d: argument 'output_size' expected 2 values, got ",
              output_size.size());
  for (int i = 0; i < 2; ++i)
    if (output_size[i] <= 0) output_size[i] = x.shape()[x.ndim() - 2 + i];
  return dispatch1(OpId::AdaptiveAvgPool2d, {x}, {{"output_size", output_size}});
}

}  // namespace lucid
