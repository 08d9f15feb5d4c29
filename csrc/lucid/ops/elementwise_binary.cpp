// Binary and ternary elementwise ops: pow, maximum, minimum, floor_divide, remainder, the
// comparisons (bool output), logical and bitwise ops, where, lerp, and the ops with scalar
// attributes (clamp, masked_fill, addcmul, addcdiv). Each is a row of the functor table
// (ops/list/elementwise_functors.def) + the elementwise_op builder + a VJP written with ops;
// comparisons, logical and bitwise ops are non-differentiable. The CPU kernels are in
// backends/cpu/kernels/elementwise_binary.cpp and elementwise_attr.cpp.
#include "lucid/ops/elementwise.h"
#include "lucid/ops/elementwise_util.h"

namespace lucid {

static Tensor sc(double v) { return scalar_tensor(v); }

// A 0-d wrapped number's value (Python scalar operand), for VJPs that do host arithmetic on it.
static bool wrapped_value(const Tensor& t, double& v) {
  if (!t.defined() || !t.impl()->is_wrapped_number) return false;
  LUCID_DISPATCH_ALL(t.dtype(), "pow", [&] { v = static_cast<double>(static_cast<compute_t<scalar_t>>(*t.data<scalar_t>())); });
  return true;
}

// ---- pow ----------------------------------------------------------------------------------
LUCID_REGISTER_OP(Pow, "", [] {
  OpDef d = elementwise_op<OpId::Pow>();
  d.infer = [](const TensorList& in, const Attrs&) {
    std::vector<TensorMeta> m = infer_elementwise(OpId::Pow, EwDType::Same, in);
    double e;
    LUCID_CHECK(!(is_integral(m[0].dtype) && wrapped_value(in[1], e) && e < 0), ValueError,
                "pow: integers to negative integer powers are not allowed");
    return m;
  };
  d.save = kSaveInputs | kSaveOutputs;
  // The result is read only for the exponent's gradient (PyTorch's pow(Tensor, Scalar) saves none)
  d.saves_outputs = [](const TensorList& in) { return in[1].requires_grad(); };
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &a = c.inputs[0], &b = c.inputs[1];
    TensorList r(2);
    if (c.needs_grad[0]) {
      double e;
      if (wrapped_value(b, e)) {
        // x ** e: e * x ** (e - 1), zero where e == 0.
        if (e == 0.0) r[0] = zeros_like(g);
        else if (e == 1.0) r[0] = g;
        else if (e == 2.0) r[0] = mul(g, mul(a, sc(2.0)));
        else r[0] = mul(g, mul(pow(a, e - 1.0), sc(e)));
      } else {
        Tensor t = mul(g, mul(b, pow(a, sub(b, sc(1.0)))));
        r[0] = where(eq(b, sc(0.0)), sc(0.0), t);
      }
    }
    if (c.needs_grad[1]) {
      // out * log(a), zero where a == 0 and b >= 0 (as PyTorch).
      double av;
      Tensor log_a = wrapped_value(a, av) ? sc(std::log(av)) : log(a);  // 2 ** x: log on the host, in double
      Tensor t = mul(g, mul(c.outputs[0], log_a));
      r[1] = where(logical_and(eq(a, sc(0.0)), ge(b, sc(0.0))), sc(0.0), t);
    }
    return r;
  };
  return d;
}());

// ---- maximum / minimum: ties split the gradient in half, as PyTorch -----------------------
static TensorList minmax_vjp(const VjpContext& c, bool is_max) {
  // PyTorch's rule: the gradient, halved at ties, to each input except where the other one wins;
  // a NaN wins nowhere and loses nowhere, so both inputs of a NaN comparison get the gradient.
  const Tensor &g = c.grads[0], &a = c.inputs[0], &b = c.inputs[1];
  Tensor share = where(eq(a, b), mul(g, sc(0.5)), g);
  TensorList r(2);
  if (c.needs_grad[0]) r[0] = where(is_max ? lt(a, b) : gt(a, b), sc(0.0), share);
  if (c.needs_grad[1]) r[1] = where(is_max ? gt(a, b) : lt(a, b), sc(0.0), share);
  return r;
}

