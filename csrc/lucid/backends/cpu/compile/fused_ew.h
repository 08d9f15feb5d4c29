// Part of the CPU backend's compile layer: its executor (executor.cpp) runs FusedElementwise
// nodes here, and ew_block_dtype is its grouping rule for ew_group (backend_passes.cpp).
//
// Block interpreter for FusedElementwise bodies: the first tier that runs a fused elementwise
// group, with no compiler at run time. A FusedProgram is built once from a body graph: per node,
// the op's BlockFn for the dtype the eager kernel would compute in (for an op with parameters,
// gelu's approximation or clamp's bounds, its ParamBlock: the eager kernel's row loop with the
// functor built here from the node's Attrs, once per program, not per call), the casts eager
// would do on its inputs, and scratch registers. run_fused then walks the iteration space in 1024-element
// blocks: inputs are read through their broadcast strides (any strided view), intermediates live
// in small per-thread registers (never materialised at full size), outputs are written
// contiguously. Each op runs the same BlockFn on the same stored dtypes as eager, so results are
// bit-identical to running the ops one by one (one exception: an op with a float32 vector path
// for contiguous rows only, SiluBackward, GeluBackward, Gelu and Elu, takes that path on an
// operand gathered into a register where eager, reading a broadcast or strided operand in place,
// would take its scalar path; the two agree to a few ulp).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "lucid/backends/cpu/elementwise_blocks.h"
#include "lucid/compile/ir/graph.h"
#include "lucid/compile/passes/backend_passes.h"  // ew_stand_in

namespace lucid {

// The dtype an elementwise node's BlockFn runs in, as the eager kernel picks it: the output dtype,
// except comparisons (bool output, computed in the inputs' result type), logical ops (bool), and a
// 16-bit mul/div/lerp whose scalar operand is read at float precision (float32, rounded once into
// the output: elementwise_compute_dtype(OpId, ...)). `inputs` stand for the node's inputs: their
// dtype, rank and wrapped-number flag count (and a wrapped number's value, which pow's check and
// the 16-bit scalar rule read). nullopt when the node can't run on the block
// interpreter: not elementwise, no block for that dtype, attributes its infer rejects, or a
// recorded output dtype `out` that the op would not produce (an in-place write into a narrower
// tensor). `attrs` are the node's: an op with parameters computes in the dtype its infer gives
// (clamp's bounds take part in promotion).
std::optional<DType> ew_block_dtype(OpId op, const TensorList& inputs, const Attrs& attrs, DType out);

struct FusedProgram {
  static constexpr int64_t kBlock = 1024;
  using ConvertFn = void (*)(const char* src, int64_t src_stride, char* dst, int64_t n);

  // wrapped_inputs[i], when defined: body input i is that wrapped Python number (a traced scalar
  // constant), which promotes like one (int_tensor < 0.5 compares in the default float) and whose
  // value decides whether a 16-bit mul reads it at float precision (elementwise_compute_dtype).
  // Empty: none is. Raises Error when the body is not a group of elementwise nodes with outputs of
  // one shape.
  explicit FusedProgram(const ir::Graph& body, std::vector<Tensor> wrapped_inputs = {});

  Shape shape;                           // the iteration shape: every output's
  std::vector<TensorMeta> inputs, outputs;

  // ---- the program (read by run_fused) ----
  // An operand is one value in one dtype for the current block: a register, a body output's
  // memory, or an input read in place.
  struct Operand {
    DType dtype;
    int reg = -1;     // scratch register (kBlock elements), -1 if none
    int output = -1;  // body output it is written to, -1 if none
  };
  enum class StepKind : uint8_t { Load, Cast, Op };
  struct Step {
    StepKind kind;
    int dst = -1;                 // operand written
    int input = -1;               // Load: body input read
    int src[3] = {-1, -1, -1};    // Cast: src[0]; Op: its operands
    int arity = 0;
    cpu::BlockFn fn = nullptr;    // Op: a plain op's block, or
    cpu::ParamBlock param;        // Op: an op with parameters' block, its functor made from the Attrs
    ConvertFn convert = nullptr;  // Load (input dtype -> operand dtype) and Cast
  };
  std::vector<Operand> operands;
  std::vector<Step> steps;  // every Load comes first, so a block's inputs are read before any write
  int num_regs = 0;
  // For in-place runs: the last step that reads input i's memory (a Load that converts reads it
  // at the Load; one that doesn't is read where its operand is used), and the step that writes
  // output k. An output sharing input i's memory exactly needs i copied to a register first only
  // when it is written before that last read.
  std::vector<int> input_last_read, output_write;
  int64_t grain_blocks = 1;  // parallel_for grain in blocks: kParallelGrain elements' work of one op
};

// The wrapped numbers among a FusedElementwise node's inputs in the graph g that holds it: the
// constant for each input that is one, an undefined tensor for the others.
std::vector<Tensor> wrapped_inputs(const ir::Graph& g, const ir::Node& fused);

// Runs p: inputs as the body's inputs (shape and dtype, any strides), outputs allocated by the
// caller (contiguous, the body's shapes and dtypes). An output may share an input's memory exactly
// (in place: same start and element size, the input contiguous at the iteration shape) or overlap
// an input broadcast over the whole iteration space; no other overlap is allowed.
void run_fused(const FusedProgram& p, const TensorList& inputs, const TensorList& outputs);

}  // namespace lucid
