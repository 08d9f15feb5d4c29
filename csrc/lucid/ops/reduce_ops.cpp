// Reductions: Mean, Var, Std (Welford), Prod (+ ProdOthers, the product of the other elements,
// for its VJP), LogSumExp (+ ExpSub for its VJP), Cumsum, All, Any: their records and C++ API.
// VJPs are written with ops. Kernels: backends/<device>/kernels/reduce.* and scan.* (on the CPU,
// floats accumulate in double, so float32 results match PyTorch to ~1e-7 relative).
#include <cmath>

#include "lucid/ops/elementwise_util.h"
#include "lucid/ops/reduce.h"

namespace lucid {

// ---- shared helpers ---------------------------------------------------------------------------
static IntList attr_dims(const Attrs& a, int64_t ndim, const char* op) { return reduce_dims(a.ints("dims"), ndim, op); }

static std::vector<TensorMeta> reduce_meta(const char* op, const Tensor& x, const Attrs& a, DType out) {
  IntList dims = attr_dims(a, x.ndim(), op);
  return {{reduced_shape(x.shape(), dims, a.b("keepdim", false)), out}};
}

// The output gradient reshaped to the keepdim shape, so it broadcasts against the input.
static Tensor keep_shape(const Tensor& g, const VjpContext& c, const char* op) {
  const Shape& s = c.input_meta[0].shape;
  if (c.attrs.b("keepdim", false)) return g;
  IntList dims = attr_dims(c.attrs, static_cast<int64_t>(s.size()), op);
  return reshape(g, reduced_shape(s, dims, true));
}

static int64_t reduced_count(const Shape& s, const IntList& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= s[d];
  return n;
}

static Attrs reduce_attrs(const IntList& dims, bool keepdim) { return {{"dims", dims}, {"keepdim", keepdim}}; }

// ---- Mean ---------------------------------------------------------------------------------------
static DType mean_dtype(const Tensor& x, const Attrs& a, const char* op) {
  DType t = a.has("dtype") ? a.dtype("dtype") : x.dtype();
  LUCID_CHECK(is_floating(t), TypeError, op, ": could not infer output dtype; input dtype must be a floating "
              "point dtype (or pass dtype=), got ", dtype_name(t));
  return t;
}

LUCID_REGISTER_OP(Mean, "dims:ints, keepdim:bool?, dtype:dtype?", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) { return reduce_meta("mean", in[0], a, mean_dtype(in[0], a, "mean")); };
  d.vjp = [](const VjpContext& c) {
    const Shape& s = c.input_meta[0].shape;
    int64_t n = reduced_count(s, attr_dims(c.attrs, static_cast<int64_t>(s.size()), "mean"));
    return TensorList{mul_scalar(expand(keep_shape(c.grads[0], c, "mean"), s), 1.0 / static_cast<double>(n))};
  };
  return d;
}());

Tensor mean(const Tensor& x, const IntList& dims, bool keepdim, std::optional<DType> dtype) {
  Attrs a = reduce_attrs(dims, keepdim);
  if (dtype) a.set("dtype", *dtype);
  return dispatch1(OpId::Mean, {x}, a);
}

// ---- Var / Std --------------------------------------------------------------------------------
static std::vector<TensorMeta> var_infer(const TensorList& in, const Attrs& a, const char* op) {
  LUCID_CHECK(is_floating(in[0].dtype()), TypeError, op, ": expected a floating point input, got dtype ",
              dtype_name(in[0].dtype()));
  return reduce_meta(op, in[0], a, in[0].dtype());
}

// d var / dx = 2 (x - mean) / (N - correction); d std / dx = (x - mean) / ((N - correction) std).
static Tensor var_grad_core(const VjpContext& c, const char* op, double factor) {
  const Shape& s = c.input_meta[0].shape;
  IntList dims = attr_dims(c.attrs, static_cast<int64_t>(s.size()), op);
  double n = static_cast<double>(reduced_count(s, dims)) - c.attrs.f("correction");
  const Tensor& x = c.inputs[0];
  Tensor centered = sub(x, mean(x, dims, true));
  return mul(keep_shape(c.grads[0], c, op), mul_scalar(centered, factor / std::max(0.0, n)));
}

LUCID_REGISTER_OP(Var, "dims:ints, keepdim:bool?, correction:float", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveInputs;
  d.infer = [](const TensorList& in, const Attrs& a) { return var_infer(in, a, "var"); };
  d.vjp = [](const VjpContext& c) { return TensorList{var_grad_core(c, "var", 2.0)}; };
  return d;
}());

LUCID_REGISTER_OP(Std, "dims:ints, keepdim:bool?, correction:float", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveInputs | kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs& a) { return var_infer(in, a, "std"); };
  d.vjp = [](const VjpContext& c) {
    // Where std == 0 the gradient is 0 (as in PyTorch), not 0/0: divide by std + [std == 0]
    // and zero those entries.
    Tensor sd = keep_shape(c.outputs[0], c, "std");
    Tensor is_zero = dispatch1(OpId::ReduceEqMask, {sd, full({}, 0.0, sd.dtype())}, {{"dtype", sd.dtype()}});
    Tensor g = div(var_grad_core(c, "std", 1.0), add(sd, is_zero));
    return TensorList{mul(g, sub(ones_like(is_zero), is_zero))};
  };
  return d;
}());

