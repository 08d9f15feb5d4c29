// The CUDA backend's elementwise kernels, expanded from the functor table
// (ops/list/elementwise_functors.def) over the scalar functors of ops/scalar_functors.h, as the
// CPU's (backends/cpu/kernels/elementwise.h): the math is the functor's, written once. A row's
// kernel computes exactly what the CPU kernel computes:
//   - the compute dtype is elementwise_compute_dtype<Id> (ops/elementwise_util.h), and inputs of
//     another dtype are converted to it first: a device tensor with the Copy kernel's cast
//     (cast_on_device), a CPU 0-dim tensor (a Python number) on the host by the CPU Copy kernel,
//     its value then passed to the kernel by value (host_scalar.h; while a CUDA graph is captured,
//     a value that changes per call is read from the device word each replay rewrites);
//   - each element is loaded, widened to the compute type (float for 16-bit floats), given to
//     the functor's apply<C>, and stored as the output type (bool for the Bool rules);
//   - a write into another dtype (in place into a wider tensor) goes through a temporary.
// The expansion is split over kernels/elementwise_{unary,special,activation,binary,compare,attr}.cu
// (compile units of a few hundred small kernels each); each expands its share
// with LUCID_EW_CUDA_ROW(Op, in_this_file), by ew_unit. A few ops have their own kernel
// (has_own_cuda_kernel).
#pragma once
#include <array>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/device_copy.h"
#include "lucid/backends/cuda/elementwise_launch.cuh"
#include "lucid/backends/cuda/graph_capture.h"
#include "lucid/backends/cuda/host_scalar.h"
#include "lucid/ops/elementwise_util.h"

// The functors' generic code compares unsigned values with zero (relu of uint8), as it does on
// the CPU; nvcc's remark about it (#186, also suppressed by scripts/check_cuda_headers.sh) is noise.
#pragma nv_diag_suppress 186

namespace lucid::cuda {

// A host scalar (CPU 0-dim tensor) as a gpu_kernel input in compute dtype c: by value, or, while a
// CUDA graph is captured and its value changes per call, read from the device address where each
// replay finds it (graph_capture.h's GraphScalars).
inline KernelInput host_scalar_input(const Tensor& t, DType c) {
  if (GraphScalars* g = active_graph_scalars())
    if (const void* at = g->device_value(t, c)) return KernelInput::device_scalar(at);
  return KernelInput{nullptr, host_scalar_bits(t, c)};
}

// An op's inputs in compute dtype c, as gpu_kernel inputs: host scalars (CPU 0-dim tensors) by
// value (host_scalar_input), device tensors as they are or cast to c. The casts are held here while the kernel is
// queued (the allocator is stream-ordered, so freeing them after is safe).
struct ComputeInputs {
  std::vector<Tensor> held;
  std::vector<KernelInput> args;
  ComputeInputs(const TensorList& in, DType c, const char* op) {
    held.reserve(in.size());
    for (const Tensor& t : in) {
      if (t.device().is_cpu()) {
        LUCID_CHECK(t.ndim() == 0, Error, op, ": expected all tensors to be on the same device, but found a CPU tensor of shape ",
                    shape_str(t.shape()));
        args.push_back(host_scalar_input(t, c));
        continue;
      }
      held.push_back(cast_on_device(t, c));
      args.push_back(KernelInput::of(held.back()));
    }
  }
  ComputeInputs(const ComputeInputs&) = delete;  // args point into held
};

// A table row's functor on device storage types: loads widen to the compute type, the result is
// stored as O with the CPU's static_cast<O> (16-bit floats rounded from float).
template <class F, class T, class O> struct TableOp {
  F f;
  using C = compute_t<T>;
  template <class... A> __device__ O operator()(A... a) const {
    return from_compute<O>(f.template apply<C>(to_compute(a)...));
  }
};

template <size_t N>
std::array<KernelInput, N> first_args(const ComputeInputs& ci) {
  std::array<KernelInput, N> a;
  for (size_t k = 0; k < N; ++k) a[k] = ci.args[k];
  return a;
}

// gpu_kernel<O, T x Arity>(TableOp<F, T, O>) into dst.
template <class F, int Arity, bool BoolOut, class T>
void run_table_typed(const char* name, const F& f, const ComputeInputs& ci, const Tensor& dst) {
  using O = std::conditional_t<BoolOut, bool, T>;
  const TableOp<F, T, O> op{f};
  if constexpr (Arity == 1) gpu_kernel<O, T>(name, dst, first_args<1>(ci), op);
  else if constexpr (Arity == 2) gpu_kernel<O, T, T>(name, dst, first_args<2>(ci), op);
  else gpu_kernel<O, T, T, T>(name, dst, first_args<3>(ci), op);
}

// The kernel of table row Id with functor f, computing in dtype c.
template <OpId Id>
void run_table_row(const typename ElementwiseFunctor<Id>::Functor& f, DType c, const TensorList& in, const TensorList& out) {
  using R = ElementwiseFunctor<Id>;
  using F = typename R::Functor;
  const char* name = op_def(Id).api_name;
  const ComputeInputs ci(in, c, name);
  const Tensor& o = out[0];
  const DType odt = R::kBoolOut ? DType::Bool : c;
  const Tensor dst = o.dtype() == odt ? o : Tensor::empty(o.shape(), odt, o.device());
  auto go = [&](auto tag) { run_table_typed<F, R::kArity, R::kBoolOut, typename decltype(tag)::type>(name, f, ci, dst); };
  if constexpr (R::kRule == EwDType::BoolInputs) {
    LUCID_CHECK(c == DType::Bool, Error, name, ": expected bool inputs");
    go(std::type_identity<bool>{});
  } else if constexpr (R::kDomain == EwDomain::Floating) {
    LUCID_CUDA_DISPATCH_FLOATING(c, name, [&] { go(std::type_identity<scalar_t>{}); });
  } else if constexpr (R::kDomain == EwDomain::Numeric) {
    LUCID_CUDA_DISPATCH_NUMERIC(c, name, [&] { go(std::type_identity<scalar_t>{}); });
  } else if constexpr (R::kDomain == EwDomain::Integral) {
    LUCID_CUDA_DISPATCH_INTEGRAL(c, name, [&] { go(std::type_identity<scalar_t>{}); });
  } else {
    LUCID_CUDA_DISPATCH_ALL(c, name, [&] { go(std::type_identity<scalar_t>{}); });
  }
  if (!(dst == o)) copy_on_device(o, dst);
}

// The generic kernel of a plain row (its functor has no parameters).
template <OpId Id>
void elementwise_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  using R = ElementwiseFunctor<Id>;
  run_table_row<Id>(typename R::Functor{}, elementwise_compute_dtype(Id, R::kRule, in), in, out);
}

