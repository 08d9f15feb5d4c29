// The core reductions every family's VJPs need: Sum, and SumTo (reduces a broadcast gradient to
// its input's shape), with the dim helpers the reduce family builds on (reduce_dims,
// reduced_shape, reduction_rows). The CPU kernels of Sum and SumTo are in
// backends/cpu/kernels/core.cpp (over the reduce family's row-reduction driver).
#include <algorithm>

#include "lucid/ops/core.h"

namespace lucid {

// ---- Sum ----------------------------------------------------------------------------------
IntList reduce_dims(const IntList& dims, int64_t ndim, const char* op) {
  IntList out;
  if (dims.empty()) {
    for (int64_t i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;
    LUCID_CHECK(std::find(out.begin(), out.end(), w) == out.end(), ValueError, op, ": dim ", w,
                " appears multiple times in the list of dims");
    out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape reduced_shape(const Shape& s, const IntList& dims, bool keepdim) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    bool r = std::find(dims.begin(), dims.end(), i) != dims.end();
    if (!r) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

Tensor reduction_rows(const Tensor& x, const IntList& dims, int64_t& outer, int64_t& inner) {
  IntList perm;
  inner = 1;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) perm.push_back(i);
  for (int64_t d : dims) { perm.push_back(d); inner *= x.shape()[d]; }
  outer = inner == 0 ? numel_of(reduced_shape(x.shape(), dims, false)) : x.numel() / inner;
  Shape ps(perm.size());
  Strides pst(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) { ps[i] = x.shape()[perm[i]]; pst[i] = x.strides()[perm[i]]; }
  return Tensor::make_view(x, ps, pst, x.offset()).contiguous_data();
}

LUCID_REGISTER_OP(Sum, "dims:ints, keepdim:bool, dtype:dtype?", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    IntList dims = reduce_dims(a.ints("dims"), x.ndim(), "sum");
    DType t = a.has("dtype") ? a.dtype("dtype") : (is_integral(x.dtype(), true) ? DType::Int64 : x.dtype());
    return std::vector<TensorMeta>{{reduced_shape(x.shape(), dims, a.b("keepdim")), t}};
  };
  d.vjp = [](const VjpContext& c) {
    const Shape& s = c.input_meta[0].shape;
    IntList dims = reduce_dims(c.attrs.ints("dims"), static_cast<int64_t>(s.size()), "sum");
    Tensor g = c.grads[0];
    if (!c.attrs.b("keepdim")) g = reshape(g, reduced_shape(s, dims, true));
    return TensorList{expand(g, s)};
  };
  return d;
}());

Tensor sum(const Tensor& x, const IntList& dims, bool keepdim) {
  return dispatch1(OpId::Sum, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}

// ---- SumTo --------------------------------------------------------------------------------
LUCID_REGISTER_OP(SumTo, "shape:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& s = a.ints("shape");
    // s must broadcast to the input's shape.
    Shape b = broadcast_shapes(s, in[0].shape(), "sum_to");
    LUCID_CHECK(b == in[0].shape(), ValueError, "sum_to: shape ", shape_str(s), " does not broadcast to ",
                shape_str(in[0].shape()));
    return std::vector<TensorMeta>{{s, in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) { return TensorList{expand(c.grads[0], c.input_meta[0].shape)}; };
  return d;
}());

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return dispatch1(OpId::SumTo, {x}, {{"shape", shape}});
}

}  // namespace lucid
