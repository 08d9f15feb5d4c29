// Binary and ternary elementwise ops: pow, maximum, minimum, floor_divide, remainder, the
// comparisons (bool output), logical and bitwise ops, where, lerp, and the ops with scalar
// attributes (clamp, masked_fill, addcmul, addcdiv). One functor (scalar_functors.h) + builder + a
// VJP written with ops each; comparisons, logical and bitwise ops are non-differentiable.
#include "lucid/ops/elementwise.h"
#include "lucid/ops/elementwise_attr.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid {

static Tensor sc(double v) { return scalar_tensor(v); }

#define EW_BINARY(Name, Functor, Rule, Domain) \
  elementwise_op<OpId::Name, sm::Functor, 2, EwDType::Rule, EwDomain::Domain>()

// A 0-d wrapped number's value (Python scalar operand), for VJPs that do host arithmetic on it.
static bool wrapped_value(const Tensor& t, double& v) {
  if (!t.defined() || !t.impl()->is_wrapped_number) return false;
  LUCID_DISPATCH_ALL(t.dtype(), "pow", [&] { v = static_cast<double>(static_cast<compute_t<scalar_t>>(*t.data<scalar_t>())); });
  return true;
}

// ---- pow ----------------------------------------------------------------------------------
LUCID_REGISTER_OP(Pow, "", [] {
  OpDef d = EW_BINARY(Pow, Pow, Same, Numeric);
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
  OpDef d = EW_BINARY(Maximum, Maximum, Same, All);
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return minmax_vjp(c, true); };
  return d;
}());

LUCID_REGISTER_OP(Minimum, "", [] {
  OpDef d = EW_BINARY(Minimum, Minimum, Same, All);
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return minmax_vjp(c, false); };
  return d;
}());

// ---- floor_divide / remainder -------------------------------------------------------------
// Integer division by zero raises, as PyTorch on CPU ("ZeroDivisionError"), before anything is
// written: the eager kernel scans the divisor first. (The compiler's fused elementwise blocks
// have no error path, so ew_group leaves integer floor_divide and remainder out of them.)
template <OpId Id>
struct ZeroCheckedDivision {
  static inline KernelFn inner = nullptr;  // the elementwise kernel
  static void run(const TensorList& in, const TensorList& out, const Attrs& a) {
    if (is_integral(out[0].dtype())) {
      Tensor b = in[1].contiguous_data();
      bool zero = false;
      LUCID_DISPATCH_ALL(b.dtype(), op_def(Id).api_name, [&] {
        const scalar_t* p = b.data<scalar_t>();
        for (int64_t i = 0, n = b.numel(); i < n && !zero; ++i) zero = p[i] == scalar_t(0);
      });
      LUCID_CHECK(!zero, Error, op_def(Id).api_name, ": ZeroDivisionError (integer division by zero)");
    }
    inner(in, out, a);
  }
};

template <OpId Id>
static OpDef zero_checked(OpDef d) {
  ZeroCheckedDivision<Id>::inner = d.cpu_kernel;
  d.cpu_kernel = &ZeroCheckedDivision<Id>::run;
  return d;
}

LUCID_REGISTER_OP(FloorDivide, "", [] {
  OpDef d = zero_checked<OpId::FloorDivide>(EW_BINARY(FloorDivide, FloorDivide, Same, Numeric));
  d.vjp = [](const VjpContext& c) {
    TensorList r(2);
    for (int i = 0; i < 2; ++i)
      if (c.needs_grad[i]) r[i] = zeros_like(c.grads[0]);
    return r;
  };
  return d;
}());

