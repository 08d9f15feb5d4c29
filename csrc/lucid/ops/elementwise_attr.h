// Builder for elementwise ops whose functor has parameters (leaky_relu's slope, clamp's bounds,
// addcmul's value...). The functor object is made from the op's Attrs (FromAttrs<F>::make,
// ops/functor_attrs.h) and run over a StridedIter; cpu::VecF32<F>::run(f, ...)
// (backends/cpu/scalar_vec.h) gives a float32 contiguous fast path as for plain functors.
// These ops lower as Kernel (the fused-elementwise BlockFn has no attrs).
#pragma once
#include <cstdint>
#include "lucid/ops/elementwise_util.h"
#include "lucid/ops/functor_attrs.h"

namespace lucid {

template <class F>
concept HasVecF32Member = requires(const F& f, float* o, const float* a, int64_t n) { cpu::VecF32<F>::run(f, o, a, n); };

template <class F>
concept HasVec2F32Member = requires(const F& f, float* o, const float* a, const float* b, int64_t n) { cpu::VecF32<F>::run(f, o, a, b, n); };

template <class F>
concept HasComputeDType = requires(const TensorList& in, const Attrs& a) { F::compute_dtype(in, a); };

// Compute dtype of an attr op: F::compute_dtype if given, else the rule (as elementwise ops).
template <class F>
DType ew_attr_compute_dtype(EwDType rule, const TensorList& in, const Attrs& a) {
  if constexpr (HasComputeDType<F>) {
    return F::compute_dtype(in, a);
  } else {
    if (rule == EwDType::BoolInputs) return DType::Bool;
    DType t = result_type(in);
    if (rule == EwDType::Float && !is_floating(t)) t = default_float_dtype();
    return t;
  }
}

inline bool ew_domain_has(EwDomain d, DType t) {
  switch (d) {
    case EwDomain::All: return true;
    case EwDomain::Numeric: return t != DType::Bool;
    case EwDomain::Floating: return is_floating(t);
    case EwDomain::Integral: return !is_floating(t);
  }
  return false;
}

template <class F, class T, class O, int Arity>
void ew_attr_row(const F& fref, char** p, const int64_t* s, int64_t n) {
  using C = compute_t<T>;
  const F f = fref;  // a local copy: the compiler knows stores to o can't change the parameters
  bool contig = s[0] == sizeof(O);
  for (int k = 1; k <= Arity; ++k) contig = contig && s[k] == sizeof(T);
  if (contig) {
    O* o = reinterpret_cast<O*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    if constexpr (Arity == 1) {
      if constexpr (HasVecF32Member<F> && std::is_same_v<T, float> && std::is_same_v<O, float>) {
        cpu::VecF32<F>::run(f, o, a, n);
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f.template apply<C>(static_cast<C>(a[i])));
      }
    } else if constexpr (Arity == 2) {
      const T* b = reinterpret_cast<const T*>(p[2]);
      if constexpr (HasVec2F32Member<F> && std::is_same_v<T, float> && std::is_same_v<O, float>) {
        cpu::VecF32<F>::run(f, o, a, b, n);
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(f.template apply<C>(static_cast<C>(a[i]), static_cast<C>(b[i])));
      }
    } else {
      const T* b = reinterpret_cast<const T*>(p[2]);
      const T* c = reinterpret_cast<const T*>(p[3]);
      for (int64_t i = 0; i < n; ++i)
        o[i] = static_cast<O>(f.template apply<C>(static_cast<C>(a[i]), static_cast<C>(b[i]), static_cast<C>(c[i])));
    }
    return;
  }
  auto ld = [&](int k, int64_t i) { return static_cast<C>(*reinterpret_cast<const T*>(p[k] + i * s[k])); };
  for (int64_t i = 0; i < n; ++i) {
    O* o = reinterpret_cast<O*>(p[0] + i * s[0]);
    if constexpr (Arity == 1) *o = static_cast<O>(f.template apply<C>(ld(1, i)));
    else if constexpr (Arity == 2) *o = static_cast<O>(f.template apply<C>(ld(1, i), ld(2, i)));
    else *o = static_cast<O>(f.template apply<C>(ld(1, i), ld(2, i), ld(3, i)));
  }
}

template <class F, int Arity, bool BoolOut, class T>
void ew_attr_run_typed(const F& f, const TensorList& in, const Tensor& dst) {
  using O = std::conditional_t<BoolOut, bool, T>;
  const Tensor* ops[cpu::kMaxOperands];
  ops[0] = &dst;
  for (int k = 0; k < Arity; ++k) ops[k + 1] = &in[k];
  cpu::StridedIter it(ops, Arity + 1);
  it.for_each([&f](char** p, const int64_t* s, int64_t n) { ew_attr_row<F, T, O, Arity>(f, p, s, n); });
}

template <OpId Id, class F, int Arity, EwDType Rule, EwDomain Domain>
OpDef elementwise_attr_op() {
  constexpr bool kBoolOut = Rule == EwDType::Bool || Rule == EwDType::BoolInputs;
  OpDef d;
  d.num_inputs = Arity;
  d.lowering = Lowering::Kernel;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const char* name = op_def(Id).api_name;
    Shape shape = in[0].shape();
    for (size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].shape(), name);
    DType c = ew_attr_compute_dtype<F>(Rule, in, a);
    LUCID_CHECK(ew_domain_has(Domain, c), TypeError, name, ": not implemented for dtype ", dtype_name(c));
    (void)FromAttrs<F>::make(a);  // validates the attributes
    return std::vector<TensorMeta>{{shape, kBoolOut ? DType::Bool : c}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const char* name = op_def(Id).api_name;
    DType c = ew_attr_compute_dtype<F>(Rule, in, a);
    TensorList cast;
    for (const Tensor& t : in) {
      if (t.dtype() == c) { cast.push_back(t); continue; }
      Tensor u = Tensor::empty(t.shape(), c);
      cpu::copy_into(u, t);
      cast.push_back(u);
    }
    const Tensor& o = out[0];
    DType odt = kBoolOut ? DType::Bool : c;
    Tensor dst = o.dtype() == odt ? o : Tensor::empty(o.shape(), odt);
    const F f = FromAttrs<F>::make(a);
    auto go = [&](auto tag) { ew_attr_run_typed<F, Arity, kBoolOut, typename decltype(tag)::type>(f, cast, dst); };
    if constexpr (Domain == EwDomain::Floating) {
      LUCID_DISPATCH_FLOATING(c, name, [&] { go(std::type_identity<scalar_t>{}); });
    } else if constexpr (Domain == EwDomain::Numeric) {
      LUCID_DISPATCH_NUMERIC(c, name, [&] { go(std::type_identity<scalar_t>{}); });
    } else {
      LUCID_DISPATCH_ALL(c, name, [&] { go(std::type_identity<scalar_t>{}); });
    }
    if (!(dst == o)) cpu::copy_into(o, dst);
  };
  return d;
}

}  // namespace lucid
