// The CUDA GEMM epilogue pass (see gemm_epilogue.h): one grid-stride elementwise kernel per
// stored dtype and activation, int64 indexing, the residual read through its broadcast strides.
#include "lucid/backends/cuda/gemm_epilogue.h"

#include <algorithm>
#include <type_traits>

#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid::cuda {

namespace {

template <class T> struct Elem {  // floats: their compute type (float for 16-bit); integers: int64
  using C = std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>;
  __device__ static C load(T v) { return static_cast<C>(to_compute(v)); }
  __device__ static T store(C v) { return from_compute<T>(v); }
};

constexpr int kMaxDims = 16;
struct ResidualGeo {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // 0 along broadcast dims
};

template <class T> struct Args {
  T* out;
  int64_t n, cols;
  bool base_from_out;
  typename Elem<T>::C base;
  const T* bias;
  int64_t bias_stride;
  const T* res;
  ResidualGeo rg;
  typename Elem<T>::C res_scale;
  bool res_first;
};

template <FusedActivation Act, class C> __device__ C activate(C v) {
  if constexpr (Act == FusedActivation::Relu) {
    return sm::Relu::apply<C>(v);
  } else if constexpr (Act == FusedActivation::Relu6) {
    return sm::Relu6::apply<C>(v);
  } else if constexpr (Act == FusedActivation::Silu) {
    if constexpr (std::is_floating_point_v<C>) return sm::Silu::apply<C>(v);
    else return static_cast<C>(sm::Silu::apply<double>(static_cast<double>(v)));
  } else if constexpr (Act == FusedActivation::Gelu || Act == FusedActivation::GeluTanh) {
    sm::Gelu g;
    g.tanh_approx = Act == FusedActivation::GeluTanh;
    if constexpr (std::is_floating_point_v<C>) return g.apply<C>(v);
    else return static_cast<C>(g.apply<double>(static_cast<double>(v)));  // as the CPU's integer GEMM
  } else {
    return v;
  }
}

template <class T, FusedActivation Act> __global__ void epilogue_kernel(Args<T> p) {
  using E = Elem<T>;
  using C = typename E::C;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += step) {
    C v = p.base_from_out ? E::load(p.out[i]) : p.base;
    if (p.bias) v = v + E::load(p.bias[(i % p.cols) * p.bias_stride]);
    C r = C(0);
    if (p.res) {
      int64_t off = 0, rem = i;
      for (int d = p.rg.ndim - 1; d >= 0; --d) {
        const int64_t s = p.rg.sizes[d];
        off += (rem % s) * p.rg.strides[d];
        rem /= s;
      }
      r = p.res_scale * E::load(p.res[off]);
      if (p.res_first) v = v + r;
    }
    v = activate<Act>(v);
    if (p.res && !p.res_first) v = v + r;
    p.out[i] = E::store(v);
  }
}

template <class T, FusedActivation Act> void launch_act(const Args<T>& a, cudaStream_t s) {
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((a.n + threads - 1) / threads, int64_t(1) << 20);
  epilogue_kernel<T, Act><<<static_cast<unsigned>(blocks), threads, 0, s>>>(a);
  check_launch("gemm_epilogue");
}

template <class T> void launch(const Tensor& out, const GemmEpilogue& ep) {
  using C = typename Elem<T>::C;
  Args<T> a{};
  a.out = static_cast<T*>(out.data_ptr());
  a.n = out.numel();
  a.cols = out.ndim() ? out.shape().back() : 1;
  a.base_from_out = ep.base_from_out;
  a.base = static_cast<C>(ep.base);
  if (ep.bias.defined()) {
    a.bias = static_cast<const T*>(ep.bias.data_ptr());
    a.bias_stride = ep.bias.strides()[0];
  }
  if (ep.residual.defined()) {
    const Tensor& r = ep.residual;
    const int64_t nd = out.ndim(), off = nd - r.ndim();
    LUCID_CHECK(nd <= kMaxDims && off >= 0, Error, "gemm_epilogue: residual of ", r.ndim(), " dims for an output of ",
                nd);
    a.res = static_cast<const T*>(r.data_ptr());
    a.rg.ndim = static_cast<int>(nd);
    for (int64_t d = 0; d < nd; ++d) {
      a.rg.sizes[d] = out.shape()[d];
      a.rg.strides[d] = (d < off || r.shape()[d - off] == 1) ? 0 : r.strides()[d - off];
    }
    a.res_scale = static_cast<C>(ep.residual_scale);
    a.res_first = ep.residual_first;
  }
  cudaStream_t s = current_stream(out.device());
  switch (ep.act) {
    case FusedActivation::None: launch_act<T, FusedActivation::None>(a, s); break;
    case FusedActivation::Relu: launch_act<T, FusedActivation::Relu>(a, s); break;
    case FusedActivation::Gelu: launch_act<T, FusedActivation::Gelu>(a, s); break;
    case FusedActivation::GeluTanh: launch_act<T, FusedActivation::GeluTanh>(a, s); break;
    case FusedActivation::Relu6: launch_act<T, FusedActivation::Relu6>(a, s); break;
    case FusedActivation::Silu: launch_act<T, FusedActivation::Silu>(a, s); break;
  }
}

}  // namespace

void gemm_epilogue(const Tensor& out, const GemmEpilogue& ep) {
  if (out.numel() == 0 || !ep.active()) return;
  LUCID_CHECK(out.is_contiguous(), Error, "gemm_epilogue: the output must be contiguous");
  switch (out.dtype()) {
    case DType::Float32: launch<float>(out, ep); return;
    case DType::Float64: launch<double>(out, ep); return;
    case DType::Float16: launch<__half>(out, ep); return;
    case DType::BFloat16: launch<__nv_bfloat16>(out, ep); return;
    case DType::Int64: launch<int64_t>(out, ep); return;
    case DType::Int32: launch<int32_t>(out, ep); return;
    case DType::Int8: launch<int8_t>(out, ep); return;
    case DType::UInt8: launch<uint8_t>(out, ep); return;
    default: throw TypeError(str("matmul: dtype ", dtype_name(out.dtype()), " is not supported"));
  }
}

}  // namespace lucid::cuda
