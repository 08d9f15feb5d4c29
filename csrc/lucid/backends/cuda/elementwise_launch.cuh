// gpu_kernel: the launch helper of every elementwise-style CUDA kernel (the functor table's ops,
// fills, casts; reusable for losses, dropout...). Given an output tensor, its inputs (device
// tensors of any strides, broadcast to the output's shape, or host scalars passed by value or, in
// a CUDA graph capture, read from a device address: KernelInput::at) and a
// device functor `Out f(In...) const` over the operands' device storage types (cuda_dtype.cuh:
// __half for float16), it launches on the output device's current stream one of two kernels:
//   - the vectorised one when every tensor operand is contiguous and aligned to its vector (16
//     bytes of the widest operand type per thread: float4 for float32), with int64 indices;
//   - the strided one with 32-bit offsets (OffsetCalculator<N, uint32_t>) when they all fit.
// Anything else (a strided or broadcast operand of more than 2^31 elements or bytes, a contiguous
// but unaligned view) is rare: its operands are first made contiguous with copy_on_device, whose
// same-dtype copies also have an int64 strided kernel (launch_strided<int64_t>), and the
// vectorised kernel runs on those. So each functor and dtype costs two kernels to compile.
// Each element is read and written by one thread, so an output that is exactly one of the inputs
// (in place) is safe; partial overlaps are dispatch's (dispatch_inplace copies such inputs).
// Host code calls gpu_kernel; only nvcc translation units include this header.
#pragma once
#include <cuda/std/tuple>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/device_copy.h"
#include "lucid/backends/cuda/offset_calculator.cuh"
#include "lucid/backends/cuda/stream.h"

namespace lucid::cuda {

// One input of gpu_kernel: a tensor on the output's device, or a host scalar given by the bits of
// its value in the input's device storage type (scalar(v) with v of that type), or a scalar the
// kernel reads from device address `at` (a captured graph's per-call host scalar, graph_capture.h).
struct KernelInput {
  const Tensor* tensor = nullptr;
  uint64_t bits = 0;
  const void* at = nullptr;
  static KernelInput of(const Tensor& t) { return KernelInput{&t, 0, nullptr}; }
  static KernelInput device_scalar(const void* p) { return KernelInput{nullptr, 0, p}; }
  template <class S> static KernelInput scalar(S v) {
    static_assert(sizeof(S) <= sizeof(uint64_t) && std::is_trivially_copyable_v<S>);
    KernelInput in;
    std::memcpy(&in.bits, &v, sizeof(S));
    return in;
  }
};

namespace launch_detail {

constexpr int kThreads = 128;
constexpr int64_t kMaxBlocks = int64_t{1} << 24;  // larger ranges loop (grid-stride)

template <int N> struct Inputs {
  const char* ptr[N > 0 ? N : 1];
  uint64_t bits[N > 0 ? N : 1];
  uint32_t scalar_mask;  // bit k: input k is a host scalar (bits[k])
  uint32_t at_mask;      // bit k: that scalar is read from device address ptr[k] instead
};

template <class T, int VEC> struct alignas(sizeof(T) * VEC) AlignedVec { T val[VEC]; };

template <class T> __device__ __forceinline__ T from_bits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}

template <class T, int N> __device__ __forceinline__ T scalar_input(const Inputs<N>& in, int k) {
  return in.at_mask >> k & 1u ? *reinterpret_cast<const T*>(in.ptr[k]) : from_bits<T>(in.bits[k]);
}

template <class T, int N, class Index>
__device__ __forceinline__ T load_input(const Inputs<N>& in, int k, Index byte_offset) {
  if (in.scalar_mask >> k & 1u) return scalar_input<T>(in, k);
  return *reinterpret_cast<const T*>(in.ptr[k] + byte_offset);
}

template <class Out, class... In, class F, class Index, size_t... K>
__device__ __forceinline__ Out apply_strided(const F& f, const Inputs<sizeof...(In)>& in, const Index* off,
                                             std::index_sequence<K...>) {
  return f(load_input<In>(in, static_cast<int>(K), off[K + 1])...);
}

template <class F, class Index, class Out, class... In>
__global__ void __launch_bounds__(kThreads)
    strided_kernel(F f, char* out, Inputs<sizeof...(In)> in, OffsetCalculator<sizeof...(In) + 1, Index> oc, Index n) {
  const Index step = static_cast<Index>(blockDim.x) * static_cast<Index>(gridDim.x);
  for (Index i = static_cast<Index>(blockIdx.x) * static_cast<Index>(blockDim.x) + static_cast<Index>(threadIdx.x);
       i < n; i += step) {
    Index off[sizeof...(In) + 1];
    oc.get(i, off);
    *reinterpret_cast<Out*>(out + off[0]) = apply_strided<Out, In...>(f, in, off, std::index_sequence_for<In...>{});
  }
}

template <int VEC, class... In, size_t... K>
__device__ __forceinline__ void load_vectors(::cuda::std::tuple<AlignedVec<In, VEC>...>& regs, const Inputs<sizeof...(In)>& in,
                                             int64_t v, std::index_sequence<K...>) {
  ((in.scalar_mask >> K & 1u
        ? void()
        : void(::cuda::std::get<K>(regs) = reinterpret_cast<const AlignedVec<In, VEC>*>(in.ptr[K])[v])),
   ...);
}

template <class Out, int VEC, class... In, class F, size_t... K>
__device__ __forceinline__ Out apply_vector(const F& f, const ::cuda::std::tuple<AlignedVec<In, VEC>...>& regs,
                                            const Inputs<sizeof...(In)>& in, int j, std::index_sequence<K...>) {
  return f((in.scalar_mask >> K & 1u ? scalar_input<In>(in, static_cast<int>(K)) : ::cuda::std::get<K>(regs).val[j])...);
}

template <class Out, class... In, class F, size_t... K>
__device__ __forceinline__ Out apply_at(const F& f, const Inputs<sizeof...(In)>& in, int64_t i, std::index_sequence<K...>) {
  return f(load_input<In>(in, static_cast<int>(K), i * static_cast<int64_t>(sizeof(In)))...);
}

template <class F, int VEC, class Out, class... In>
__global__ void __launch_bounds__(kThreads) contiguous_kernel(F f, Out* out, Inputs<sizeof...(In)> in, int64_t n) {
  const int64_t nvec = n / VEC;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t v = tid; v < nvec; v += step) {
    ::cuda::std::tuple<AlignedVec<In, VEC>...> regs;
    load_vectors<VEC>(regs, in, v, std::index_sequence_for<In...>{});
    AlignedVec<Out, VEC> o;
LUCID_CUDA_UNROLL
    for (int j = 0; j < VEC; ++j) o.val[j] = apply_vector<Out, VEC, In...>(f, regs, in, j, std::index_sequence_for<In...>{});
    reinterpret_cast<AlignedVec<Out, VEC>*>(out)[v] = o;
  }
  const int64_t i = nvec * VEC + tid;  // the tail: fewer than VEC elements (the grid has >= kThreads threads)
  if (i < n) out[i] = apply_at<Out, In...>(f, in, i, std::index_sequence_for<In...>{});
}

