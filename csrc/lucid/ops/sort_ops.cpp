// The sort family's records and C++ API: Sort, TopK, Median (all elements) and MedianDim, ops
// over the rows of one dim. NaN orders as the largest value (PyTorch's rule: first when
// descending or largest, last otherwise); `median` propagates NaN, `nanmedian` ignores it.
// Kernels: backends/<device>/kernels/sort.*.
// VJPs are written with ops: values scatter their gradient back to the positions given by the
// indices (Scatter); the median of all elements shares it evenly between ties (ReduceEqMask),
// as PyTorch's evenly_distribute_backward. Index outputs are int64 and never differentiated.
#include "lucid/ops/movement.h"
#include "lucid/ops/reduce.h"
#include "lucid/ops/sort.h"

namespace lucid {

namespace {

int64_t sort_dim(const Tensor& x, const Attrs& a, const char* op) { return wrap_dim(a.i("dim"), x.ndim(), op); }

// Gradient of values selected by `idx` along dim: scattered into zeros of the input's shape.
Tensor scatter_back(const Tensor& g, const Tensor& idx, const Shape& s, int64_t dim) {
  if (!g.defined() || s.empty()) return g;
  return scatter(full(s, 0.0, g.dtype()), dim, idx, g);
}

// VJP of an op returning (values, indices) picked along attribute 'dim' (Sort, TopK).
TensorList values_vjp(const VjpContext& c) {
  const Shape& s = c.input_meta[0].shape;
  int64_t dim = wrap_dim(c.attrs.i("dim"), static_cast<int64_t>(s.size()), "sort/topk");
  return TensorList{scatter_back(c.grads[0], c.outputs[1], s, dim)};
}

void check_median_dtype(const Tensor& x, const char* op) {
  LUCID_CHECK(x.dtype() != DType::Bool, NotImplementedError, op, ": not implemented for dtype bool (argument 'input')");
}

}  // namespace

LUCID_REGISTER_OP(Sort, "dim:int, descending:bool, stable:bool", [] {
  OpDef d;
  d.api_name = "sort";
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    sort_dim(in[0], a, "sort");
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}, {in[0].shape(), DType::Int64}};
  };
  d.save = kSaveOutputs;
  d.vjp = values_vjp;
  return d;
}());

LUCID_REGISTER_OP(TopK, "k:int, dim:int, largest:bool, sorted:bool", [] {
  OpDef d;
  d.api_name = "topk";
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    LUCID_CHECK(x.dtype() != DType::Bool, Error, "topk: argument 'input' of dtype bool is not supported");
    int64_t dim = sort_dim(x, a, "topk"), k = a.i("k");
    int64_t n = x.ndim() == 0 ? 1 : x.shape()[dim];
    LUCID_CHECK(k >= 0 && k <= n, Error, "topk: argument 'k' (selected index k) out of range: expected 0 <= k <= ", n,
                " (the size of dim ", a.i("dim"), " of a tensor of shape ", shape_str(x.shape()), "), got k=", k);
    Shape s = x.shape();
    if (!s.empty()) s[dim] = k;
    return std::vector<TensorMeta>{{s, x.dtype()}, {s, DType::Int64}};
  };
  d.save = kSaveOutputs;
  d.vjp = values_vjp;
  return d;
}());

LUCID_REGISTER_OP(Median, "ignore_nan:bool", [] {
  OpDef d;
  d.api_name = "median";
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    check_median_dtype(in[0], a.b("ignore_nan") ? "nanmedian" : "median");
    return std::vector<TensorMeta>{{{}, in[0].dtype()}};
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    Tensor mask = dispatch1(OpId::ReduceEqMask, {c.inputs[0], c.outputs[0]}, {{"dtype", g.dtype()}});
    return TensorList{div(mul(g, mask), sum(mask))};
  };
  return d;
}());

LUCID_REGISTER_OP(MedianDim, "dim:int, keepdim:bool, ignore_nan:bool", [] {
  OpDef d;
  d.api_name = "median";
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const char* op = a.b("ignore_nan") ? "nanmedian" : "median";
    const Tensor& x = in[0];
    check_median_dtype(x, op);
    int64_t dim = sort_dim(x, a, op);
    LUCID_CHECK(x.ndim() == 0 || x.shape()[dim] != 0, IndexError, op, ": expected reduction dim ", dim,
                " to have non-zero size, got shape ", shape_str(x.shape()));
    Shape s = x.ndim() == 0 ? Shape{} : reduced_shape(x.shape(), {dim}, a.b("keepdim"));
    return std::vector<TensorMeta>{{s, x.dtype()}, {s, DType::Int64}};
  };
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    const Shape& s = c.input_meta[0].shape;
    if (s.empty()) return TensorList{c.grads[0]};
    int64_t dim = wrap_dim(c.attrs.i("dim"), static_cast<int64_t>(s.size()), "median");
    bool kd = c.attrs.b("keepdim");
    Tensor g = kd ? c.grads[0] : unsqueeze(c.grads[0], dim);
    Tensor idx = kd ? c.outputs[1] : unsqueeze(c.outputs[1], dim);
    return TensorList{scatter_back(g, idx, s, dim)};
  };
  return d;
}());

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  TensorList r = dispatch(OpId::Sort, {x}, {{"dim", dim}, {"descending", descending}, {"stable", stable}});
  return {r[0], r[1]};
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  return sort(x, dim, descending, stable).second;
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  TensorList r = dispatch(OpId::TopK, {x}, {{"k", k}, {"dim", dim}, {"largest", largest}, {"sorted", sorted}});
  return {r[0], r[1]};
}

Tensor median(const Tensor& x, bool ignore_nan) { return dispatch1(OpId::Median, {x}, {{"ignore_nan", ignore_nan}}); }

std::pair<Tensor, Tensor> median_dim(const Tensor& x, int64_t dim, bool keepdim, bool ignore_nan) {
  TensorList r = dispatch(OpId::MedianDim, {x}, {{"dim", dim}, {"keepdim", keepdim}, {"ignore_nan", ignore_nan}});
  return {r[0], r[1]};
}

}  // namespace lucid
