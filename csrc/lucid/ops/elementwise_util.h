// Builder of the elementwise op records from the functor table (ops/list/elementwise_functors.def,
// read through ElementwiseFunctor<Id>, ops/elementwise_functors.h). elementwise_op<Id>() gives the
// device-neutral parts every elementwise op shares: arity, infer (broadcast shape, dtype rule, the
// functor's dtype domain, attribute validation), the dtype mask and rule, and the lowering:
// Elementwise, so the compiler fuses it (a fused body's node keeps its Attrs, from which the
// backend's fused runtime builds a functor with parameters, as the eager kernel does). The caller
// sets vjp, save and differentiable. The kernels are not here: each backend expands the same
// table into its own (the CPU's row loops, backends/cpu/kernels/elementwise_*.cpp), so the math
// stays the functor's, written once.
#pragma once
#include <cstdint>
#include <vector>

#include "lucid/dispatch/dispatch.h"
#include "lucid/ops/elementwise_functors.h"
#include "lucid/ops/functor_attrs.h"
#include "lucid/ops/op_def.h"

namespace lucid {

// The dtype a plain elementwise op computes in: bool for BoolInputs, else the inputs' result
// type (integers promoting to the default float under Float).
DType elementwise_compute_dtype(EwDType rule, const TensorList& inputs);

// The dtype plain op `id`'s kernels compute in: the rule's, except that a Half/BFloat16 compute
// dtype becomes Float32 when the op's float_scalar_input (OpDef) is a 0-d tensor of another dtype,
// so the scalar is read at float precision and the result rounded once, as ATen does. The result
// dtype (infer) is unchanged; the kernels store the float32 result into it.
DType elementwise_compute_dtype(OpId id, EwDType rule, const TensorList& inputs);

template <class F>
concept HasAttrComputeDType = requires(const TensorList& in, const Attrs& a) { FromAttrs<F>::compute_dtype(in, a); };

// The dtype op Id computes in, which its kernels cast the inputs to: the rule's, unless its
// functor's parameters set it (FromAttrs<F>::compute_dtype: clamp's bounds take part in type
// promotion, masked_fill's mask does not).
template <OpId Id>
DType elementwise_compute_dtype(const TensorList& in, const Attrs& a) {
  using R = ElementwiseFunctor<Id>;
  if constexpr (R::kAttrs && HasAttrComputeDType<typename R::Functor>) return FromAttrs<typename R::Functor>::compute_dtype(in, a);
  else return elementwise_compute_dtype(Id, R::kRule, in);
}

// Shape (inputs broadcast) and dtype of a plain elementwise op's result; raises for a compute
// dtype outside the functor's domain.
std::vector<TensorMeta> infer_elementwise(OpId id, EwDType rule, const TensorList& inputs);

// OpDef skeleton of the table's op Id; the caller sets vjp, save and differentiable.
template <OpId Id>
OpDef elementwise_op() {
  using R = ElementwiseFunctor<Id>;
  OpDef d;
  d.num_inputs = R::kArity;
  d.ew_dtypes = ew_domain_dtypes(R::kDomain);
  d.ew_rule = static_cast<uint8_t>(R::kRule);
  d.lowering = Lowering::Elementwise;
  if constexpr (!R::kAttrs) {
    d.infer = [](const TensorList& in, const Attrs&) { return infer_elementwise(Id, R::kRule, in); };
  } else {
    d.infer = [](const TensorList& in, const Attrs& a) {
      const char* name = op_def(Id).api_name;
      Shape shape = in[0].shape();
      for (size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].shape(), name);
      DType c = elementwise_compute_dtype<Id>(in, a);
      LUCID_CHECK(ew_domain_dtypes(R::kDomain) & dtype_bit(c), TypeError, name, ": not implemented for dtype ",
                  dtype_name(c));
      (void)FromAttrs<typename R::Functor>::make(a);  // validates the attributes
      return std::vector<TensorMeta>{{shape, R::kBoolOut ? DType::Bool : c}};
    };
  }
  return d;
}

}  // namespace lucid
