// CUDA kernels of the functor table's binary and ternary rows not in another unit (add, mul, sub,
// div, pow, maximum, lerp, atan2...), expanded from their functors (backends/cuda/elementwise.cuh,
// unit EwUnit::Binary), and the ops of these with their own kernel, as on the CPU: integer
// floor_divide and remainder, which raise on a zero divisor before anything is written, and
// where, which reads its condition as bool.
#include "lucid/backends/cuda/elementwise.cuh"

namespace lucid::cuda {

#define LUCID_EW(Op, F, Arity, Rule, Domain) LUCID_EW_CUDA_ROW(Op, ew_unit(OpId::Op, Arity, false) == EwUnit::Binary)
#define LUCID_EW_ATTR(Op, F, Arity, Rule, Domain)
#include "lucid/ops/list/elementwise_functors.def"

namespace {

constexpr int kThreads = 256;

// Sets *flag when some element's bits are zero (integers and bool: zero bits are the value 0).
template <class U>
__global__ void __launch_bounds__(kThreads) any_zero_kernel(const U* p, int64_t n, int* flag) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    if (p[i] == 0) *flag = 1;
}

// Whether the integer (or bool) tensor b holds a zero: on the host for a CPU scalar; on the
// device a scan into a flag, read back with one copy that waits for the stream (the host decides
// whether to raise). A host divisor that changes per call can't be checked once in a CUDA graph.
bool has_zero(const Tensor& b) {
  if (b.device().is_cpu()) {
    if (GraphScalars* g = active_graph_scalars())
      LUCID_CHECK(!g->device_value(b, b.dtype()), Error,
                  "integer division checks its per-call host divisor for zero on the host, at each call");
    bool zero = false;
    LUCID_DISPATCH_ALL(b.dtype(), "has_zero", [&] { zero = *b.data<scalar_t>() == scalar_t(0); });
    return zero;
  }
  const int64_t n = b.numel();
  if (n == 0) return false;
  const Tensor c = b.contiguous_data();
  const Tensor flag = Tensor::empty({1}, DType::Int32, b.device());
  DeviceGuard g(b.device());
  cudaStream_t stream = current_stream(b.device());
  check_cuda(cudaMemsetAsync(flag.data_ptr(), 0, sizeof(int), stream), "cudaMemsetAsync (zero check)");
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t{1} << 20));
  int* f = static_cast<int*>(flag.data_ptr());
  switch (itemsize(c.dtype())) {
    case 1: any_zero_kernel<uint8_t><<<blocks, kThreads, 0, stream>>>(static_cast<const uint8_t*>(c.data_ptr()), n, f); break;
    case 2: any_zero_kernel<uint16_t><<<blocks, kThreads, 0, stream>>>(static_cast<const uint16_t*>(c.data_ptr()), n, f); break;
    case 4: any_zero_kernel<uint32_t><<<blocks, kThreads, 0, stream>>>(static_cast<const uint32_t*>(c.data_ptr()), n, f); break;
    default: any_zero_kernel<uint64_t><<<blocks, kThreads, 0, stream>>>(static_cast<const uint64_t*>(c.data_ptr()), n, f); break;
  }
  check_launch("zero check");
  int h = 0;
  check_cuda(cudaMemcpyAsync(&h, f, sizeof(int), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (zero check)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (zero check)");
  return h != 0;
}

// Integer division by zero raises, as on the CPU (the same message), before anything is written.
template <OpId Id>
void zero_checked_division(const TensorList& in, const TensorList& out, const Attrs& a) {
  if (is_integral(out[0].dtype()))
    LUCID_CHECK(!has_zero(in[1]), Error, op_def(Id).api_name, ": ZeroDivisionError (integer division by zero)");
  elementwise_kernel<Id>(in, out, a);
}

template <class T> struct WhereOp {
  __device__ T operator()(bool c, T a, T b) const { return c ? a : b; }
};

// where: the condition read as bool (a CPU scalar condition by value), input and other converted
// to the result dtype.
void where_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& o = out[0];
  const Tensor& cond = in[0];
  const ComputeInputs ab({in[1], in[2]}, o.dtype(), "where");
  const KernelInput c = cond.device().is_cpu() ? host_scalar_input(cond, DType::Bool) : KernelInput::of(cond);
  LUCID_CUDA_DISPATCH_ALL(o.dtype(), "where", [&] {
    gpu_kernel<scalar_t, bool, scalar_t, scalar_t>("where", o, {c, ab.args[0], ab.args[1]}, WhereOp<scalar_t>{});
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(FloorDivide, CUDA, zero_checked_division<OpId::FloorDivide>);
LUCID_REGISTER_KERNEL(Remainder, CUDA, zero_checked_division<OpId::Remainder>);
LUCID_REGISTER_KERNEL(Where, CUDA, where_kernel);

}  // namespace lucid::cuda
