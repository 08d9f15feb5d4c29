// The CPU's elementwise kernels, expanded from the functor table (ops/list/elementwise_functors.def):
// every row gets a kernel made from its functor's row loops (backends/cpu/elementwise_loops.h),
// and its blocks for the fused-elementwise interpreter (elementwise_blocks.h: BlockFns for a plain
// row, a ParamBlock maker for a row whose functor has parameters).
// The expansion is split over elementwise_unary.cpp, elementwise_binary.cpp and
// elementwise_attr.cpp to keep compile units small; each expands its share with
// LUCID_EW_CPU_ROW(Op, in_this_file). A few ops have their own CPU kernel instead of the
// generic one (has_own_cpu_kernel); their blocks still come from the table.
#pragma once
#include "lucid/backends/cpu/elementwise_blocks.h"
#include "lucid/backends/cpu/elementwise_loops.h"
#include "lucid/ops/elementwise_util.h"

namespace lucid::cpu {

// The generic kernel of a plain op: inputs cast to the compute dtype, its block run over a
// StridedIter (a write into another dtype, in place, goes through a temporary).
void run_elementwise(OpId id, EwDType rule, const TensorList& inputs, const TensorList& outputs);

template <OpId Id>
void elementwise_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  run_elementwise(Id, ElementwiseFunctor<Id>::kRule, in, out);
}

// go(std::type_identity<T>{}) for the C++ type T of dtype c, over the dtypes of functor domain D
// (raises naming `name` for any other).
template <EwDomain D, class Go>
void dispatch_ew_domain(DType c, const char* name, Go&& go) {
  if constexpr (D == EwDomain::Floating) {
    LUCID_DISPATCH_FLOATING(c, name, [&] { go(std::type_identity<scalar_t>{}); });
  } else if constexpr (D == EwDomain::Numeric) {
    LUCID_DISPATCH_NUMERIC(c, name, [&] { go(std::type_identity<scalar_t>{}); });
  } else {
    LUCID_DISPATCH_ALL(c, name, [&] { go(std::type_identity<scalar_t>{}); });
  }
}

// The generic kernel of an op whose functor has parameters: the functor made from the Attrs,
// run by ew_attr_row over a StridedIter in the compute dtype.
template <OpId Id>
void elementwise_attr_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  using R = ElementwiseFunctor<Id>;
  using F = typename R::Functor;
  const char* name = op_def(Id).api_name;
  DType c = elementwise_compute_dtype<Id>(in, a);
  TensorList cast;
  for (const Tensor& t : in) {
    if (t.dtype() == c) { cast.push_back(t); continue; }
    Tensor u = Tensor::empty(t.shape(), c);
    copy_into(u, t);
    cast.push_back(u);
  }
  const Tensor& o = out[0];
  DType odt = R::kBoolOut ? DType::Bool : c;
  Tensor dst = o.dtype() == odt ? o : Tensor::empty(o.shape(), odt);
  const F f = FromAttrs<F>::make(a);
  dispatch_ew_domain<R::kDomain>(c, name, [&](auto tag) {
    ew_attr_run_typed<F, R::kArity, R::kBoolOut, typename decltype(tag)::type>(f, cast, dst);
  });
  if (!(dst == o)) copy_into(o, dst);
}

// Table row Id's ParamBlock for compute dtype c (elementwise_blocks.h): the row loop and functor
// its eager kernel above runs, for the fused-elementwise interpreter.
template <OpId Id>
ParamBlock make_param_block(DType c, const Attrs& a) {
  using R = ElementwiseFunctor<Id>;
  using F = typename R::Functor;
  ParamBlock b;
  if (!(ew_domain_dtypes(R::kDomain) & dtype_bit(c))) return b;
  dispatch_ew_domain<R::kDomain>(c, op_def(Id).api_name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    b.fn = &param_row<F, T, std::conditional_t<R::kBoolOut, bool, T>, R::kArity>;
  });
  b.params = std::make_shared<const F>(FromAttrs<F>::make(a));
  return b;
}

// Ops whose CPU kernel is written by hand rather than expanded: where and masked_fill read their
// bool operand as it is (the generic kernels would cast it), integer floor_divide and remainder
// check the divisor for zero first (elementwise_binary.cpp, elementwise_attr.cpp).
constexpr bool has_own_cpu_kernel(OpId id) {
  return id == OpId::Where || id == OpId::MaskedFill || id == OpId::FloorDivide || id == OpId::Remainder;
}

// Registers table row Id's CPU blocks (or ParamBlock maker) and generic kernel, when Expand holds.
template <OpId Id, bool Expand>
struct ElementwiseCpuRow {
  ElementwiseCpuRow() {
    if constexpr (Expand) {
      using R = ElementwiseFunctor<Id>;
      if constexpr (!R::kAttrs) set_ew_blocks(Id, make_blocks<typename R::Functor, R::kArity, R::kBoolOut, R::kDomain>());
      else set_ew_param_block_maker(Id, &make_param_block<Id>);
      if constexpr (!has_own_cpu_kernel(Id)) {
        if constexpr (R::kAttrs) KernelRegistrar{Id, DeviceType::CPU, &elementwise_attr_kernel<Id>};
        else KernelRegistrar{Id, DeviceType::CPU, &elementwise_kernel<Id>};
      }
    }
  }
};

#define LUCID_EW_CPU_ROW(Op, in_this_file) \
  static const ::lucid::cpu::ElementwiseCpuRow<::lucid::OpId::Op, (in_this_file)> LUCID_CONCAT(lucid_ew_cpu_, Op){};

}  // namespace lucid::cpu
