// CUDA C source for FusedElementwise groups: the CUDA backend's grouping rule (which elementwise
// nodes a generated kernel can run, and in which dtype) and the generator that turns one group's
// body graph into one __global__ kernel calling the scalar functors of ops/scalar_functors.h, the
// functors the eager CUDA kernels instantiate (one definition of the math). Host code only, no
// CUDA header and no GPU: tests/cpp/cuda/test_fused_kernels.cpp generates and NVRTC-compiles
// sources on any machine. nvrtc_program.h compiles a program; fused_kernels.h runs its kernels.
//
// A generated kernel computes exactly what the group's eager kernels compute, one op after the
// other: each node computes in the dtype its eager CUDA kernel would (elementwise_compute_dtype<Id>,
// from the same stand-ins the grouping pass asks with), its inputs converted to it with the Copy
// kernel's rules, its result rounded to its recorded dtype (16-bit floats are computed in float
// and rounded after every op, as eager stores them; float32 and float64 results pass a rounding
// boundary that keeps a multiply of one op from contracting with an add of the next into an FMA,
// which eager's separate kernels can't do either). What may still differ is NaN payloads. The iteration space is the group's shape; each input
// is read through per-call strides (0 where it broadcasts), as a scalar, or, when it is a CPU
// 0-d tensor (a Python number, a host constant), by value from the launch arguments (or, while a
// CUDA graph whose host scalars change per call is captured, from the device address the
// argument word holds: its bit in the host-pointer mask, graph_capture.h's GraphScalars). Outputs are
// written contiguously. Attribute functors (gelu's approximation, clamp's bounds) are built on the
// host from the node's Attrs (ops/functor_attrs.h) and passed as bytes in the launch arguments, so
// the source does not depend on attribute values and equal groups share one cached cubin.
//
// Launch arguments: one struct per kernel, passed by value, laid out as the 8-byte words
// FusedArgsLayout describes (the generated struct declares the same fields in the same order).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lucid/compile/ir/graph.h"

namespace lucid::cuda {

constexpr int kFusedMaxDims = 8;     // iteration rank (after dropping size-1 dims)
constexpr int kFusedMaxInputs = 16;  // keeps the argument struct under 2 KB
constexpr int kFusedMaxOutputs = 8;

// The dtype node `op` computes in inside a generated kernel (its eager CUDA kernel's compute
// dtype), given stand-ins of its inputs (ew_stand_in, or the constants themselves) and its recorded
// output dtype; nullopt when a generated kernel can't run it (not in the functor table, attributes
// its infer rejects, a recorded dtype that is not the op's). BackendPasses::fused_elementwise_dtype.
std::optional<DType> cuda_fused_dtype(OpId op, const TensorList& inputs, const Attrs& attrs, DType out);

// Word offsets of the launch-argument struct of a kernel with `inputs` inputs, `outputs` outputs
// and `attr_words` words of functor bytes:
//   n (i64) | ndim, strided mask, scalar mask, 4-wide flag (u32 x4) | host-pointer mask, unused (u32 x2) |
//   size[kFusedMaxDims] | in[inputs] | out[outputs] | stride[inputs][kFusedMaxDims] | host value[inputs] |
//   attr[max(attr_words, 1)]
struct FusedArgsLayout {
  int inputs = 0, outputs = 0, attr_words = 0;
  int host_at() const { return 3; }
  int size() const { return 4; }
  int in() const { return size() + kFusedMaxDims; }
  int out() const { return in() + inputs; }
  int stride() const { return out() + outputs; }
  int host() const { return stride() + inputs * kFusedMaxDims; }
  int attr() const { return host() + inputs; }
  int words() const { return attr() + (attr_words > 0 ? attr_words : 1); }
};

struct FusedKernelSource {
  std::string name;               // the kernel's (extern "C") name
  std::string code;               // its argument struct and definition; empty when refused
  std::string refused;            // why the generator can't run this group (then code is empty)
  std::vector<TensorMeta> inputs, outputs;
  Shape shape;                    // the iteration shape
  std::vector<char> host_input;   // per input: a CPU 0-d tensor, passed by value (or by device address)
  std::vector<uint64_t> attrs;    // the attribute functors' bytes
  FusedArgsLayout layout;
};

// The kernel `name` for the FusedElementwise node `fused` of graph g (its body and, from g, which
// inputs are wrapped Python numbers and which live on the host). Never raises for a body it can't
// handle: `refused` says why.
FusedKernelSource generate_fused_kernel(const ir::Graph& g, const ir::Node& fused, const std::string& name);

// The translation unit of a program: the prelude (include of the functors, 16-bit conversions,
// index helpers) and every kernel's code, in order.
std::string fused_program_source(const std::vector<const FusedKernelSource*>& kernels);

}  // namespace lucid::cuda
