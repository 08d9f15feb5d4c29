// Im2Col and Col2Im ops, torch.nn.functional.unfold / fold. Each is the other's
// adjoint, so each VJP is the other op and both are differentiable to any order.
//   Im2Col (F.unfold): [N, C, H, W] -> [N, C*kh*kw, L]      (L = number of sliding-window positions)
//   Col2Im (F.fold):   [N, C*kh*kw, L] -> [N, C, H, W]      (overlapping windows are summed)
// Unbatched inputs ([C, H, W] / [C*kh*kw, L]) work as in PyTorch. Floating dtypes only. The CPU
// kernels (the im2col / col2im loops) are in backends/cpu/kernels/fold.cpp.
#include "lucid/ops/core.h"
#include "lucid/ops/linalg.h"
#include "lucid/ops/linalg_geometry.h"

namespace lucid {

namespace {

void check2(const char* op, const char* arg, const IntList& v, int64_t min) {
  LUCID_CHECK(v.size() == 2, ValueError, op, ": argument '", arg, "' expected 2 values, got ", v.size());
  for (int64_t e : v)
    LUCID_CHECK(e >= min, ValueError, op, ": argument '", arg, "' expected values >= ", min, ", got ", shape_str(v));
}

void check_float(const char* op, const Tensor& x) {
  LUCID_CHECK(is_floating(x.dtype()), TypeError, op, ": argument 'input' expected a floating dtype, got ",
              dtype_name(x.dtype()));
}

}  // namespace

// Window geometry over an H x W image; validates the attributes.
FoldGeo fold_geo(const char* op, int64_t C, int64_t H, int64_t W, const Attrs& a) {
  const IntList &k = a.ints("kernel_size"), &d = a.ints("dilation"), &p = a.ints("padding"), &s = a.ints("stride");
  check2(op, "kernel_size", k, 1);
  check2(op, "dilation", d, 1);
  check2(op, "padding", p, 0);
  check2(op, "stride", s, 1);
  FoldGeo g{C, H, W, k[0], k[1], 0, 0, s[0], s[1], d[0], d[1], p[0], p[1]};
  g.OH = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) / s[0] + 1;
  g.OW = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) / s[1] + 1;
  LUCID_CHECK(H + 2 * p[0] >= d[0] * (k[0] - 1) + 1 && W + 2 * p[1] >= d[1] * (k[1] - 1) + 1 && g.OH > 0 && g.OW > 0,
              ValueError, op, ": the sliding blocks would be empty for a ", H, "x", W, " input with kernel_size ",
              shape_str(k), ", dilation ", shape_str(d), ", padding ", shape_str(p), " and stride ", shape_str(s));
  return g;
}

LUCID_REGISTER_OP(Im2Col, "kernel_size:ints, dilation:ints, padding:ints, stride:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    LUCID_CHECK(x.ndim() == 3 || x.ndim() == 4, ValueError,
                "unfold: argument 'input' expected a 3-D (unbatched) or 4-D (batched) tensor, got ", x.ndim(), "-D ",
                shape_str(x.shape()));
    check_float("unfold", x);
    int64_t nd = x.ndim();
    FoldGeo g = fold_geo("unfold", x.shape()[nd - 3], x.shape()[nd - 2], x.shape()[nd - 1], a);
    Shape s(x.shape().begin(), x.shape().end() - 3);
    s.push_back(g.C * g.KH * g.KW);
    s.push_back(g.OH * g.OW);
    return std::vector<TensorMeta>{{s, x.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    const Shape& xs = c.input_meta[0].shape;
    Attrs a = c.attrs;
    a.set("output_size", IntList{xs[xs.size() - 2], xs.back()});
    return TensorList{dispatch1(OpId::Col2Im, {c.grads[0]}, a)};
  };
  return d;
}());

LUCID_REGISTER_OP(Col2Im, "output_size:ints, kernel_size:ints, dilation:ints, padding:ints, stride:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    LUCID_CHECK(x.ndim() == 2 || x.ndim() == 3, ValueError,
                "fold: argument 'input' expected a 2-D (unbatched) or 3-D (batched) tensor, got ", x.ndim(), "-D ",
                shape_str(x.shape()));
    check_float("fold", x);
    const IntList& os = a.ints("output_size");
    check2("fold", "output_size", os, 1);
    const IntList& k = a.ints("kernel_size");
    check2("fold", "kernel_size", k, 1);
    int64_t nd = x.ndim(), CK = x.shape()[nd - 2], KK = k[0] * k[1];
    LUCID_CHECK(CK % KK == 0, ValueError, "fold: argument 'input' expected its size ", CK, " in dim ", nd - 2,
                " to be divisible by the product of kernel_size ", KK);
    FoldGeo g = fold_geo("fold", CK / KK, os[0], os[1], a);
    LUCID_CHECK(x.shape()[nd - 1] == g.OH * g.OW, ValueError, "fold: argument 'input' expected ", g.OH * g.OW,
                " sliding blocks in its last dim (output_size ", shape_str(os), "), got ", x.shape()[nd - 1]);
    Shape s(x.shape().begin(), x.shape().end() - 2);
    s.push_back(g.C);
    s.push_back(os[0]);
    s.push_back(os[1]);
    return std::vector<TensorMeta>{{s, x.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    Attrs a;
    for (auto& [k, v] : c.attrs.items())
      if (k != "output_size") a.set(k, v);
    return TensorList{dispatch1(OpId::Im2Col, {c.grads[0]}, a)};
  };
  return d;
}());

Tensor unfold(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding, IntList stride) {
  return dispatch1(OpId::Im2Col, {x}, {{"kernel_size", kernel_size}, {"dilation", dilation}, {"padding", padding},
                                       {"stride", stride}});
}

Tensor fold(const Tensor& x, IntList output_size, IntList kernel_size, IntList dilation, IntList padding, IntList stride) {
  return dispatch1(OpId::Col2Im, {x}, {{"output_size", output_size}, {"kernel_size", kernel_size}, {"dilation", dilation},
                                     {"padding", padding}, {"stride", stride}});
}

}  // namespace lucid
