// The identity of every elementwise op's math, for the op records and for any backend:
// ElementwiseFunctor<OpId> is the row of ops/list/elementwise_functors.def for that op (its
// scalar functor from ops/scalar_functors.h, arity, output dtype rule, dtype domain, and whether
// the functor takes parameters from the op's Attrs). The records read it (ops/elementwise_util.h)
// for infer, lowering and the dtype mask; a backend expands the same .def to instantiate its
// kernels from the same functors. Device-neutral: no kernels, no loops.
#pragma once
#include <cstdint>

#include "lucid/core/dtype.h"
#include "lucid/ops/op_def.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid {

// Output dtype rule of an elementwise op.
enum class EwDType : uint8_t {
  Same,          // result_type of inputs (add, neg)
  Float,         // result_type, integers -> default float (exp, div)
  Bool,          // computes in result_type, writes bool (eq, isnan)
  BoolInputs,    // casts inputs to bool, writes bool (logical_and)
};

// Which dtypes a functor is defined for. Numeric is every dtype but bool; Integral is the
// integer dtypes and bool (bitwise ops).
enum class EwDomain : uint8_t { All, Numeric, Floating, Integral };

static_assert(kNumDTypes <= 16, "OpDef::ew_dtypes holds one bit per DType");
constexpr uint16_t dtype_bit(DType t) { return static_cast<uint16_t>(1u << static_cast<int>(t)); }

// OpDef::ew_dtypes of a domain: one bit per DType (dtype_bit).
constexpr uint16_t ew_domain_dtypes(EwDomain d) {
  constexpr uint16_t floating = dtype_bit(DType::Float32) | dtype_bit(DType::Float64) | dtype_bit(DType::Float16) |
                                dtype_bit(DType::BFloat16);
  constexpr uint16_t integers = dtype_bit(DType::Int64) | dtype_bit(DType::Int32) | dtype_bit(DType::Int8) |
                                dtype_bit(DType::UInt8);
  switch (d) {
    case EwDomain::All: return floating | integers | dtype_bit(DType::Bool);
    case EwDomain::Numeric: return floating | integers;
    case EwDomain::Floating: return floating;
    case EwDomain::Integral: return integers | dtype_bit(DType::Bool);
  }
  return 0;
}

template <OpId Id> struct ElementwiseFunctor;  // defined for the table's ops only

#define LUCID_EW_ROW_(Op, F, Arity, Rule, Domain, Attrs)                                     \
  template <> struct ElementwiseFunctor<OpId::Op> {                                         \
    using Functor = F;                                                                      \
    static constexpr int kArity = Arity;                                                    \
    static constexpr EwDType kRule = EwDType::Rule;                                         \
    static constexpr EwDomain kDomain = EwDomain::Domain;                                   \
    static constexpr bool kAttrs = Attrs;                                                   \
    static constexpr bool kBoolOut = kRule == EwDType::Bool || kRule == EwDType::BoolInputs; \
  };
#define LUCID_EW(Op, F, Arity, Rule, Domain) LUCID_EW_ROW_(Op, lucid::F, Arity, Rule, Domain, false)
#define LUCID_EW_ATTR(Op, F, Arity, Rule, Domain) LUCID_EW_ROW_(Op, lucid::F, Arity, Rule, Domain, true)
#include "lucid/ops/list/elementwise_functors.def"
#undef LUCID_EW_ROW_

}  // namespace lucid
