// Builds the scalar functors that have parameters (ops/scalar_functors.h: leaky_relu's slope,
// clamp's bounds, polygamma's n...) from an op's Attrs, validating them. Kept apart from the
// functors so that those stay device-compilable (no Attrs, no strings, no exceptions). The op
// records (infer, ops/elementwise_util.h) and every backend's kernels call FromAttrs<F>::make;
// a functor without a specialisation here has no parameters and can't be an LUCID_EW_ATTR row
// of the functor table. A specialisation may also give compute_dtype(inputs, attrs), the dtype
// the op computes in where its parameters change the rule's (clamp, masked_fill).
#pragma once
#include "lucid/core/error.h"
#include "lucid/dispatch/dispatch.h"
#include "lucid/ops/attrs.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid {

template <class F> struct FromAttrs;

// Attribute k as a 0-d tensor of its kind (int64, bool or float), undefined when absent: a bound
// given as an int64 keeps integer promotion.
inline Tensor attr_scalar(const Attrs& a, const char* k) {
  for (const auto& [key, v] : a.items()) {
    if (key != k) continue;
    if (std::holds_alternative<int64_t>(v)) return scalar_tensor(std::get<int64_t>(v));
    if (std::holds_alternative<bool>(v)) return scalar_tensor_bool(std::get<bool>(v));
    return scalar_tensor(a.f(k));
  }
  return Tensor();
}

template <> struct FromAttrs<sm::LeakyRelu> {
  static sm::LeakyRelu make(const Attrs& a) { return {a.f("negative_slope")}; }
};
template <> struct FromAttrs<sm::Elu> {
  static sm::Elu make(const Attrs& a) { return {a.f("alpha")}; }
};
template <> struct FromAttrs<sm::Softplus> {
  static sm::Softplus make(const Attrs& a) { return {a.f("beta"), a.f("threshold")}; }
};
template <> struct FromAttrs<sm::Hardtanh> {
  static sm::Hardtanh make(const Attrs& a) { return {a.f("min_val"), a.f("max_val")}; }
};
template <> struct FromAttrs<sm::Gelu> {
  static sm::Gelu make(const Attrs& a) { return {a.s("approximate") == "tanh"}; }
};
template <> struct FromAttrs<sm::GeluBackward> {
  static sm::GeluBackward make(const Attrs& a) { return {a.s("approximate") == "tanh"}; }
};
// Clamp's scalar bounds take part in type promotion (an int tensor clamped to 0.5 computes in float).
template <> struct FromAttrs<sm::Clamp> {
  static sm::Clamp make(const Attrs& a) {
    sm::Clamp c;
    if (a.has("min")) { c.has_lo = true; c.lo = a.f("min"); }
    if (a.has("max")) { c.has_hi = true; c.hi = a.f("max"); }
    return c;
  }
  static DType compute_dtype(const TensorList& in, const Attrs& a) {
    LUCID_CHECK(a.has("min") || a.has("max"), ValueError, "clamp: at least one of 'min' or 'max' must not be None");
    DType c = result_type({in[0], attr_scalar(a, "min"), attr_scalar(a, "max")});
    for (const char* k : {"min", "max"})  // a bound must fit the compute dtype, as ATen's Scalar::to
      if (a.has(k)) check_scalar_fits(a.f(k), c, "clamp");
    return c;
  }
};
// masked_fill keeps its input's dtype; the mask is bool and takes no part in promotion.
template <> struct FromAttrs<sm::MaskedFill> {
  static sm::MaskedFill make(const Attrs& a) { return {a.f("value")}; }
  static DType compute_dtype(const TensorList& in, const Attrs& a) {
    LUCID_CHECK(in[1].dtype() == DType::Bool, TypeError, "masked_fill: argument 'mask' expected a bool tensor, got ",
                dtype_name(in[1].dtype()));
    check_scalar_fits(a.f("value"), in[0].dtype(), "masked_fill");
    return in[0].dtype();
  }
};
template <> struct FromAttrs<sm::Addcmul> {
  static sm::Addcmul make(const Attrs& a) { return {a.f("value")}; }
};
template <> struct FromAttrs<sm::Addcdiv> {
  static sm::Addcdiv make(const Attrs& a) { return {a.f("value")}; }
};
template <> struct FromAttrs<sm::Celu> {
  static sm::Celu make(const Attrs& a) {
    sm::Celu c{a.f("alpha")};
    LUCID_CHECK(c.alpha != 0.0, ValueError, "celu: argument 'alpha' must not be zero");
    return c;
  }
};
template <> struct FromAttrs<sm::Softshrink> {
  static sm::Softshrink make(const Attrs& a) {
    sm::Softshrink s{a.f("lambd")};
    LUCID_CHECK(s.lambd >= 0.0, ValueError, "softshrink: argument 'lambd' must be non-negative, got ", s.lambd);
    return s;
  }
};
template <> struct FromAttrs<sm::Hardshrink> {
  static sm::Hardshrink make(const Attrs& a) { return {a.f("lambd")}; }
};
template <> struct FromAttrs<sm::Threshold> {
  static sm::Threshold make(const Attrs& a) { return {a.f("threshold"), a.f("value")}; }
};
template <> struct FromAttrs<sm::Polygamma> {
  static sm::Polygamma make(const Attrs& a) {
    sm::Polygamma p{a.i("n")};
    LUCID_CHECK(p.n >= 0, ValueError, "polygamma: argument 'n' must be non-negative, got ", p.n);
    return p;
  }
};

}  // namespace lucid
