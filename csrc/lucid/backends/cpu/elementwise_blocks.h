// The CPU's row loops of the elementwise ops, by (op, compute dtype): the BlockFns that the
// kernels in backends/cpu/kernels/elementwise_*.cpp instantiate from the functor table
// (ops/list/elementwise_functors.def, backends/cpu/elementwise_loops.h), one per dtype of the
// op's functor domain (OpDef::ew_dtypes). The eager kernel runs a block over a StridedIter and the
// compiled fused-elementwise interpreter (backends/cpu/compile/fused_ew.cpp) over 1024-element blocks,
// so the two compute the same bits. An op whose functor has parameters (gelu's approximation,
// clamp's bounds...) has a ParamBlock instead: the same row loop as its eager kernel (ew_attr_row)
// bound to the functor built from a node's Attrs, built once when a fused program is.
#pragma once
#include <array>
#include <cstdint>
#include <memory>

#include "lucid/core/dtype.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

// Inner loop over one row of an elementwise op: ptrs[0] is the output, then the inputs; strides
// in bytes.
using BlockFn = void (*)(char** ptrs, const int64_t* strides, int64_t n);

// op's block for compute dtype c; null when op has none (not a plain elementwise op, or c outside
// its functor's domain).
BlockFn ew_block(OpId op, DType c);

// Sets op's blocks, once, from the kernels' static registration (see kernels/elementwise.h).
void set_ew_blocks(OpId op, const std::array<BlockFn, kNumDTypes>& blocks);

// The row loop of an op whose functor has parameters, with that functor (FromAttrs<F>::make of
// the node's Attrs, ops/functor_attrs.h) as `params`.
struct ParamBlock {
  void (*fn)(const void* params, char** ptrs, const int64_t* strides, int64_t n) = nullptr;
  std::shared_ptr<const void> params;
  void operator()(char** ptrs, const int64_t* strides, int64_t n) const { fn(params.get(), ptrs, strides, n); }
};
using ParamBlockMaker = ParamBlock (*)(DType c, const Attrs& attrs);

// op's block for compute dtype c with its functor made from attrs (which raises as the op's infer
// does for invalid attributes); fn null when op has no parameters or c is outside its domain.
ParamBlock ew_param_block(OpId op, DType c, const Attrs& attrs);
// Whether op's blocks take parameters (ew_param_block serves it, ew_block doesn't).
bool has_ew_param_block(OpId op);

// Sets op's ParamBlock maker, once, from the kernels' static registration.
void set_ew_param_block_maker(OpId op, ParamBlockMaker make);

}  // namespace lucid::cpu
