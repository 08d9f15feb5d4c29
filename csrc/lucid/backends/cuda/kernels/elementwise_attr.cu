// CUDA kernels of the functor table's rows whose functor has parameters (clamp, leaky_relu, gelu,
// softplus, addcmul, polygamma...), the functor made from the op's Attrs (ops/functor_attrs.h)
// and expanded as the others (backends/cuda/elementwise.cuh, unit EwUnit::Attr), and
// masked_fill's own kernel, which reads its mask as bool.
#include "lucid/backends/cuda/elementwise.cuh"

namespace lucid::cuda {

#define LUCID_EW(Op, F, Arity, Rule, Domain)
#define LUCID_EW_ATTR(Op, F, Arity, Rule, Domain) LUCID_EW_CUDA_ROW(Op, ew_unit(OpId::Op, Arity, true) == EwUnit::Attr)
#include "lucid/ops/list/elementwise_functors.def"

namespace {

template <class T> struct MaskedFillOp {
  T value;
  __device__ T operator()(T x, bool mask) const { return mask ? value : x; }
};

// masked_fill: the value converted on the host as the CPU kernel converts it, the mask read as
// bool (a CPU scalar mask by value).
void masked_fill_kernel(const TensorList& in, const TensorList& out, const Attrs& attrs) {
  const Tensor& o = out[0];
  const Tensor& mask = in[1];
  const double value = attrs.f("value");
  const ComputeInputs x({in[0]}, o.dtype(), "masked_fill");
  const KernelInput m = mask.device().is_cpu() ? host_scalar_input(mask, DType::Bool) : KernelInput::of(mask);
  LUCID_DISPATCH_ALL(o.dtype(), "masked_fill", [&] {
    const scalar_t v = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(value));
    using T = device_t<scalar_t>;
    T dv;
    std::memcpy(&dv, &v, sizeof(T));
    gpu_kernel<T, T, bool>("masked_fill", o, {x.args[0], m}, MaskedFillOp<T>{dv});
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(MaskedFill, CUDA, masked_fill_kernel);

}  // namespace lucid::cuda
