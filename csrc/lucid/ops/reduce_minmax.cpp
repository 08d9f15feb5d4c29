// Extremum reductions: Amax/Amin (over dims, gradient shared evenly between ties, as PyTorch),
// MaxDim/MinDim (values + indices along one dim, gradient to the selected element), Argmax/
// Argmin (non-differentiable), and the two mask ops their VJPs are written with: ReduceEqMask
// (x == reduced value) and IndexMask (one-hot of indices along a dim). NaN wins, as in PyTorch;
// among equal values the first index is selected. Records and C++ API; kernels:
// backends/<device>/kernels/reduce_minmax.*.
#include "lucid/ops/reduce.h"

namespace lucid {

static void check_nonempty(const Tensor& x, const IntList& dims, const char* op) {
  for (int64_t d : dims)
    LUCID_CHECK(x.shape()[d] != 0, IndexError, op, ": expected reduction dim ", d,
                " to have non-zero size (the operation has no identity), got shape ", shape_str(x.shape()));
}

static Tensor keep(const Tensor& g, const Shape& s, const IntList& dims, bool keepdim) {
  return keepdim ? g : reshape(g, reduced_shape(s, dims, true));
}

// ---- Amax / Amin ------------------------------------------------------------------------------------
template <bool IsMax>
static OpDef amax_op() {
  OpDef d;
  static const char* name = IsMax ? "amax" : "amin";
  d.num_inputs = 1;
  d.save = kSaveInputs | kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    IntList dims = reduce_dims(a.ints("dims"), in[0].ndim(), name);
    check_nonempty(in[0], dims, name);
    return std::vector<TensorMeta>{{reduced_shape(in[0].shape(), dims, a.b("keepdim")), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    const Shape& s = c.input_meta[0].shape;
    IntList dims = reduce_dims(c.attrs.ints("dims"), static_cast<int64_t>(s.size()), name);
    bool kd = c.attrs.b("keepdim");
    const Tensor& g = c.grads[0];
    Tensor mask = dispatch1(OpId::ReduceEqMask, {c.inputs[0], keep(c.outputs[0], s, dims, kd)}, {{"dtype", g.dtype()}});
    Tensor count = sum(mask, dims, true);
    return TensorList{div(mul(keep(g, s, dims, kd), mask), count)};
  };
  return d;
}

LUCID_REGISTER_OP(Amax, "dims:ints, keepdim:bool", amax_op<true>());
LUCID_REGISTER_OP(Amin, "dims:ints, keepdim:bool", amax_op<false>());

Tensor amax(const Tensor& x, const IntList& dims, bool keepdim) {
  return dispatch1(OpId::Amax, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}
Tensor amin(const Tensor& x, const IntList& dims, bool keepdim) {
  return dispatch1(OpId::Amin, {x}, {{"dims", dims}, {"keepdim", keepdim}});
}

// ---- MaxDim / MinDim ----------------------------------------------------------------------------------
template <bool IsMax>
static OpDef max_dim_op() {
  OpDef d;
  static const char* name = IsMax ? "max" : "min";
  d.num_inputs = 1;
  d.save = kSaveOutputs;
  d.unsaved_outputs = {0};  // the VJP reads the indices only (as PyTorch)
  d.infer = [](const TensorList& in, const Attrs& a) {
    IntList dims = reduce_dims({a.i("dim")}, in[0].ndim(), name);
    check_nonempty(in[0], dims, name);
    Shape s = reduced_shape(in[0].shape(), dims, a.b("keepdim"));
    return std::vector<TensorMeta>{{s, in[0].dtype()}, {s, DType::Int64}};
  };
  d.vjp = [](const VjpContext& c) {
    const Shape& s = c.input_meta[0].shape;
    int64_t nd = static_cast<int64_t>(s.size());
    IntList dims = reduce_dims({c.attrs.i("dim")}, nd, name);
    bool kd = c.attrs.b("keepdim");
    const Tensor& g = c.grads[0];
    Tensor idx = keep(c.outputs[1], s, dims, kd);
    Tensor mask = dispatch1(OpId::IndexMask, {idx},
                            {{"dim", dims.empty() ? int64_t{0} : dims[0]}, {"shape", s}, {"dtype", g.dtype()}});
    return TensorList{mul(keep(g, s, dims, kd), mask)};
  };
  return d;
}

LUCID_REGISTER_OP(MaxDim, "dim:int, keepdim:bool", max_dim_op<true>());
LUCID_REGISTER_OP(MinDim, "dim:int, keepdim:bool", max_dim_op<false>());

std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim) {
  TensorList r = dispatch(OpId::MaxDim, {x}, {{"dim", dim}, {"keepdim", keepdim}});
  return {r[0], r[1]};
}
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim) {
  TensorList r = dispatch(OpId::MinDim, {x}, {{"dim", dim}, {"keepdim", keepdim}});
  return {r[0], r[1]};
}

// ---- Argmax / Argmin -------------------------------------------------------------------------------
template <bool IsMax>
static OpDef argmax_op() {
  OpDef d;
  static const char* name = IsMax ? "argmax" : "argmin";
  d.num_inputs = 1;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    IntList dims = a.has("dim") ? reduce_dims({a.i("dim")}, in[0].ndim(), name) : reduce_dims({}, in[0].ndim(), name);
    if (!a.has("dim"))
      LUCID_CHECK(in[0].numel() != 0, IndexError, name, ": expected a non-empty tensor (the operation has no identity)");
    check_nonempty(in[0], dims, name);
    return std::vector<TensorMeta>{{reduced_shape(in[0].shape(), dims, a.b("keepdim")), DType::Int64}};
  };
  return d;
}

LUCID_REGISTER_OP(Argmax, "dim:int?, keepdim:bool", argmax_op<true>());
LUCID_REGISTER_OP(Argmin, "dim:int?, keepdim:bool", argmax_op<false>());

static Tensor arg_ext(OpId id, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  Attrs a{{"keepdim", keepdim}};
  if (dim) a.set("dim", *dim);
  return dispatch1(id, {x}, a);
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_ext(OpId::Argmax, x, dim, keepdim); }
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_ext(OpId::Argmin, x, dim, keepdim); }

// ---- Masks -------------------------------------------------------------------------------------------
LUCID_REGISTER_OP(ReduceEqMask, "dtype:dtype", [] {
  OpDef d;
  d.num_inputs = 2;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    Shape b = broadcast_shapes(in[0].shape(), in[1].shape(), "reduce_eq_mask");
    LUCID_CHECK(b == in[0].shape() && in[0].dtype() == in[1].dtype(), ValueError,
                "reduce_eq_mask: the reference must broadcast to the input's shape and have its dtype");
    return std::vector<TensorMeta>{{in[0].shape(), a.dtype("dtype")}};
  };
  return d;
}());

LUCID_REGISTER_OP(IndexMask, "dim:int, shape:ints, dtype:dtype", [] {
  OpDef d;
  d.num_inputs = 1;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& s = a.ints("shape");
    LUCID_CHECK(in[0].dtype() == DType::Int64, TypeError, "index_mask: indices must be int64");
    int64_t nd = static_cast<int64_t>(s.size());
    if (nd > 0) {
      IntList dims{wrap_dim(a.i("dim"), nd, "index_mask")};
      LUCID_CHECK(in[0].shape() == reduced_shape(s, dims, true), ValueError, "index_mask: indices of shape ",
                  shape_str(in[0].shape()), " do not match ", shape_str(s));
    }
    return std::vector<TensorMeta>{{s, a.dtype("dtype")}};
  };
  return d;
}());

}  // namespace lucid