Tensor var(const Tensor& x, const IntList& dims, double correction, bool keepdim) {
  Attrs a = reduce_attrs(dims, keepdim);
  a.set("correction", correction);
  return dispatch1(OpId::Var, {x}, a);
}
Tensor std_(const Tensor& x, const IntList& dims, double correction, bool keepdim) {
  Attrs a = reduce_attrs(dims, keepdim);
  a.set("correction", correction);
  return dispatch1(OpId::Std, {x}, a);
}

// ---- Prod -----------------------------------------------------------------------------------------
static DType int_to_long(DType t) { return is_integral(t, true) ? DType::Int64 : t; }

LUCID_REGISTER_OP(Prod, "dims:ints, keepdim:bool?, dtype:dtype?", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveInputs | kSaveOutputs;  // the result only for the version check: PyTorch saves and reads it
  d.infer = [](const TensorList& in, const Attrs& a) {
    return reduce_meta("prod", in[0], a, a.has("dtype") ? a.dtype("dtype") : int_to_long(in[0].dtype()));
  };
  d.vjp = [](const VjpContext& c) {
    const Tensor& x = c.inputs[0];
    Tensor others = dispatch1(OpId::ProdOthers, {x}, {{"dims", c.attrs.ints("dims")}});
    return TensorList{mul(keep_shape(c.grads[0], c, "prod"), others)};
  };
  return d;
}());

LUCID_REGISTER_OP(ProdOthers, "dims:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    attr_dims(a, in[0].ndim(), "prod");
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext&) -> TensorList {
    throw NotImplementedError("prod: the second derivative of prod is not implemented");
  };
  return d;
}());

Tensor prod(const Tensor& x, const IntList& dims, bool keepdim, std::optional<DType> dtype) {
  Attrs a = reduce_attrs(dims, keepdim);
  if (dtype) a.set("dtype", *dtype);
  return dispatch1(OpId::Prod, {x}, a);
}

// ---- LogSumExp --------------------------------------------------------------------------------
LUCID_REGISTER_OP(LogSumExp, "dims:ints, keepdim:bool?", [] {
  OpDef d;
  d.num_inputs = 1;
  d.save = kSaveInputs | kSaveOutputs;
  d.infer = [](const TensorList& in, const Attrs& a) {
    DType t = is_floating(in[0].dtype()) ? in[0].dtype() : default_float_dtype();
    return reduce_meta("logsumexp", in[0], a, t);
  };
  d.vjp = [](const VjpContext& c) {
    Tensor out = keep_shape(c.outputs[0], c, "logsumexp");
    return TensorList{mul(keep_shape(c.grads[0], c, "logsumexp"), exp_sub(c.inputs[0], out))};
  };
  return d;
}());

Tensor logsumexp(const Tensor& x, const IntList& dims, bool keepdim) {
  return dispatch1(OpId::LogSumExp, {x}, reduce_attrs(dims, keepdim));
}

LUCID_REGISTER_OP(ExpSub, "", [] {
  OpDef d = elementwise_op<OpId::ExpSub>();
  d.save = kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    Tensor ga = mul(c.grads[0], c.outputs[0]);
    return TensorList{ga, c.needs_grad[1] ? neg(ga) : Tensor()};
  };
  return d;
}());

Tensor exp_sub(const Tensor& a, const Tensor& b) { return dispatch1(OpId::ExpSub, {a, b}); }

// ---- Cumsum ---------------------------------------------------------------------------------------
LUCID_REGISTER_OP(Cumsum, "dim:int, reverse:bool?, dtype:dtype?", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    wrap_dim(a.i("dim"), in[0].ndim(), "cumsum");
    DType t = a.has("dtype") ? a.dtype("dtype") : int_to_long(in[0].dtype());
    return std::vector<TensorMeta>{{in[0].shape(), t}};
  };
  d.vjp = [](const VjpContext& c) {
    return TensorList{cumsum(c.grads[0], c.attrs.i("dim"), std::nullopt, !c.attrs.b("reverse", false))};
  };
  return d;
}());

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype, bool reverse) {
  Attrs a{{"dim", dim}, {"reverse", reverse}};
  if (dtype) a.set("dtype", *dtype);
  return dispatch1(OpId::Cumsum, {x}, a);
}

// ---- All / Any ------------------------------------------------------------------------------------
template <bool IsAll>
static OpDef bool_reduce_op() {
  OpDef d;
  d.num_inputs = 1;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    // PyTorch keeps uint8 for uint8 inputs (legacy), bool otherwise.
    return reduce_meta(IsAll ? "all" : "any", in[0], a, in[0].dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool);
  };
  return d;
}

LUCID_REGISTER_OP(All, "dims:ints, keepdim:bool?", bool_reduce_op<true>());
LUCID_REGISTER_OP(Any, "dims:ints, keepdim:bool?", bool_reduce_op<false>());

Tensor all(const Tensor& x, const IntList& dims, bool keepdim) { return dispatch1(OpId::All, {x}, reduce_attrs(dims, keepdim)); }
Tensor any(const Tensor& x, const IntList& dims, bool keepdim) { return dispatch1(OpId::Any, {x}, reduce_attrs(dims, keepdim)); }

}  // namespace lucid
