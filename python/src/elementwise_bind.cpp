// Python bindings of the elementwise family: functions in lucid._C (re-exported with torch names
// by lucid/_ops_elementwise.py), Tensor methods and operators, and in-place forms through
// dispatch_inplace. Python numbers become wrapped-number tensors (to_tensor), so PyTorch's type
// promotion applies. In-place methods return the same Python object (self).
#include "bind.h"
#include "lucid/core/mem_overlap.h"
#include "lucid/ops/elementwise.h"

namespace lucid::py {

using H = nb::handle;

// def_method that replaces an existing method of the same name (nanobind would otherwise chain
// the new function as an overload after the old one, e.g. tensor_bind's add_ without alpha).
template <class F, class... Extra>
static void redef(nb::module_& m, const char* name, F&& f, const Extra&... extra) {
  nb::handle cls = nb::type<Tensor>();
  if (nb::cast<bool>(cls.attr("__dict__").attr("__contains__")(name))) nb::delattr(cls, name);
  def_method(m, name, std::forward<F>(f), extra...);
}

static Tensor TT(H h, const char* op, const char* arg) { return to_tensor(h, op, arg); }

// Python operand of a number or a tensor (otherwise the operator returns NotImplemented).
static bool is_operand(H h) {
  return is_tensor(h) || PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) ||
         nb::hasattr(h, "__index__") || nb::hasattr(h, "__float__");
}

static bool is_one(H h) {
  if (PyBool_Check(h.ptr())) return h.ptr() == Py_True;
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    return PyLong_AsLongLongAndOverflow(h.ptr(), &overflow) == 1 && !overflow;
  }
  if (PyFloat_Check(h.ptr())) return PyFloat_AsDouble(h.ptr()) == 1.0;
  return false;
}

static double number(H h, const char* op, const char* arg) {
  if (PyBool_Check(h.ptr())) return h.ptr() == Py_True ? 1.0 : 0.0;
  if (PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) || nb::hasattr(h, "__float__")) return nb::cast<double>(h.attr("__float__")());
  throw TypeError(str(op, ": argument '", arg, "' expected a number, got ",
                      nb::cast<std::string>(nb::str(h.type().attr("__name__")))));
}

// Writes r into self (autograd-aware copy) and returns self: in-place forms of composite ops.
// `read`: the tensor operands r was computed from, which get PyTorch's partial-overlap check
// against self (r itself is fresh, so the values are right either way).
static nb::object assign(H self, const Tensor& r, const char* op = nullptr, const TensorList& read = {}) {
  Tensor x = nb::cast<Tensor>(self);
  for (const Tensor& t : read)
    if (t.defined() && t.same_storage(x)) assert_no_partial_overlap(x, t, op);
  dispatch_inplace(OpId::Copy, x, {expand(r, x.shape())}, {{"dtype", x.dtype()}});
  return nb::borrow<nb::object>(self);
}

static nb::object inplace(H self, OpId id, TensorList extra, const Attrs& attrs = {}) {
  Tensor x = nb::cast<Tensor>(self);
  TensorList ins{x};
  for (Tensor& t : extra) ins.push_back(t);
  dispatch_inplace(id, x, ins, attrs);
  return nb::borrow<nb::object>(self);
}

// clamp's bounds: numbers become attrs (int or float, for promotion); tensors use the where form.
static Attrs clamp_attrs(H lo, H hi) {
  Attrs a;
  auto put = [&](const char* k, H h) {
    if (h.is_none()) return;
    if (PyBool_Check(h.ptr())) a.set(k, static_cast<int64_t>(h.ptr() == Py_True));
    else if (PyLong_Check(h.ptr())) a.set(k, to_int64(h, "clamp", k));
    else a.set(k, number(h, "clamp", k));
  };
  put("min", lo);
  put("max", hi);
  return a;
}

static Tensor clamp_any(const Tensor& x, H lo, H hi) {
  if (lo.is_none() && hi.is_none()) throw ValueError("clamp: at least one of 'min' or 'max' must not be None");
  if (is_tensor(lo) || is_tensor(hi)) {
    Tensor l = lo.is_none() ? Tensor() : TT(lo, "clamp", "min");
    Tensor h = hi.is_none() ? Tensor() : TT(hi, "clamp", "max");
    return clamp(x, l, h);
  }
  return dispatch1(OpId::Clamp, {x}, clamp_attrs(lo, hi));
}