LUCID_REGISTER_OP(Remainder, "", [] {
  OpDef d = zero_checked<OpId::Remainder>(EW_BINARY(Remainder, Remainder, Same, Numeric));
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
#define EW_NONDIFF(Name, Rule, Domain)                \
  LUCID_REGISTER_OP(Name, "", [] {                    \
    OpDef d = EW_BINARY(Name, Name, Rule, Domain);    \
    d.differentiable = false;                         \
    return d;                                         \
  }())

EW_NONDIFF(Eq, Bool, All);
EW_NONDIFF(Ne, Bool, All);
EW_NONDIFF(Lt, Bool, All);
EW_NONDIFF(Le, Bool, All);
EW_NONDIFF(Gt, Bool, All);
EW_NONDIFF(Ge, Bool, All);
EW_NONDIFF(LogicalAnd, BoolInputs, All);
EW_NONDIFF(LogicalOr, BoolInputs, All);
EW_NONDIFF(LogicalXor, BoolInputs, All);
EW_NONDIFF(BitwiseAnd, Same, Integral);
EW_NONDIFF(BitwiseOr, Same, Integral);
EW_NONDIFF(BitwiseXor, Same, Integral);

// ---- where --------------------------------------------------------------------------------
// Eager kernel: the condition is read as bool (no cast pass); input/other are cast to the result
// dtype when needed. The fused-elementwise lowering uses the generic ternary block.
static void where_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& o = out[0];
  DType t = o.dtype();
  auto as_t = [t](const Tensor& x) {
    if (x.dtype() == t) return x;
    Tensor u = Tensor::empty(x.shape(), t);
    cpu::copy_into(u, x);
    return u;
  };
  Tensor a = as_t(in[1]), b = as_t(in[2]);
  const Tensor& cond = in[0];
  cpu::StridedIter it({&o, &cond, &a, &b});
  LUCID_DISPATCH_ALL(t, "where", [&] {
    it.for_each([](char** p, const int64_t* s, int64_t n) {
      using T = scalar_t;
      const int64_t sz = sizeof(T);
      T* op = reinterpret_cast<T*>(p[0]);
      const uint8_t* cp = reinterpret_cast<const uint8_t*>(p[1]);  // bool bytes; uint8 vectorises
      const T* ap = reinterpret_cast<const T*>(p[2]);
      const T* bp = reinterpret_cast<const T*>(p[3]);
      // Both values are loaded before the select, so the loops if-convert and vectorise.
      if (s[0] == sz && s[1] == 1) {
        if (s[2] == sz && s[3] == sz) {
          for (int64_t i = 0; i < n; ++i) { T a = ap[i], b = bp[i]; op[i] = cp[i] != 0 ? a : b; }
          return;
        }
        if (s[2] == sz && s[3] == 0) {
          const T b = bp[0];
          for (int64_t i = 0; i < n; ++i) { T a = ap[i]; op[i] = cp[i] != 0 ? a : b; }
          return;
        }
        if (s[2] == 0 && s[3] == sz) {
          const T a = ap[0];
          for (int64_t i = 0; i < n; ++i) { T b = bp[i]; op[i] = cp[i] != 0 ? a : b; }
          return;
        }
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const bool*>(p[1] + i * s[1])
                                                     ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                                     : *reinterpret_cast<const T*>(p[3] + i * s[3]);
    });
  });
}

LUCID_REGISTER_OP(Where, "", [] {
  OpDef d = elementwise_op<OpId::Where, sm::Where, 3, EwDType::Same, EwDomain::All>();
  d.cpu_kernel = where_kernel;
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
  OpDef d = elementwise_op<OpId::Lerp, sm::Lerp, 3, EwDType::Same, EwDomain::Floating>();
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
static Tensor attr_scalar(const Attrs& a, const char* k) {
  for (const auto& [key, v] : a.items()) {
    if (key != k) continue;
    if (std::holds_alternative<int64_t>(v)) return scalar_tensor(std::get<int64_t>(v));
    if (std::holds_alternative<bool>(v)) return scalar_tensor_bool(std::get<bool>(v));
    return scalar_tensor(a.f(k));
  }
  return Tensor();
}

struct ClampF : sm::Clamp {
  static DType compute_dtype(const TensorList& in, const Attrs& a) {
    LUCID_CHECK(a.has("min") || a.has("max"), ValueError, "clamp: at least one of 'min' or 'max' must not be None");
    return result_type({in[0], attr_scalar(a, "min"), attr_scalar(a, "max")});
  }
};
template <> struct FromAttrs<ClampF> {
  static ClampF make(const Attrs& a) { return {FromAttrs<sm::Clamp>::make(a)}; }
};

LUCID_REGISTER_OP(Clamp, "min:float?, max:float?", [] {
  OpDef d = elementwise_attr_op<OpId::Clamp, ClampF, 1, EwDType::Same, EwDomain::Numeric>();
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
struct MaskedFillF : sm::MaskedFill {
  static DType compute_dtype(const TensorList& in, const Attrs&) {
    LUCID_CHECK(in[1].dtype() == DType::Bool, TypeError, "masked_fill: argument 'mask' expected a bool tensor, got ",
                dtype_name(in[1].dtype()));
    return in[0].dtype();
  }
};
template <> struct FromAttrs<MaskedFillF> {
  static MaskedFillF make(const Attrs& a) { return {FromAttrs<sm::MaskedFill>::make(a)}; }
};

// Eager kernel: reads the bool mask directly (the attr-op builder would cast it to x's dtype).
static void masked_fill_kernel(const TensorList& in, const TensorList& out, const Attrs& attrs) {
  const Tensor &o = out[0], &x = in[0], &mask = in[1];
  const double value = attrs.f("value");
  cpu::StridedIter it({&o, &x, &mask});
  LUCID_DISPATCH_ALL(o.dtype(), "masked_fill", [&] {
    using T = scalar_t;
    const T v = static_cast<T>(static_cast<compute_t<T>>(value));
    it.for_each([v0 = v](char** p, const int64_t* s, int64_t n) {
      const T v = v0;  // a local: stores to the output can't change it
      if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 1) {
        T* op = reinterpret_cast<T*>(p[0]);
        const T* xp = reinterpret_cast<const T*>(p[1]);
        const uint8_t* mp = reinterpret_cast<const uint8_t*>(p[2]);  // bool bytes; uint8 vectorises
        for (int64_t i = 0; i < n; ++i) { T a = xp[i]; op[i] = mp[i] != 0 ? v : a; }
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            *reinterpret_cast<const bool*>(p[2] + i * s[2]) ? v : *reinterpret_cast<const T*>(p[1] + i * s[1]);
    });
  });
}

LUCID_REGISTER_OP(MaskedFill, "value:float", [] {
  OpDef d = elementwise_attr_op<OpId::MaskedFill, MaskedFillF, 2, EwDType::Same, EwDomain::All>();
  d.cpu_kernel = masked_fill_kernel;
  d.nondiff_inputs = {1};
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) { return TensorList{where(c.inputs[1], sc(0.0), c.grads[0]), Tensor()}; };
  return d;
}());

// ---- addcmul / addcdiv --------------------------------------------------------------------
LUCID_REGISTER_OP(Addcmul, "value:float", [] {
  OpDef d = elementwise_attr_op<OpId::Addcmul, sm::Addcmul, 3, EwDType::Same, EwDomain::Numeric>();
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
  OpDef d = elementwise_attr_op<OpId::Addcdiv, sm::Addcdiv, 3, EwDType::Same, EwDomain::Floating>();
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
