// OpDef: the single definition of an op. One record holds the device-neutral parts the engine and
// the compiler need: name, attribute schema, shape/dtype rule (infer), view function, the VJP
// written with ops (so it serves eager autograd and traced backward alike), what to save for
// backward, and the lowering kind the compiler uses. Families register their records with
// LUCID_REGISTER_OP in ops/<family>.cpp; the registry is an array indexed by OpId.
// Kernels are not part of the record's definition: each backend registers its own into the
// record's per-device table with LUCID_REGISTER_KERNEL, from backends/<device>/, and dispatch
// picks the kernel of the inputs' device (op_def(id).kernel(device)).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "lucid/core/tensor.h"
#include "lucid/ops/attr_schema.h"
#include "lucid/ops/attrs.h"

namespace lucid {

enum class OpId : uint16_t {
#define LUCID_OP(name) name,
#include "lucid/ops/op_list.def"
#undef LUCID_OP
  NumOps
};
constexpr int kNumOps = static_cast<int>(OpId::NumOps);

const char* op_name(OpId id);
OpId op_from_name(const std::string& name);  // raises ValueError

// An op result's type. Infer functions set shape and dtype and leave the device at its default
// (except a device_transfer op's, which sets it): every caller that needs it (the tracer,
// ir::check_types) sets it to inputs_device(inputs).
struct TensorMeta {
  Shape shape;
  DType dtype;
  Device device{};
};

using TensorList = std::vector<Tensor>;

inline TensorMeta meta_of(const Tensor& t) { return {t.shape(), t.dtype(), t.device()}; }

// The device of an op's results: its first defined input's that is not a CPU 0-dim tensor (an
// op's inputs share one device, and CPU scalars may join any), else the first defined input's,
// else (an op without tensor inputs, the factories) the thread's factory device.
inline Device inputs_device(const TensorList& inputs) {
  const Tensor* any = nullptr;
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    if (!t.device().is_cpu() || t.ndim() != 0) return t.device();
    if (!any) any = &t;
  }
  return any ? any->device() : factory_device();
}

// Shape and dtype of every output; validates arguments (raises with op, argument, expected, got).
using InferFn = std::vector<TensorMeta> (*)(const TensorList& inputs, const Attrs& attrs);
// Writes outputs, which dispatch has allocated (contiguous) from infer's metas. In-place calls
// pass the destination (possibly strided) as outputs[0].
using KernelFn = void (*)(const TensorList& inputs, const TensorList& outputs, const Attrs& attrs);
// View ops produce outputs that alias inputs[0]'s storage; no allocation, no kernel.
using ViewFn = TensorList (*)(const TensorList& inputs, const Attrs& attrs);

struct VjpContext {
  const TensorList& inputs;   // saved inputs (undefined when the op does not save them)
  const TensorList& outputs;  // saved outputs (idem)
  const TensorList& grads;    // one per output; undefined means zero
  const Attrs& attrs;
  const std::vector<TensorMeta>& input_meta;  // shape and dtype of every input
  const std::vector<bool>& needs_grad;        // per input
};
// Returns one gradient per input (undefined when not needed). Gradients may have a broadcast
// shape or a wider dtype: the engine reduces them to the input's shape and casts them.
using VjpFn = TensorList (*)(const VjpContext& ctx);

enum class Lowering : uint8_t {
  Elementwise,  // a scalar functor (ops/list/elementwise_functors.def), maybe with parameters: fusable
  Kernel,       // opaque kernel call (matmul, conv, reductions...)
  View,         // strided alias
  Decompose,    // composite of other ops (recorded as its parts)
  Random,       // draws from the Philox generator (seed, offset attributes)
};

enum SaveFlags : uint8_t { kSaveNone = 0, kSaveInputs = 1, kSaveOutputs = 2 };

