// AsStrided and AsStridedScatter: the two ops behind in-place writes through views with autograd.
// When `v = base[...]` is modified in place while autograd records, the base becomes
// as_strided_scatter(base, new_v) and v's history becomes as_strided(new base) (PyTorch's
// CopySlices). Geometry (shape, strides, offset) is relative to a contiguous base's first element.
// AsStridedScatter's kernel is ops/movement_plan.h's (every backend's, registered with its
// movement kernels).
#include "lucid/ops/core.h"
#include "lucid/ops/view_util.h"

namespace lucid {

static void check_geometry(const Tensor& base, const Attrs& a, const char* op) {
  const IntList& shape = a.ints("shape");
  const IntList& strides = a.ints("strides");
  int64_t off = a.i("offset");
  LUCID_CHECK(shape.size() == strides.size(), ValueError, op, ": argument 'stride' expected ", shape.size(),
              " values, got ", strides.size());
  LUCID_CHECK(base.is_contiguous(), ValueError, op, ": argument 'input' expected a contiguous tensor");
  for (size_t i = 0; i < shape.size(); ++i)
    LUCID_CHECK(shape[i] >= 0 && strides[i] >= 0, ValueError, op, ": negative sizes or strides are not supported");
  LUCID_CHECK(off >= 0, ValueError, op, ": argument 'storage_offset' expected a non-negative value, got ", off);
  const int64_t extent = storage_extent(shape, strides, off);  // raises on overflow
  LUCID_CHECK(extent <= std::max<int64_t>(base.numel(), 1), ValueError, op, ": geometry size=",
              shape_str(shape), " stride=", shape_str(strides), " offset=", off,
              " reaches outside the input's ", base.numel(), " elements");
}

LUCID_REGISTER_OP(AsStrided, "shape:ints, strides:ints, offset:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    check_geometry(in[0], a, "as_strided");
    return TensorList{strided_region(in[0], a)};
  };
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    Tensor zeros = full(c.input_meta[0].shape, 0.0, g.dtype());
    return TensorList{as_strided_scatter(zeros, g, c.attrs.ints("shape"), c.attrs.ints("strides"), c.attrs.i("offset"))};
  };
  return d;
}());

LUCID_REGISTER_OP(AsStridedScatter, "shape:ints, strides:ints, offset:int", [] {
  OpDef d;
  d.num_inputs = 2;
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_geometry(in[0], a, "as_strided_scatter");
    LUCID_CHECK(in[1].shape() == a.ints("shape"), ValueError, "as_strided_scatter: argument 'src' expected shape ",
                shape_str(a.ints("shape")), ", got ", shape_str(in[1].shape()));
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    Tensor g = c.grads[0];
    if (!g.is_contiguous()) g = cast(g, g.dtype());
    const IntList& shape = c.attrs.ints("shape");
    const IntList& strides = c.attrs.ints("strides");
    int64_t off = c.attrs.i("offset");
    TensorList r(2);
    if (c.needs_grad[0]) r[0] = as_strided_scatter(g, full(shape, 0.0, g.dtype()), shape, strides, off);
    if (c.needs_grad[1]) r[1] = cast(as_strided(g, shape, strides, off), g.dtype());
    return r;
  };
  return d;
}());

Tensor as_strided(const Tensor& base, const Shape& shape, const Strides& strides, int64_t offset) {
  return dispatch1(OpId::AsStrided, {base}, {{"shape", shape}, {"strides", strides}, {"offset", offset}});
}

Tensor as_strided_scatter(const Tensor& base, const Tensor& src, const Shape& shape, const Strides& strides,
                          int64_t offset) {
  return dispatch1(OpId::AsStridedScatter, {base, src}, {{"shape", shape}, {"strides", strides}, {"offset", offset}});
}

}  // namespace lucid
