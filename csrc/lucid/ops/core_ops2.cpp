// Core ops the VJPs of every family need: Sub, Div, Permute, Sum (with the row-reduction
// helpers the reduce family builds on).
#include <algorithm>

#include "lucid/ops/core.h"
#include "lucid/ops/reduce.h"
#include "lucid/ops/elementwise_util.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid {

LUCID_REGISTER_OP(Sub, "", [] {
  OpDef d = elementwise_op<OpId::Sub>();
  d.vjp = [](const VjpContext& c) { return TensorList{c.grads[0], c.needs_grad[1] ? neg(c.grads[0]) : Tensor()}; };
  return d;
}());

LUCID_REGISTER_OP(Div, "", [] {
  OpDef d = elementwise_op<OpId::Div>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    TensorList r(2);
    if (c.needs_grad[0]) r[0] = div(g, c.inputs[1]);
    if (c.needs_grad[1]) r[1] = neg(div(mul(g, c.inputs[0]), mul(c.inputs[1], c.inputs[1])));
    return r;
  };
  return d;
}());

Tensor sub(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Sub, {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Div, {a, b}); }

// ---- Permute ------------------------------------------------------------------------------
static IntList inverse_perm(const IntList& p) {
  IntList inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[p[i]] = static_cast<int64_t>(i);
  return inv;
}

LUCID_REGISTER_OP(Permute, "dims:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    const IntList& dims = a.ints("dims");
    LUCID_CHECK(static_cast<int64_t>(dims.size()) == x.ndim(), ValueError, "permute: argument 'dims' expected ",
                x.ndim(), " dims, got ", dims.size());
    Shape s(dims.size());
    Strides st(dims.size());
    std::vector<bool> seen(dims.size(), false);
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t dd = wrap_dim(dims[i], x.ndim(), "permute");
      LUCID_CHECK(!seen[dd], ValueError, "permute: argument 'dims' has dim ", dd, " more than once");
      seen[dd] = true;
      s[i] = x.shape()[dd];
      st[i] = x.strides()[dd];
    }
    return TensorList{Tensor::make_view(x, s, st, x.offset())};
  };
  d.vjp = [](const VjpContext& c) {
    IntList dims = c.attrs.ints("dims");
    int64_t n = static_cast<int64_t>(dims.size());
    for (auto& v : dims) v = v < 0 ? v + n : v;
    return TensorList{permute(c.grads[0], inverse_perm(dims))};
  };
  return d;
}());

Tensor permute(const Tensor& x, const IntList& dims) { return dispatch1(OpId::Permute, {x}, {{"dims", dims}}); }

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  int64_t n = x.ndim();
  if (n < 2 && x.ndim() <= 1) {
    wrap_dim(d0, n, "transpose");
    wrap_dim(d1, n, "transpose");
    return x;
  }
  d0 = wrap_dim(d0, n, "transpose");
  d1 = wrap_dim(d1, n, "transpose");
  IntList p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  std::swap(p[d0], p[d1]);
  return permute(x, p);
}

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

static void sum_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  reduce_sum_into(in[0], reduce_dims(a.ints("dims"), in[0].ndim(), "sum"), out[0]);
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
  d.cpu_kernel = sum_kernel;
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

}  // namespace lucid