struct OpDef {
  const char* name = nullptr;      // OpId name, as printed in the IR ("BitwiseAnd")
  const char* api_name = nullptr;  // Python API name used in error messages ("bitwise_and")
  int num_inputs = -1;  // -1: variadic
  // The attributes the op takes, "name:type[?], ..." (attr_schema.h); "" for none. Given to
  // LUCID_REGISTER_OP, so every registered op declares one, and parsed there into attr_specs:
  // a malformed schema fails at registration.
  const char* attr_schema = nullptr;
  std::vector<AttrSpec> attr_specs;
  InferFn infer = nullptr;
  // Per device type, registered by the backends (LUCID_REGISTER_KERNEL); null where a backend has
  // no kernel for the op (dispatch raises "not implemented on <device>").
  std::array<KernelFn, kNumDeviceTypes> kernels{};
  ViewFn view = nullptr;
  VjpFn vjp = nullptr;
  bool differentiable = true;     // false = explicit non-differentiable mark (no VJP needed)
  uint8_t save = kSaveNone;
  Lowering lowering = Lowering::Kernel;
  // Ops of the elementwise functor table (ops/elementwise_functors.h): the compute dtypes the
  // functor is defined for (bit dtype_bit(DType)), and the EwDType output rule.
  uint16_t ew_dtypes = 0;
  uint8_t ew_rule = 0;
  // The input ATen reads at float precision when the op computes in a 16-bit float and that input
  // is a 0-d scalar of another dtype (a Python number, a 0-d float32 tensor): mul's and div's
  // second operand, lerp's weight (ATen's original_scalar_value<opmath_t>; add, sub and pow
  // narrow the scalar first). -1 for none. elementwise_compute_dtype(OpId, ...) reads it.
  int8_t float_scalar_input = -1;
  std::vector<int> nondiff_inputs;             // inputs never differentiated (indices, masks)
  std::vector<int> unsaved_inputs;             // with kSaveInputs: inputs the VJP never reads (not saved)
  // With kSaveOutputs: outputs the VJP never reads (not saved). What an op saves decides which
  // in-place writes to its results are legal, so it follows PyTorch's derivatives.yaml: the norms
  // save input, mean and rstd but not their output, so `relu_` after BatchNorm is legal.
  std::vector<int> unsaved_outputs;
  // With kSaveOutputs: when set, outputs are saved only for calls where it returns true (pow
  // saves its result only when the exponent is a tensor requiring grad, as PyTorch).
  bool (*saves_outputs)(const TensorList& inputs) = nullptr;

  // The op's result lives on another device than its input (ToDevice): infer sets the result's
  // device, and dispatch runs the kernel of the non-CPU side (which handles both directions).
  bool device_transfer = false;
  // The op writes some of its inputs in place and has no outputs (the fused multi-tensor
  // optimizer steps): the tracer cannot record that as SSA values, so a trace falls back.
  bool writes_inputs = false;

  KernelFn kernel(DeviceType t) const { return kernels[static_cast<int>(t)]; }
};

const OpDef& op_def(OpId id);
bool op_registered(OpId id);

// Holds attrs to the op's declared schema (attr_schema.h): raises naming the op and attribute.
void check_attrs(OpId id, const Attrs& attrs);
// Canonical text of the op's attribute schema ("dim:ints, keepdim:bool"), stable across builds.
std::string op_attr_schema(OpId id);
// Stable hash over every registered op's name and schema text, in name order: the op-registry
// stamp of saved artifacts (a renamed, added or removed op or a changed schema changes it).
uint64_t op_registry_hash();

struct OpRegistrar {
  OpRegistrar(OpId id, const char* attr_schema, OpDef def);
};
// A backend's kernel for an op, registered into the op record's table (in any static
// initialisation order relative to the record; registering one op twice for a device aborts).
struct KernelRegistrar {
  KernelRegistrar(OpId id, DeviceType device, KernelFn fn);
};

#define LUCID_CONCAT_(a, b) a##b
#define LUCID_CONCAT(a, b) LUCID_CONCAT_(a, b)
// LUCID_REGISTER_OP(Sum, "dims:ints, keepdim:bool, dtype:dtype?", [] { OpDef d; ...; return d; }())
// The second argument is the op's attribute schema ("" for none), so no op registers without one.
#define LUCID_REGISTER_OP(id, attr_schema, ...) \
  static ::lucid::OpRegistrar LUCID_CONCAT(lucid_reg_, id)(::lucid::OpId::id, attr_schema, __VA_ARGS__)
// LUCID_REGISTER_KERNEL(Sum, CPU, sum_kernel), in backends/<device>/: the device's kernel for an op.
#define LUCID_REGISTER_KERNEL(id, device, ...) \
  static ::lucid::KernelRegistrar LUCID_CONCAT(lucid_kernel_, id)(::lucid::OpId::id, ::lucid::DeviceType::device, __VA_ARGS__)

}  // namespace lucid