LUCID_REGISTER_OP(Maximum, "", [] {
  OpDef d = elementwise_op<OpId::Maximum>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return minmax_vjp(c, true); };
  return d;
}());

LUCID_REGISTER_OP(Minimum, "", [] {
  OpDef d = elementwise_op<OpId::Minimum>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return minmax_vjp(c, false); };
  return d;
}());

// ---- floor_divide / remainder -------------------------------------------------------------
// Integer division by zero raises, as PyTorch on CPU: the CPU kernel checks the divisor first.
LUCID_REGISTER_OP(FloorDivide, "", [] {
  OpDef d = elementwise_op<OpId::FloorDivide>();
  d.vjp = [](const VjpContext& c) {
    TensorList r(2);
    for (int i = 0; i < 2; ++i)
      if (c.needs_grad[i]) r[i] = zeros_like(c.grads[0]);
    return r;
  };
  return d;
}());

LUCID_REGISTER_OP(Remainder, "", [] {
  OpDef d = elementwise_op<OpId::Remainder>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    TensorList r(2);
    if (c.needs_grad[0]) r[0] = g;
    if (c.needs_grad[1]) r[1] = neg(mul(g, floor_divide(c.inputs[0], c.inputs[1])));
    return r;
  };
  return d;
}());

// ---- comparisons, logical and bitwise ops (non-differentiable) ----------------------------
#define EW_NONDIFF(Name)                    \
  LUCID_REGISTER_OP(Name, "", [] {          \
    OpDef d = elementwise_op<OpId::Name>(); \
    d.differentiable = false;               \
    return d;                               \
  }())

EW_NONDIFF(Eq);
EW_NONDIFF(Ne);
EW_NONDIFF(Lt);
EW_NONDIFF(Le);
EW_NONDIFF(Gt);
EW_NONDIFF(Ge);
EW_NONDIFF(LogicalAnd);
EW_NONDIFF(LogicalOr);
EW_NONDIFF(LogicalXor);
EW_NONDIFF(BitwiseAnd);
EW_NONDIFF(BitwiseOr);
EW_NONDIFF(BitwiseXor);

// ---- where --------------------------------------------------------------------------------
LUCID_REGISTER_OP(Where, "", [] {
  OpDef d = elementwise_op<OpId::Where>();
  d.infer = [](const TensorList& in, const Attrs&) {
    LUCID_CHECK(in[0].dtype() == DType::Bool, TypeError, "where: argument 'condition' expected a bool tensor, got ",
                dtype_name(in[0].dtype()));
    // The condition does not take part in type promotion.
    std::vector<TensorMeta> m = infer_elementwise(OpId::Where, EwDType::Same, in);
    m[0].dtype = result_type({in[1], in[2]});
    return m;
  };
  d.nondiff_inputs = {0};
  d.save = kSaveInputs;
  d.unsaved_inputs = {1, 2};  // as PyTorch: only the condition (so x[mask] = v, written as where, is in place)
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &cond = c.inputs[0];
    TensorList r(3);
    if (c.needs_grad[1]) r[1] = where(cond, g, sc(0.0));
    if (c.needs_grad[2]) r[2] = where(cond, sc(0.0), g);
    return r;
  };
  return d;
}());

// ---- lerp ---------------------------------------------------------------------------------
LUCID_REGISTER_OP(Lerp, "", [] {
  OpDef d = elementwise_op<OpId::Lerp>();
  d.float_scalar_input = 2;
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &s = c.inputs[0], &e = c.inputs[1], &w = c.inputs[2];
    TensorList r(3);
    if (c.needs_grad[0]) r[0] = mul(g, sub(sc(1.0), w));
    if (c.needs_grad[1]) r[1] = mul(g, w);
    if (c.needs_grad[2]) r[2] = mul(g, sub(e, s));
    return r;
  };
  return d;
}());

// ---- clamp with scalar bounds -------------------------------------------------------------
LUCID_REGISTER_OP(Clamp, "min:float?, max:float?", [] {
  OpDef d = elementwise_op<OpId::Clamp>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& x = c.inputs[0];
    Tensor mask;
    if (c.attrs.has("min")) mask = ge(x, attr_scalar(c.attrs, "min"));
    if (c.attrs.has("max")) {
      Tensor m = le(x, attr_scalar(c.attrs, "max"));
      mask = mask.defined() ? logical_and(mask, m) : m;
    }
    return TensorList{where(mask, c.grads[0], sc(0.0))};
  };
  return d;
}());