static Tensor masked_fill_any(const Tensor& x, const Tensor& mask, H value) {
  if (is_tensor(value)) {
    Tensor v = nb::cast<Tensor>(value);
    LUCID_CHECK(v.ndim() == 0, ValueError, "masked_fill: only supports a 0-dimensional value tensor, but got tensor with ",
                v.ndim(), " dimension(s)");
    LUCID_CHECK(mask.dtype() == DType::Bool, TypeError, "masked_fill: argument 'mask' expected a bool tensor, got ",
                dtype_name(mask.dtype()));
    return where(mask, cast(v, x.dtype()), x);
  }
  return dispatch1(OpId::MaskedFill, {x, mask}, {{"value", number(value, "masked_fill", "value")}});
}

static Tensor scaled(const Tensor& other, H alpha, const char* op) {
  return is_one(alpha) ? other : mul(other, TT(alpha, op, "alpha"));
}

static Tensor div_mode(const Tensor& a, const Tensor& b, H mode) {
  if (mode.is_none()) return div(a, b);
  std::string m = nb::cast<std::string>(mode);
  if (m == "floor") return floor_divide(a, b);
  if (m == "trunc") {
    DType rt = result_type({a, b});
    if (is_floating(rt)) return trunc(div(a, b));
    return cast(trunc(div(a, b)), rt);
  }
  throw ValueError(str("div: expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", m, "'"));
}

// torch.round(x, decimals=d): round(x * 10^d) / 10^d (x / 10^-d ... * 10^-d for d < 0).
static Tensor round_decimals(const Tensor& x, int64_t d) {
  if (d == 0) return round(x);
  LUCID_CHECK(is_floating(x.dtype()), TypeError, "round: decimals is only supported for floating point tensors, got ",
              dtype_name(x.dtype()));
  double p = 1.0;
  for (int64_t i = 0; i < (d < 0 ? -d : d); ++i) p *= 10.0;
  if (d > 0) return div(round(mul(x, scalar_tensor(p))), scalar_tensor(p));
  return mul(round(div(x, scalar_tensor(p))), scalar_tensor(p));
}