// The generic kernel of a row whose functor has parameters, made from the Attrs.
template <OpId Id>
void elementwise_attr_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  using R = ElementwiseFunctor<Id>;
  const DType c = elementwise_compute_dtype<Id>(in, a);
  run_table_row<Id>(FromAttrs<typename R::Functor>::make(a), c, in, out);
}

// Ops whose CUDA kernel is written by hand rather than expanded, as on the CPU: where and
// masked_fill read their bool operand as it is, integer floor_divide and remainder check the
// divisor for zero first (elementwise_binary_ops.cu, elementwise_attr.cu).
constexpr bool has_own_cuda_kernel(OpId id) {
  return id == OpId::Where || id == OpId::MaskedFill || id == OpId::FloorDivide || id == OpId::Remainder;
}

// Which translation unit expands a row (each compiles a few hundred small kernels): the rows with
// parameters (elementwise_attr.cu), the activations and their fused backwards
// (elementwise_activation.cu), the trigonometric, hyperbolic and special functions
// (elementwise_special.cu), comparisons and logical/bitwise ops (elementwise_compare.cu), the
// other binary and ternary rows (elementwise_binary.cu) and the other unary rows
// (elementwise_unary.cu).
enum class EwUnit { Attr, Activation, Special, Compare, Binary, Unary };
constexpr EwUnit ew_unit(OpId id, int arity, bool attrs) {
  if (attrs) return EwUnit::Attr;
  switch (id) {
    case OpId::Sigmoid: case OpId::Relu: case OpId::Relu6: case OpId::Hardswish: case OpId::Hardsigmoid:
    case OpId::Selu: case OpId::Silu: case OpId::Mish: case OpId::Softsign: case OpId::LogSigmoid:
    case OpId::Tanhshrink: case OpId::ReluBackward: case OpId::SigmoidBackward: case OpId::TanhBackward:
    case OpId::SiluBackward:
      return EwUnit::Activation;
    case OpId::Sin: case OpId::Cos: case OpId::Tanh: case OpId::Erf: case OpId::Tan: case OpId::Asin:
    case OpId::Acos: case OpId::Atan: case OpId::Sinh: case OpId::Cosh: case OpId::Asinh: case OpId::Acosh:
    case OpId::Atanh: case OpId::Erfc: case OpId::Erfinv: case OpId::Lgamma: case OpId::Digamma:
      return EwUnit::Special;
    case OpId::Eq: case OpId::Ne: case OpId::Lt: case OpId::Le: case OpId::Gt: case OpId::Ge:
    case OpId::LogicalAnd: case OpId::LogicalOr: case OpId::LogicalXor: case OpId::BitwiseAnd:
    case OpId::BitwiseOr: case OpId::BitwiseXor:
      return EwUnit::Compare;
    default:
      return arity >= 2 ? EwUnit::Binary : EwUnit::Unary;
  }
}

// Registers table row Id's generic CUDA kernel, when Expand holds.
template <OpId Id, bool Expand>
struct ElementwiseCudaRow {
  ElementwiseCudaRow() {
    if constexpr (Expand && !has_own_cuda_kernel(Id)) {
      if constexpr (ElementwiseFunctor<Id>::kAttrs) KernelRegistrar{Id, DeviceType::CUDA, &elementwise_attr_kernel<Id>};
      else KernelRegistrar{Id, DeviceType::CUDA, &elementwise_kernel<Id>};
    }
  }
};

#define LUCID_EW_CUDA_ROW(Op, in_this_file) \
  static const ::lucid::cuda::ElementwiseCudaRow<::lucid::OpId::Op, (in_this_file)> LUCID_CONCAT(lucid_ew_cuda_, Op){};


// In each expanding file (unit U):
//   #define LUCID_EW(Op, F, Arity, Rule, Domain) LUCID_EW_CUDA_ROW(Op, ew_unit(OpId::Op, Arity, false) == EwUnit::U)
//   #define LUCID_EW_ATTR(Op, F, Arity, Rule, Domain) LUCID_EW_CUDA_ROW(Op, ew_unit(OpId::Op, Arity, true) == EwUnit::U)
//   #include "lucid/ops/list/elementwise_functors.def"

}  // namespace lucid::cuda
