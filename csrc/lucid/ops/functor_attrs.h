// Builds the scalar functors that have parameters (ops/scalar_functors.h: leaky_relu's slope,
// clamp's bounds, polygamma's n...) from an op's Attrs, validating them. Kept apart from the
// functors so that those stay device-neutral (no Attrs, no strings, no exceptions). The
// attr-op builder (ops/elementwise_attr.h) calls FromAttrs<F>::make; a functor without a
// specialisation here has no parameters and can't be an attr op.
#pragma once
#include "lucid/core/error.h"
#include "lucid/ops/attrs.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid {

template <class F> struct FromAttrs;

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
template <> struct FromAttrs<sm::Clamp> {
  static sm::Clamp make(const Attrs& a) {
    sm::Clamp c;
    if (a.has("min")) { c.has_lo = true; c.lo = a.f("min"); }
    if (a.has("max")) { c.has_hi = true; c.hi = a.f("max"); }
    return c;
  }
};
template <> struct FromAttrs<sm::MaskedFill> {
  static sm::MaskedFill make(const Attrs& a) { return {a.f("value")}; }
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