inline unsigned blocks_for(int64_t work) {
  return static_cast<unsigned>(std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// The operands of a launch: the output's and inputs' pointers and the scalars' bits, checked
// against the kernel's types. `ops` gets the tensors (null for host scalars) for make_geometry.
template <class Out, class... In>
Inputs<sizeof...(In)> kernel_inputs(const char* name, const Tensor& out, const std::array<KernelInput, sizeof...(In)>& inputs,
                                    const Tensor** ops) {
  constexpr int NIN = sizeof...(In);
  constexpr size_t kSizes[NIN > 0 ? NIN : 1] = {sizeof(In)...};
  LUCID_CHECK(itemsize(out.dtype()) == sizeof(Out), Error, name, ": output dtype ", dtype_name(out.dtype()),
              " does not match the kernel's type");
  ops[0] = &out;
  Inputs<NIN> in{};
  for (int k = 0; k < NIN; ++k) {
    const Tensor* t = inputs[k].tensor;
    ops[k + 1] = t;
    if (!t) {
      in.scalar_mask |= 1u << k;
      in.bits[k] = inputs[k].bits;
      if (inputs[k].at) {
        in.at_mask |= 1u << k;
        in.ptr[k] = static_cast<const char*>(inputs[k].at);
      }
      continue;
    }
    LUCID_CHECK(itemsize(t->dtype()) == kSizes[k], Error, name, ": input ", k, " dtype ", dtype_name(t->dtype()),
                " does not match the kernel's type");
    LUCID_CHECK(t->device() == out.device(), Error, name, ": input ", k, " is on ", t->device().str(), ", the output on ",
                out.device().str());
    in.ptr[k] = static_cast<const char*>(t->data_ptr());
  }
  return in;
}

template <class Out, class... In>
constexpr int kVec = static_cast<int>(16 / std::max({sizeof(Out), sizeof(In)...}));

template <class Out, class... In>
bool vector_aligned(const Tensor& out, const Inputs<sizeof...(In)>& in) {
  constexpr int VEC = kVec<Out, In...>;
  constexpr size_t kSizes[sizeof...(In) > 0 ? sizeof...(In) : 1] = {sizeof(In)...};
  bool aligned = reinterpret_cast<uintptr_t>(out.data_ptr()) % (VEC * sizeof(Out)) == 0;
  for (int k = 0; k < static_cast<int>(sizeof...(In)); ++k)
    if (!(in.scalar_mask >> k & 1u)) aligned = aligned && reinterpret_cast<uintptr_t>(in.ptr[k]) % (VEC * kSizes[k]) == 0;
  return aligned;
}

}  // namespace launch_detail

// The strided kernels only: 32-bit offsets when they fit, else int64 (two kernels). For kernels
// that must handle every geometry themselves (copy_on_device, which gpu_kernel falls back on).
template <class Out, class... In, class F>
void gpu_kernel_strided(const char* name, const Tensor& out, const std::array<KernelInput, sizeof...(In)>& inputs, const F& f) {
  using namespace launch_detail;
  constexpr int NIN = sizeof...(In);
  if (out.numel() == 0) return;
  const Tensor* ops[NIN + 1];
  const Inputs<NIN> in = kernel_inputs<Out, In...>(name, out, inputs, ops);
  const Geometry g = make_geometry(ops, NIN + 1, name);
  DeviceGuard guard(out.device());
  cudaStream_t stream = current_stream(out.device());
  char* o = static_cast<char*>(out.data_ptr());
  if (g.fits_32bit) {
    const OffsetCalculator<NIN + 1, uint32_t> oc(g);
    strided_kernel<F, uint32_t, Out, In...><<<blocks_for(g.numel), kThreads, 0, stream>>>(f, o, in, oc, static_cast<uint32_t>(g.numel));
  } else {
    const OffsetCalculator<NIN + 1, int64_t> oc(g);
    strided_kernel<F, int64_t, Out, In...><<<blocks_for(g.numel), kThreads, 0, stream>>>(f, o, in, oc, g.numel);
  }
  check_launch(name);
}

// Launches f over out's elements: out[i] = f(in_0[i], ..., in_{n-1}[i]), each input broadcast to
// out's shape. Out and In are device storage types whose sizes match the tensors' item sizes.
// `name` names the kernel in launch errors. Nothing is launched for an empty output.
template <class Out, class... In, class F>
void gpu_kernel(const char* name, const Tensor& out, const std::array<KernelInput, sizeof...(In)>& inputs, const F& f) {
  using namespace launch_detail;
  constexpr int NIN = sizeof...(In);
  static_assert(NIN + 1 <= kMaxOperands, "gpu_kernel: too many inputs");
  const int64_t n = out.numel();
  if (n == 0) return;
  const Tensor* ops[NIN + 1];
  const Inputs<NIN> in = kernel_inputs<Out, In...>(name, out, inputs, ops);
  const Geometry g = make_geometry(ops, NIN + 1, name);
  DeviceGuard guard(out.device());
  cudaStream_t stream = current_stream(out.device());
  if (g.contiguous && vector_aligned<Out, In...>(out, in)) {
    constexpr int VEC = kVec<Out, In...>;
    contiguous_kernel<F, VEC, Out, In...><<<blocks_for(n / VEC), kThreads, 0, stream>>>(f, static_cast<Out*>(out.data_ptr()), in, n);
    check_launch(name);
    return;
  }
  if (g.fits_32bit) {
    const OffsetCalculator<NIN + 1, uint32_t> oc(g);
    strided_kernel<F, uint32_t, Out, In...><<<blocks_for(n), kThreads, 0, stream>>>(f, static_cast<char*>(out.data_ptr()), in, oc,
                                                                                    static_cast<uint32_t>(n));
    check_launch(name);
    return;
  }
  // The rare rest: contiguous copies of the operands (fresh buffers are aligned), then the
  // vectorised kernel, then the result copied into out.
  auto dense_ok = [n](const Tensor& t) { return t.is_contiguous() && t.numel() == n && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; };
  Tensor dst = dense_ok(out) ? out : Tensor::empty(out.shape(), out.dtype(), out.device());
  std::array<Tensor, NIN> held;
  std::array<KernelInput, NIN> dense = inputs;
  for (int k = 0; k < NIN; ++k) {
    const Tensor* t = inputs[k].tensor;
    if (!t || dense_ok(*t)) continue;
    held[k] = Tensor::empty(out.shape(), t->dtype(), out.device());
    copy_on_device(held[k], *t);
    dense[k] = KernelInput::of(held[k]);
  }
  const Tensor* dense_ops[NIN + 1];
  const Inputs<NIN> din = kernel_inputs<Out, In...>(name, dst, dense, dense_ops);
  const bool aligned = vector_aligned<Out, In...>(dst, din);
  LUCID_CHECK(aligned, Error, name, ": contiguous operands are not aligned to 16 bytes");
  constexpr int VEC = kVec<Out, In...>;
  contiguous_kernel<F, VEC, Out, In...><<<blocks_for(n / VEC), kThreads, 0, stream>>>(f, static_cast<Out*>(dst.data_ptr()), din, n);
  check_launch(name);
  if (!(dst == out)) copy_on_device(out, dst);
}

}  // namespace lucid::cuda