// ---- masked_fill --------------------------------------------------------------------------
LUCID_REGISTER_OP(MaskedFill, "value:float", [] {
  OpDef d = elementwise_op<OpId::MaskedFill>();
  d.nondiff_inputs = {1};
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{where(c.inputs[1], sc(0.0), c.grads[0]), Tensor()}; };
  return d;
}());

// ---- addcmul / addcdiv --------------------------------------------------------------------
LUCID_REGISTER_OP(Addcmul, "value:float", [] {
  OpDef d = elementwise_op<OpId::Addcmul>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    double v = c.attrs.f("value");
    TensorList r(3);
    if (c.needs_grad[0]) r[0] = g;
    if (c.needs_grad[1]) r[1] = mul(g, mul(c.inputs[2], sc(v)));
    if (c.needs_grad[2]) r[2] = mul(g, mul(c.inputs[1], sc(v)));
    return r;
  };
  return d;
}());

LUCID_REGISTER_OP(Addcdiv, "value:float", [] {
  OpDef d = elementwise_op<OpId::Addcdiv>();
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor &g = c.grads[0], &t1 = c.inputs[1], &t2 = c.inputs[2];
    double v = c.attrs.f("value");
    TensorList r(3);
    if (c.needs_grad[0]) r[0] = g;
    if (c.needs_grad[1]) r[1] = div(mul(g, sc(v)), t2);
    if (c.needs_grad[2]) r[2] = neg(div(mul(mul(g, sc(v)), t1), mul(t2, t2)));
    return r;
  };
  return d;
}());

// ---- C++ API ------------------------------------------------------------------------------
Tensor pow(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Pow, {a, b}); }
Tensor pow(const Tensor& a, double e) { return dispatch1(OpId::Pow, {a, sc(e)}); }
Tensor maximum(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Maximum, {a, b}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Minimum, {a, b}); }
Tensor floor_divide(const Tensor& a, const Tensor& b) { return dispatch1(OpId::FloorDivide, {a, b}); }
Tensor remainder(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Remainder, {a, b}); }
Tensor eq(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Eq, {a, b}); }
Tensor ne(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Ne, {a, b}); }
Tensor lt(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Lt, {a, b}); }
Tensor le(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Le, {a, b}); }
Tensor gt(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Gt, {a, b}); }
Tensor ge(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Ge, {a, b}); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return dispatch1(OpId::LogicalAnd, {a, b}); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return dispatch1(OpId::LogicalOr, {a, b}); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return dispatch1(OpId::LogicalXor, {a, b}); }
Tensor bitwise_and(const Tensor& a, const Tensor& b) { return dispatch1(OpId::BitwiseAnd, {a, b}); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return dispatch1(OpId::BitwiseOr, {a, b}); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return dispatch1(OpId::BitwiseXor, {a, b}); }
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return dispatch1(OpId::Where, {cond, a, b}); }
Tensor lerp(const Tensor& s, const Tensor& e, const Tensor& w) { return dispatch1(OpId::Lerp, {s, e, w}); }

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  Attrs a;
  if (lo) a.set("min", *lo);
  if (hi) a.set("max", *hi);
  return dispatch1(OpId::Clamp, {x}, a);
}

Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  LUCID_CHECK(lo.defined() || hi.defined(), ValueError, "clamp: at least one of 'min' or 'max' must not be None");
  Tensor r = x;
  if (lo.defined()) r = where(lt(r, lo), lo, r);
  if (hi.defined()) r = where(gt(r, hi), hi, r);
  return r;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return dispatch1(OpId::MaskedFill, {x, mask}, {{"value", value}});
}
Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, double value) {
  return dispatch1(OpId::Addcmul, {x, t1, t2}, {{"value", value}});
}
Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, double value) {
  return dispatch1(OpId::Addcdiv, {x, t1, t2}, {{"value", value}});
}

}  // namespace lucid
