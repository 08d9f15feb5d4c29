// The CPU's row loops of the plain elementwise ops, by (op, compute dtype): the BlockFns that the
// kernels in backends/cpu/kernels/elementwise_*.cpp instantiate from the functor table
// (ops/list/elementwise_functors.def, backends/cpu/elementwise_loops.h), one per dtype of the
// op's functor domain (OpDef::ew_dtypes). The eager kernel runs a block over a StridedIter and the
// compiled fused-elementwise interpreter (backends/cpu/compile/fused_ew.cpp) over 1024-element blocks,
// so the two compute the same bits.
#pragma once
#include <array>
#include <cstdint>

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

}  // namespace lucid::cpu