#define EW_UNARY_BIND(name, fn, id)                                                                 \
  m.def(#name, [](const Tensor& x) { return fn(x); }, nb::arg("input"));                           \
  redef(m, #name, [](const Tensor& x) { return fn(x); });                                     \
  redef(m, #name "_", [](H self) { return inplace(self, OpId::id, {}); })

#define EW_UNARY_BIND_NOINPLACE(name, fn)                                \
  m.def(#name, [](const Tensor& x) { return fn(x); }, nb::arg("input")); \
  redef(m, #name, [](const Tensor& x) { return fn(x); })

#define EW_BINARY_BIND(name, fn, id)                                                                       \
  m.def(#name, [](H a, H b) { return fn(TT(a, #name, "input"), TT(b, #name, "other")); }, nb::arg("input"), \
        nb::arg("other"));                                                                                 \
  redef(m, #name, [](const Tensor& a, H b) { return fn(a, TT(b, #name, "other")); }, nb::arg("other")); \
  redef(m, #name "_", [](H self, H b) { return inplace(self, OpId::id, {TT(b, #name "_", "other")}); }, nb::arg("other"))

// Python operator: returns NotImplemented for operands that are neither tensors nor numbers.
#define EW_OPERATOR(pyname, expr)                                       \
  redef(m, pyname, [](const Tensor& a, H b) -> nb::object {               \
    if (!is_operand(b)) return nb::borrow<nb::object>(Py_NotImplemented); \
    Tensor o = TT(b, pyname, "other");                                    \
    return nb::cast(expr);                                                \
  }, nb::arg("other").none())

LUCID_BINDER(elementwise) {
  // ---- unary math ----
  EW_UNARY_BIND(abs, abs, Abs);
  EW_UNARY_BIND(exp, exp, Exp);
  EW_UNARY_BIND(log, log, Log);
  EW_UNARY_BIND(log1p, log1p, Log1p);
  EW_UNARY_BIND(log2, log2, Log2);
  EW_UNARY_BIND(log10, log10, Log10);
  EW_UNARY_BIND(expm1, expm1, Expm1);
  EW_UNARY_BIND(sqrt, sqrt, Sqrt);
  EW_UNARY_BIND(rsqrt, rsqrt, Rsqrt);
  EW_UNARY_BIND(reciprocal, reciprocal, Reciprocal);
  EW_UNARY_BIND(square, square, Square);
  EW_UNARY_BIND(sin, sin, Sin);
  EW_UNARY_BIND(cos, cos, Cos);
  EW_UNARY_BIND(tanh, tanh, Tanh);
  EW_UNARY_BIND(sigmoid, sigmoid, Sigmoid);
  EW_UNARY_BIND(erf, erf, Erf);
  EW_UNARY_BIND(sign, sign, Sign);
  EW_UNARY_BIND(floor, floor, Floor);
  EW_UNARY_BIND(ceil, ceil, Ceil);
  EW_UNARY_BIND(trunc, trunc, Trunc);
  EW_UNARY_BIND(relu, relu, Relu);
  EW_UNARY_BIND(bitwise_not, bitwise_not, BitwiseNot);
  EW_UNARY_BIND_NOINPLACE(isnan, isnan);
  EW_UNARY_BIND_NOINPLACE(isinf, isinf);
  EW_UNARY_BIND_NOINPLACE(logical_not, logical_not);
  m.def("round", [](const Tensor& x, int64_t d) { return round_decimals(x, d); }, nb::arg("input"), nb::kw_only(),
        nb::arg("decimals") = 0);
  redef(m, "round", [](const Tensor& x, int64_t d) { return round_decimals(x, d); }, nb::kw_only(), nb::arg("decimals") = 0);
  redef(m, "round_", [](H self, int64_t d) -> nb::object {
    if (d == 0) return inplace(self, OpId::Round, {});
    Tensor x = nb::cast<Tensor>(self);
    return assign(self, round_decimals(cast(x, x.dtype()), d));
  }, nb::kw_only(), nb::arg("decimals") = 0);
  redef(m, "neg", [](const Tensor& x) { return neg(x); });
  redef(m, "negative", [](const Tensor& x) { return neg(x); });
  redef(m, "__pos__", [](const Tensor& x) { return x; });
  auto isclose_f = [](const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
    return isclose(a, b, rtol, atol, equal_nan);
  };
  auto allclose_f = [](const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
    return allclose(a, b, rtol, atol, equal_nan);
  };
  m.def("isclose", isclose_f, nb::arg("input"), nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8,
        nb::arg("equal_nan") = false);
  redef(m, "isclose", isclose_f, nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8, nb::arg("equal_nan") = false);
  m.def("allclose", allclose_f, nb::arg("input"), nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8,
        nb::arg("equal_nan") = false);
  redef(m, "allclose", allclose_f, nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8,
        nb::arg("equal_nan") = false);
  m.def("isfinite", [](const Tensor& x) { return logical_not(logical_or(isnan(x), isinf(x))); }, nb::arg("input"));
  redef(m, "isfinite", [](const Tensor& x) { return logical_not(logical_or(isnan(x), isinf(x))); });
  redef(m, "__abs__", [](const Tensor& x) { return abs(x); });
  redef(m, "__invert__", [](const Tensor& x) { return bitwise_not(x); });

  // ---- binary math ----
  EW_BINARY_BIND(maximum, maximum, Maximum);
  EW_BINARY_BIND(minimum, minimum, Minimum);
  EW_BINARY_BIND(remainder, remainder, Remainder);
  EW_BINARY_BIND(floor_divide, floor_divide, FloorDivide);
  EW_BINARY_BIND(eq, eq, Eq);
  EW_BINARY_BIND(ne, ne, Ne);
  EW_BINARY_BIND(lt, lt, Lt);
  EW_BINARY_BIND(le, le, Le);
  EW_BINARY_BIND(gt, gt, Gt);
  EW_BINARY_BIND(ge, ge, Ge);
  EW_BINARY_BIND(logical_and, logical_and, LogicalAnd);
  EW_BINARY_BIND(logical_or, logical_or, LogicalOr);
  EW_BINARY_BIND(logical_xor, logical_xor, LogicalXor);
  EW_BINARY_BIND(bitwise_and, bitwise_and, BitwiseAnd);
  EW_BINARY_BIND(bitwise_or, bitwise_or, BitwiseOr);
  EW_BINARY_BIND(bitwise_xor, bitwise_xor, BitwiseXor);

  m.def("pow", [](H a, H b) { return pow(TT(a, "pow", "input"), TT(b, "pow", "exponent")); }, nb::arg("input"),
        nb::arg("exponent"));
  redef(m, "pow", [](const Tensor& a, H b) { return pow(a, TT(b, "pow", "exponent")); }, nb::arg("exponent"));
  redef(m, "pow_", [](H self, H b) { return inplace(self, OpId::Pow, {TT(b, "pow_", "exponent")}); }, nb::arg("exponent"));

  EW_OPERATOR("__pow__", pow(a, o));
  EW_OPERATOR("__rpow__", pow(o, a));
  EW_OPERATOR("__eq__", eq(a, o));
  EW_OPERATOR("__ne__", ne(a, o));
  EW_OPERATOR("__lt__", lt(a, o));
  EW_OPERATOR("__le__", le(a, o));
  EW_OPERATOR("__gt__", gt(a, o));
  EW_OPERATOR("__ge__", ge(a, o));
  EW_OPERATOR("__and__", bitwise_and(a, o));
  EW_OPERATOR("__rand__", bitwise_and(o, a));
  EW_OPERATOR("__or__", bitwise_or(a, o));
  EW_OPERATOR("__ror__", bitwise_or(o, a));
  EW_OPERATOR("__xor__", bitwise_xor(a, o));
  EW_OPERATOR("__rxor__", bitwise_xor(o, a));
  EW_OPERATOR("__floordiv__", floor_divide(a, o));
  EW_OPERATOR("__rfloordiv__", floor_divide(o, a));
  EW_OPERATOR("__mod__", remainder(a, o));
  EW_OPERATOR("__rmod__", remainder(o, a));
  // In-place operators return self (so `p += g` keeps a Parameter a Parameter).
  redef(m, "__iadd__", [](H self, H b) { return inplace(self, OpId::Add, {TT(b, "add_", "other")}); });
  redef(m, "__imul__", [](H self, H b) { return inplace(self, OpId::Mul, {TT(b, "mul_", "other")}); });
  redef(m, "mul_", [](H self, H b) { return inplace(self, OpId::Mul, {TT(b, "mul_", "other")}); }, nb::arg("other"));
  redef(m, "__ipow__", [](H self, H b) { return inplace(self, OpId::Pow, {TT(b, "pow_", "exponent")}); });
  redef(m, "__isub__", [](H self, H b) { return inplace(self, OpId::Sub, {TT(b, "sub_", "other")}); });
  redef(m, "__itruediv__", [](H self, H b) { return inplace(self, OpId::Div, {TT(b, "div_", "other")}); });
  redef(m, "__ifloordiv__", [](H self, H b) { return inplace(self, OpId::FloorDivide, {TT(b, "floor_divide_", "other")}); });
  redef(m, "__imod__", [](H self, H b) { return inplace(self, OpId::Remainder, {TT(b, "remainder_", "other")}); });
  redef(m, "__iand__", [](H self, H b) { return inplace(self, OpId::BitwiseAnd, {TT(b, "bitwise_and_", "other")}); });
  redef(m, "__ior__", [](H self, H b) { return inplace(self, OpId::BitwiseOr, {TT(b, "bitwise_or_", "other")}); });
  redef(m, "__ixor__", [](H self, H b) { return inplace(self, OpId::BitwiseXor, {TT(b, "bitwise_xor_", "other")}); });

  // ---- add / sub / mul / div with torch's keyword arguments ----
  m.def("add", [](H a, H b, H alpha) { return add(TT(a, "add", "input"), scaled(TT(b, "add", "other"), alpha, "add")); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  m.def("sub", [](H a, H b, H alpha) { return sub(TT(a, "sub", "input"), scaled(TT(b, "sub", "other"), alpha, "sub")); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  m.def("div", [](H a, H b, H mode) { return div_mode(TT(a, "div", "input"), TT(b, "div", "other"), mode); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode").none() = nb::none());
  redef(m, "add", [](const Tensor& a, H b, H alpha) { return add(a, scaled(TT(b, "add", "other"), alpha, "add")); },
             nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  redef(m, "sub", [](const Tensor& a, H b, H alpha) { return sub(a, scaled(TT(b, "sub", "other"), alpha, "sub")); },
             nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  redef(m, "mul", [](const Tensor& a, H b) { return mul(a, TT(b, "mul", "other")); }, nb::arg("other"));
  redef(m, "div", [](const Tensor& a, H b, H mode) { return div_mode(a, TT(b, "div", "other"), mode); },
             nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode").none() = nb::none());
  redef(m, "add_", [](H self, H b, H alpha) {
    return inplace(self, OpId::Add, {scaled(TT(b, "add_", "other"), alpha, "add_")});
  }, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  redef(m, "sub_", [](H self, H b, H alpha) {
    return inplace(self, OpId::Sub, {scaled(TT(b, "sub_", "other"), alpha, "sub_")});
  }, nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1);
  redef(m, "div_", [](H self, H b, H mode) -> nb::object {
    Tensor o = TT(b, "div_", "other");
    if (mode.is_none()) return inplace(self, OpId::Div, {o});
    std::string md = nb::cast<std::string>(mode);
    if (md == "floor") return inplace(self, OpId::FloorDivide, {o});
    Tensor x = nb::cast<Tensor>(self);
    return assign(self, div_mode(cast(x, x.dtype()), o, mode), "div_", {o});
  }, nb::arg("other"), nb::kw_only(), nb::arg("rounding_mode").none() = nb::none());

  // ---- where / clamp / masked_fill / lerp / addcmul / addcdiv ----
  m.def("where", [](const Tensor& c, H a, H b) { return where(c, TT(a, "where", "input"), TT(b, "where", "other")); },
        nb::arg("condition"), nb::arg("input"), nb::arg("other"));
  redef(m, "where", [](const Tensor& x, const Tensor& c, H b) { return where(c, x, TT(b, "where", "other")); },
             nb::arg("condition"), nb::arg("other"));
  m.def("clamp", [](const Tensor& x, H lo, H hi) { return clamp_any(x, lo, hi); }, nb::arg("input"),
        nb::arg("min").none() = nb::none(), nb::arg("max").none() = nb::none());
  m.def("clamp_min", [](const Tensor& x, H lo) { return clamp_any(x, lo, nb::none()); }, nb::arg("input"), nb::arg("min"));
  m.def("clamp_max", [](const Tensor& x, H hi) { return clamp_any(x, nb::none(), hi); }, nb::arg("input"), nb::arg("max"));
  redef(m, "clamp", [](const Tensor& x, H lo, H hi) { return clamp_any(x, lo, hi); },
             nb::arg("min").none() = nb::none(), nb::arg("max").none() = nb::none());
  redef(m, "clamp_min", [](const Tensor& x, H lo) { return clamp_any(x, lo, nb::none()); }, nb::arg("min"));
  redef(m, "clamp_max", [](const Tensor& x, H hi) { return clamp_any(x, nb::none(), hi); }, nb::arg("max"));
  auto clamp_ = [](H self, H lo, H hi) -> nb::object {
    Tensor x = nb::cast<Tensor>(self);
    if (lo.is_none() && hi.is_none()) throw ValueError("clamp_: at least one of 'min' or 'max' must not be None");
    if (is_tensor(lo) || is_tensor(hi))
      return assign(self, clamp_any(cast(x, x.dtype()), lo, hi), "clamp_",
                    {is_tensor(lo) ? nb::cast<Tensor>(lo) : Tensor(), is_tensor(hi) ? nb::cast<Tensor>(hi) : Tensor()});
    return inplace(self, OpId::Clamp, {}, clamp_attrs(lo, hi));
  };
  redef(m, "clamp_", clamp_, nb::arg("min").none() = nb::none(), nb::arg("max").none() = nb::none());
  redef(m, "clip", [](const Tensor& x, H lo, H hi) { return clamp_any(x, lo, hi); },
        nb::arg("min").none() = nb::none(), nb::arg("max").none() = nb::none());
  redef(m, "clip_", clamp_, nb::arg("min").none() = nb::none(), nb::arg("max").none() = nb::none());
  redef(m, "clamp_min_", [clamp_](H self, H lo) { return clamp_(self, lo, nb::none()); }, nb::arg("min"));
  redef(m, "clamp_max_", [clamp_](H self, H hi) { return clamp_(self, nb::none(), hi); }, nb::arg("max"));

  m.def("masked_fill", [](const Tensor& x, const Tensor& mask, H v) { return masked_fill_any(x, mask, v); },
        nb::arg("input"), nb::arg("mask"), nb::arg("value"));
  redef(m, "masked_fill", [](const Tensor& x, const Tensor& mask, H v) { return masked_fill_any(x, mask, v); },
             nb::arg("mask"), nb::arg("value"));
  redef(m, "masked_fill_", [](H self, const Tensor& mask, H v) -> nb::object {
    if (is_tensor(v)) {
      Tensor x = nb::cast<Tensor>(self);
      return assign(self, masked_fill_any(cast(x, x.dtype()), mask, v));
    }
    return inplace(self, OpId::MaskedFill, {mask}, {{"value", number(v, "masked_fill_", "value")}});
  }, nb::arg("mask"), nb::arg("value"));

  m.def("lerp", [](const Tensor& s, const Tensor& e, H w) { return lerp(s, e, TT(w, "lerp", "weight")); },
        nb::arg("input"), nb::arg("end"), nb::arg("weight"));
  redef(m, "lerp", [](const Tensor& s, const Tensor& e, H w) { return lerp(s, e, TT(w, "lerp", "weight")); },
             nb::arg("end"), nb::arg("weight"));
  redef(m, "lerp_", [](H self, const Tensor& e, H w) { return inplace(self, OpId::Lerp, {e, TT(w, "lerp_", "weight")}); },
             nb::arg("end"), nb::arg("weight"));

  m.def("addcmul", [](const Tensor& x, const Tensor& a, const Tensor& b, H v) { return addcmul(x, a, b, number(v, "addcmul", "value")); },
        nb::arg("input"), nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);
  m.def("addcdiv", [](const Tensor& x, const Tensor& a, const Tensor& b, H v) { return addcdiv(x, a, b, number(v, "addcdiv", "value")); },
        nb::arg("input"), nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);
  redef(m, "addcmul", [](const Tensor& x, const Tensor& a, const Tensor& b, H v) { return addcmul(x, a, b, number(v, "addcmul", "value")); },
             nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);
  redef(m, "addcdiv", [](const Tensor& x, const Tensor& a, const Tensor& b, H v) { return addcdiv(x, a, b, number(v, "addcdiv", "value")); },
             nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);
  redef(m, "addcmul_", [](H self, const Tensor& a, const Tensor& b, H v) {
    return inplace(self, OpId::Addcmul, {a, b}, {{"value", number(v, "addcmul_", "value")}});
  }, nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);
  redef(m, "addcdiv_", [](H self, const Tensor& a, const Tensor& b, H v) {
    return inplace(self, OpId::Addcdiv, {a, b}, {{"value", number(v, "addcdiv_", "value")}});
  }, nb::arg("tensor1"), nb::arg("tensor2"), nb::kw_only(), nb::arg("value") = 1);

  redef(m, "copy_", [](H self, const Tensor& src, bool non_blocking) {
    copy_(nb::cast<Tensor>(self), src, non_blocking);
    return nb::borrow<nb::object>(self);
  }, nb::arg("src"), nb::arg("non_blocking") = false);

  // ---- activations (torch.nn.functional signatures; the Python wrappers add `inplace`) ----
  EW_UNARY_BIND(relu6, relu6, Relu6);
  EW_UNARY_BIND(silu, silu, Silu);
  EW_UNARY_BIND(hardswish, hardswish, Hardswish);
  EW_UNARY_BIND(hardsigmoid, hardsigmoid, Hardsigmoid);
  m.def("leaky_relu", [](const Tensor& x, double s) { return leaky_relu(x, s); }, nb::arg("input"), nb::arg("negative_slope") = 0.01);
  m.def("elu", [](const Tensor& x, double a) { return elu(x, a); }, nb::arg("input"), nb::arg("alpha") = 1.0);
  m.def("gelu", [](const Tensor& x, const std::string& ap) { return gelu(x, ap); }, nb::arg("input"), nb::arg("approximate") = "none");
  m.def("hardtanh", [](const Tensor& x, double lo, double hi) { return hardtanh(x, lo, hi); }, nb::arg("input"),
        nb::arg("min_val") = -1.0, nb::arg("max_val") = 1.0);
  m.def("softplus", [](const Tensor& x, double b, double t) { return softplus(x, b, t); }, nb::arg("input"),
        nb::arg("beta") = 1.0, nb::arg("threshold") = 20.0);
  EW_UNARY_BIND(selu, selu, Selu);
  EW_UNARY_BIND(mish, mish, Mish);
  EW_UNARY_BIND_NOINPLACE(softsign, softsign);
  EW_UNARY_BIND_NOINPLACE(logsigmoid, logsigmoid);
  EW_UNARY_BIND_NOINPLACE(tanhshrink, tanhshrink);
  m.def("celu", [](const Tensor& x, double a) { return celu(x, a); }, nb::arg("input"), nb::arg("alpha") = 1.0);
  m.def("softshrink", [](const Tensor& x, double l) { return softshrink(x, l); }, nb::arg("input"), nb::arg("lambd") = 0.5);
  m.def("hardshrink", [](const Tensor& x, double l) { return hardshrink(x, l); }, nb::arg("input"), nb::arg("lambd") = 0.5);
  redef(m, "softshrink", [](const Tensor& x, double l) { return softshrink(x, l); }, nb::arg("lambd") = 0.5);
  redef(m, "hardshrink", [](const Tensor& x, double l) { return hardshrink(x, l); }, nb::arg("lambd") = 0.5);
  m.def("threshold", [](const Tensor& x, double t, double v) { return threshold(x, t, v); }, nb::arg("input"),
        nb::arg("threshold"), nb::arg("value"));
  m.def("_celu_", [](H self, double a) { return inplace(self, OpId::Celu, {}, {{"alpha", a}}); });
  m.def("_threshold_", [](H self, double t, double v) {
    return inplace(self, OpId::Threshold, {}, {{"threshold", t}, {"value", v}});
  });
  m.def("_leaky_relu_", [](H self, double s) { return inplace(self, OpId::LeakyRelu, {}, {{"negative_slope", s}}); });
  m.def("_elu_", [](H self, double a) { return inplace(self, OpId::Elu, {}, {{"alpha", a}}); });
  m.def("_hardtanh_", [](H self, double lo, double hi) { return inplace(self, OpId::Hardtanh, {}, {{"min_val", lo}, {"max_val", hi}}); });

  // ---- more unary math (elementwise_math.cpp); the arc* aliases are set in lucid/_ops_math.py ----
  EW_UNARY_BIND(tan, tan, Tan);
  EW_UNARY_BIND(asin, asin, Asin);
  EW_UNARY_BIND(acos, acos, Acos);
  EW_UNARY_BIND(atan, atan, Atan);
  EW_UNARY_BIND(sinh, sinh, Sinh);
  EW_UNARY_BIND(cosh, cosh, Cosh);
  EW_UNARY_BIND(asinh, asinh, Asinh);
  EW_UNARY_BIND(acosh, acosh, Acosh);
  EW_UNARY_BIND(atanh, atanh, Atanh);
  EW_UNARY_BIND(erfc, erfc, Erfc);
  EW_UNARY_BIND(erfinv, erfinv, Erfinv);
  EW_BINARY_BIND(atan2, atan2, Atan2);
  EW_UNARY_BIND(lgamma, lgamma, Lgamma);
  EW_UNARY_BIND(digamma, digamma, Digamma);
  m.def("polygamma", [](int64_t n, const Tensor& x) { return polygamma(n, x); }, nb::arg("n"), nb::arg("input"));
  redef(m, "polygamma", [](const Tensor& x, int64_t n) { return polygamma(n, x); }, nb::arg("n"));
  redef(m, "polygamma_", [](H self, int64_t n) { return inplace(self, OpId::Polygamma, {}, {{"n", n}}); }, nb::arg("n"));
}

}  // namespace lucid::py
