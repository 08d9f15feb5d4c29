// Indexing ops: Gather, ScatterAdd, Scatter (torch.gather / scatter_add / scatter along a dim)
// and IndexGather / IndexPut, the two ops behind advanced indexing (x[idx], x[mask], x[i, :, j]
// and x[...] = v). IndexGather/IndexPut take integer index tensors for a sorted list of dims;
// they broadcast together, and the indexed dims land where PyTorch puts them (in place when the
// dims are adjacent, first otherwise; ops/index_layout.h). Records and C++ API (also the
// composites index_select, take_along_dim, index_add, take, masked_select, and nonzero, which
// reads the mask on the host); kernels: backends/<device>/kernels/index.*.
#include <algorithm>

#include "lucid/compile/trace/trace_hook.h"
#include "lucid/ops/index_layout.h"
#include "lucid/ops/movement.h"
#include "lucid/ops/movement_util.h"

namespace lucid {

static void check_index_dtype(const Tensor& t, const char* op) {
  LUCID_CHECK(t.dtype() == DType::Int64 || t.dtype() == DType::Int32, TypeError, op,
              ": index tensors must be int64 or int32, got ", dtype_name(t.dtype()));
}

static std::vector<int> index_inputs(int first) {
  std::vector<int> v;
  for (int i = first; i < first + 64; ++i) v.push_back(i);
  return v;
}

static Tensor gather_to_src(const Tensor& g, int64_t dim, const Tensor& index, const Shape& src_shape);

// ---- Gather / Scatter ---------------------------------------------------------------------
Tensor as_1d_if_scalar(const Tensor& t) {
  return t.ndim() == 0 ? Tensor::make_view(t, {1}, {1}, t.offset()) : t;
}

static void check_dim_index(const Tensor& x, const Tensor& index, const Tensor* src, int64_t dim, const char* op) {
  check_index_dtype(index, op);
  int64_t nd = std::max<int64_t>(x.ndim(), 1);
  LUCID_CHECK(std::max<int64_t>(index.ndim(), 1) == nd, ValueError, op,
              ": index tensor must have the same number of dimensions as the input tensor (", x.ndim(), "), got ",
              index.ndim());
  Tensor x1 = as_1d_if_scalar(x), i1 = as_1d_if_scalar(index);
  for (int64_t d = 0; d < nd; ++d) {
    LUCID_CHECK(d == dim || i1.shape()[d] <= x1.shape()[d], ValueError, op, ": size ", i1.shape()[d],
                " of index in dimension ", d, " exceeds size ", x1.shape()[d], " of the input");
    if (src) {
      Tensor s1 = as_1d_if_scalar(*src);
      LUCID_CHECK(s1.ndim() == nd, ValueError, op, ": src must have the same number of dimensions as the input (",
                  nd, "), got ", src->ndim());
      LUCID_CHECK(i1.shape()[d] <= s1.shape()[d], ValueError, op, ": size ", i1.shape()[d],
                  " of index in dimension ", d, " exceeds size ", s1.shape()[d], " of src");
    }
  }
}

LUCID_REGISTER_OP(Gather, "dim:int", [] {
  OpDef d;
  d.num_inputs = 2;
  d.nondiff_inputs = {1};
  d.save = kSaveInputs;
  d.unsaved_inputs = {0};  // backward reads only the index
  d.infer = [](const TensorList& in, const Attrs& a) {
    int64_t dim = wrap_dim(a.i("dim"), in[0].ndim(), "gather");
    check_dim_index(in[0], in[1], nullptr, dim, "gather");
    return std::vector<TensorMeta>{{in[1].shape(), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    const TensorMeta& m = c.input_meta[0];
    Tensor zero = expand(full({}, 0.0, c.grads[0].dtype()), m.shape);  // filled once, by the kernel
    return TensorList{scatter_add(zero, c.attrs.i("dim"), c.inputs[1], c.grads[0]), Tensor()};
  };
  return d;
}());

static std::vector<TensorMeta> infer_scatter(const TensorList& in, const Attrs& a, const char* op) {
  int64_t dim = wrap_dim(a.i("dim"), in[0].ndim(), op);
  check_dim_index(in[0], in[1], &in[2], dim, op);
  LUCID_CHECK(in[0].dtype() == in[2].dtype(), TypeError, op, ": expected self.dtype (", dtype_name(in[0].dtype()),
              ") to be equal to src.dtype (", dtype_name(in[2].dtype()), ")");
  return {{in[0].shape(), in[0].dtype()}};
}

LUCID_REGISTER_OP(ScatterAdd, "dim:int", [] {
  OpDef d;
  d.num_inputs = 3;
  d.nondiff_inputs = {1};
  d.save = kSaveInputs;
  d.unsaved_inputs = {0, 2};
  d.infer = [](const TensorList& in, const Attrs& a) { return infer_scatter(in, a, "scatter_add"); };
  d.vjp = [](const VjpContext& c) {
    TensorList r(3);
    if (c.needs_grad[0]) r[0] = c.grads[0];
    if (c.needs_grad[2]) r[2] = gather_to_src(c.grads[0], c.attrs.i("dim"), c.inputs[1], c.input_meta[2].shape);
    return r;
  };
  return d;
}());

LUCID_REGISTER_OP(Scatter, "dim:int", [] {
  OpDef d;
  d.num_inputs = 3;
  d.nondiff_inputs = {1};
  d.save = kSaveInputs;
  d.unsaved_inputs = {0, 2};
  d.infer = [](const TensorList& in, const Attrs& a) { return infer_scatter(in, a, "scatter"); };
  d.vjp = [](const VjpContext& c) {
    TensorList r(3);
    const Tensor& g = c.grads[0];
    int64_t dim = c.attrs.i("dim");
    if (c.needs_grad[0]) r[0] = scatter(g, dim, c.inputs[1], expand(full({}, 0.0, g.dtype()), c.inputs[1].shape()));
    if (c.needs_grad[2]) r[2] = gather_to_src(g, dim, c.inputs[1], c.input_meta[2].shape);
    return r;
  };
  return d;
}());

// gather(g, dim, index) zero-padded up to src's shape (src may be larger than index).
static Tensor gather_to_src(const Tensor& g, int64_t dim, const Tensor& index, const Shape& src_shape) {
  Tensor r = gather(g, dim, index);
  if (r.shape() == src_shape) return r;
  IntList p;
  for (int64_t d = r.ndim() - 1; d >= 0; --d) { p.push_back(0); p.push_back(src_shape[d] - r.shape()[d]); }
  return pad(r, p, "constant", 0.0);
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  return dispatch1(OpId::Gather, {x, index}, {{"dim", dim}});
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return dispatch1(OpId::ScatterAdd, {x, index, src}, {{"dim", dim}});
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return dispatch1(OpId::Scatter, {x, index, src}, {{"dim", dim}});
}

// ---- IndexGather / IndexPut ---------------------------------------------------------------
AdvLayout adv_layout(const Shape& xs, const IntList& dims, const TensorList& idx, const char* op) {
  LUCID_CHECK(!dims.empty() && dims.size() == idx.size(), ValueError, op, ": expected one index tensor per dim, got ",
              idx.size(), " tensors for ", dims.size(), " dims");
  int64_t nd = static_cast<int64_t>(xs.size());
  AdvLayout L;
  bool adjacent = true;
  for (size_t k = 0; k < dims.size(); ++k) {
    LUCID_CHECK(dims[k] >= 0 && dims[k] < nd, IndexError, op, ": too many indices for a tensor of dimension ", nd);
    LUCID_CHECK(k == 0 || dims[k] > dims[k - 1], ValueError, op, ": indexed dims must be strictly increasing");
    if (k > 0 && dims[k] != dims[k - 1] + 1) adjacent = false;
    check_index_dtype(idx[k], op);
    if (k == 0) {
      L.B = idx[k].shape();
      continue;
    }
    try {
      L.B = broadcast_shapes(L.B, idx[k].shape(), op);
    } catch (const ValueError&) {
      throw IndexError(str(op, ": shape mismatch: indexing tensors could not be broadcast together with shapes ",
                           shape_str(L.B), " and ", shape_str(idx[k].shape())));
    }
  }
  for (int64_t d = 0; d < nd; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) L.rest.push_back(d);
  L.pos = adjacent ? dims[0] : 0;
  for (int64_t k = 0; k < L.pos; ++k) L.out.push_back(xs[L.rest[k]]);
  L.out.insert(L.out.end(), L.B.begin(), L.B.end());
  for (size_t k = L.pos; k < L.rest.size(); ++k) L.out.push_back(xs[L.rest[k]]);
  return L;
}

LUCID_REGISTER_OP(IndexGather, "dims:ints", [] {
  OpDef d;
  d.num_inputs = -1;
  d.nondiff_inputs = index_inputs(1);
  d.save = kSaveInputs;
  d.unsaved_inputs = {0};  // backward reads only the indices
  d.infer = [](const TensorList& in, const Attrs& a) {
    TensorList idx(in.begin() + 1, in.end());
    return std::vector<TensorMeta>{{adv_layout(in[0].shape(), a.ints("dims"), idx, "index").out, in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    TensorList idx(c.inputs.begin() + 1, c.inputs.end());
    Tensor zero = expand(full({}, 0.0, c.grads[0].dtype()), c.input_meta[0].shape);
    TensorList r(c.inputs.size());
    r[0] = index_put(zero, c.attrs.ints("dims"), idx, c.grads[0], true);
    return r;
  };
  return d;
}());

static std::vector<TensorMeta> infer_index_put(const TensorList& in, const Attrs& a) {
  TensorList idx(in.begin() + 2, in.end());
  AdvLayout L = adv_layout(in[0].shape(), a.ints("dims"), idx, "index_put");
  LUCID_CHECK(broadcasts_to(in[1].shape(), L.out), ValueError, "index_put: shape mismatch: value tensor of shape ", shape_str(in[1].shape()),
              " cannot be broadcast to indexing result of shape ", shape_str(L.out));
  return {{in[0].shape(), in[0].dtype()}};
}

LUCID_REGISTER_OP(IndexPut, "dims:ints, accumulate:bool", [] {
  OpDef d;
  d.num_inputs = -1;
  d.nondiff_inputs = index_inputs(2);
  d.save = kSaveInputs;
  d.unsaved_inputs = {0, 1};
  d.infer = infer_index_put;
  d.vjp = [](const VjpContext& c) {
    TensorList idx(c.inputs.begin() + 2, c.inputs.end());
    const IntList& dims = c.attrs.ints("dims");
    const Tensor& g = c.grads[0];
    TensorList r(c.inputs.size());
    if (c.needs_grad[0])
      r[0] = c.attrs.b("accumulate") ? g : index_put(g, dims, idx, full({}, 0.0, g.dtype()), false);
    if (c.needs_grad[1]) r[1] = index_gather(g, dims, idx);
    return r;
  };
  return d;
}());

static TensorList cat_lists(const TensorList& a, const TensorList& b) {
  TensorList r = a;
  r.insert(r.end(), b.begin(), b.end());
  return r;
}

Tensor index_gather(const Tensor& x, const IntList& dims, const TensorList& indices) {
  return dispatch1(OpId::IndexGather, cat_lists({x}, indices), {{"dims", dims}});
}
Tensor index_put(const Tensor& x, const IntList& dims, const TensorList& indices, const Tensor& values, bool accumulate) {
  return dispatch1(OpId::IndexPut, cat_lists({x, values}, indices), {{"dims", dims}, {"accumulate", accumulate}});
}
const Tensor& index_put_(const Tensor& x, const IntList& dims, const TensorList& indices, const Tensor& values,
                         bool accumulate) {
  return dispatch_inplace(OpId::IndexPut, x, cat_lists({x, values}, indices), {{"dims", dims}, {"accumulate", accumulate}});
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  LUCID_CHECK(index.ndim() <= 1, ValueError, "index_select: argument 'index' must be a 1-D tensor, got ", index.ndim(),
              " dims");
  check_index_dtype(index, "index_select");
  if (x.ndim() == 0) {
    LUCID_CHECK(index.numel() == 1, ValueError, "index_select: index of a 0-dim tensor must have one element");
    return index_gather(reshape(x, {1}), {0}, {reshape(index, {1})});
  }
  int64_t d = wrap_dim(dim, x.ndim(), "index_select");
  return index_gather(x, {d}, {reshape(index, {-1})});
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, int64_t dim, bool flat) {
  if (flat) return gather(reshape(x, {-1}), 0, reshape(indices, {-1}));
  LUCID_CHECK(x.ndim() == indices.ndim(), ValueError, "take_along_dim: input and indices should have the same number "
              "of dimensions, got ", x.ndim(), " and ", indices.ndim());
  int64_t d = wrap_dim(dim, x.ndim(), "take_along_dim");
  Shape xs = x.shape(), is = indices.shape();
  xs[d] = is[d] = 1;
  Shape b = broadcast_shapes(xs, is, "take_along_dim");
  Shape bx = b, bi = b;
  bx[d] = x.shape()[d];
  bi[d] = indices.shape()[d];
  return gather(expand(x, bx), d, expand(indices, bi));
}

static Tensor index_add_values(const Tensor& x, int64_t d, const Tensor& index, const Tensor& source, double alpha) {
  LUCID_CHECK(index.ndim() <= 1, ValueError, "index_add: argument 'index' must be a 1-D tensor, got ", index.ndim(), " dims");
  Shape want = x.shape();
  if (x.ndim() > 0) want[d] = index.numel();
  LUCID_CHECK(source.shape() == want || (x.ndim() == 0 && source.numel() == 1), ValueError,
              "index_add: argument 'source' expected shape ", shape_str(want), ", got ", shape_str(source.shape()));
  return alpha == 1.0 ? source : mul_scalar(source, alpha);
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
  int64_t d = wrap_dim(dim, x.ndim(), "index_add");
  Tensor v = index_add_values(x, d, index, source, alpha);
  if (x.ndim() == 0) return reshape(index_put(reshape(x, {1}), {0}, {reshape(index, {-1})}, reshape(v, {-1}), true), {});
  return index_put(x, {d}, {reshape(index, {-1})}, v, true);
}

const Tensor& index_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
  int64_t d = wrap_dim(dim, x.ndim(), "index_add_");
  LUCID_CHECK(x.ndim() > 0, ValueError, "index_add_: a 0-dim tensor is not supported");
  return index_put_(x, {d}, {reshape(index, {-1})}, index_add_values(x, d, index, source, alpha), true);
}

TensorList nonzero_indices(const Tensor& mask) {
  // The result's shape depends on the mask's data: a trace can't record it as a graph.
  if (TraceHook* h = current_trace_hook()) h->on_host_read(mask, "nonzero");
  Tensor m = mask.contiguous_data();
  int64_t nd = m.ndim(), n = m.numel();
  LUCID_CHECK(m.dtype() == DType::Bool || m.dtype() == DType::UInt8, TypeError,
              "index: a mask must be bool or uint8, got ", dtype_name(m.dtype()));
  const uint8_t* p = static_cast<const uint8_t*>(m.data_ptr());
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += p[i] != 0;
  TensorList out;
  std::vector<int64_t*> dst;
  for (int64_t d = 0; d < nd; ++d) {
    out.push_back(Tensor::empty({count}, DType::Int64));
    dst.push_back(out.back().data<int64_t>());
  }
  std::vector<int64_t> idx(nd, 0);
  int64_t w = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (p[i]) {
      for (int64_t d = 0; d < nd; ++d) dst[d][w] = idx[d];
      ++w;
    }
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < m.shape()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Tensor nonzero(const Tensor& x) {
  Tensor m = x.dtype() == DType::Bool ? x : cast(x, DType::Bool);
  if (m.ndim() == 0) return Tensor::empty({*m.data<bool>() ? 1 : 0, 0}, DType::Int64);
  TensorList idx = nonzero_indices(m);
  int64_t n = idx[0].numel(), nd = m.ndim();
  Tensor out = Tensor::empty({n, nd}, DType::Int64);
  int64_t* o = out.data<int64_t>();
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t* s = idx[d].data<int64_t>();
    for (int64_t i = 0; i < n; ++i) o[i * nd + d] = s[i];
  }
  return out;
}

Tensor take(const Tensor& x, const Tensor& index) {
  return index_gather(reshape(x, {-1}), {0}, {index});
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  LUCID_CHECK(mask.dtype() == DType::Bool, TypeError, "masked_select: argument 'mask' must be a bool tensor, got ",
              dtype_name(mask.dtype()));
  Shape s = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  Tensor xe = expand(x, s), me = expand(mask, s);
  if (s.empty()) {
    xe = reshape(xe, {1});
    me = reshape(me, {1});
  }
  TensorList idx = nonzero_indices(me);
  IntList dims;
  for (int64_t d = 0; d < xe.ndim(); ++d) dims.push_back(d);
  return index_gather(xe, dims, idx);
}

}  // namespace lucid
