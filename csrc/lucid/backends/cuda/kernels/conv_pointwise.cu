// Bias/activation/residual epilogue and explicit padding of the CUDA convolutions
// (conv_pointwise.h).
#include "lucid/backends/cuda/kernels/conv_pointwise.h"

#include "lucid/backends/cuda/kernels/dnn_scalar.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid::cuda {

namespace {

// I: uint32_t when the element count fits (its divisions are several times cheaper), else int64_t.
template <class S, FusedActivation Act, class I>
__global__ void epilogue_kernel(S* y, const S* bias, const S* res, I total, I C, I S_, bool res_first) {
  using A = compute_t<S>;
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    A v = to_compute(y[i]);
    if (bias) v += to_compute(bias[(i / S_) % C]);
    if (res && res_first) v += to_compute(res[i]);
    if constexpr (Act == FusedActivation::Relu) v = sm::Relu::apply<A>(v);
    else if constexpr (Act == FusedActivation::Gelu) v = sm::Gelu{false}.apply<A>(v);
    else if constexpr (Act == FusedActivation::GeluTanh) v = sm::Gelu{true}.apply<A>(v);
    else if constexpr (Act == FusedActivation::Relu6) v = sm::Relu6::apply<A>(v);
    else if constexpr (Act == FusedActivation::Silu) v = sm::Silu::apply<A>(v);
    if (res && !res_first) v += to_compute(res[i]);
    y[i] = from_compute<S>(v);
  }
}

template <class E>
__global__ void pad_kernel(const E* src, E* dst, int64_t total, int64_t H, int64_t W, int64_t Hp, int64_t Wp,
                           int64_t top, int64_t left) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t wp = i % Wp, hp = (i / Wp) % Hp, p = i / (Wp * Hp);
    const int64_t h = hp - top, w = wp - left;
    dst[i] = (h >= 0 && h < H && w >= 0 && w < W) ? src[(p * H + h) * W + w] : E(0);
  }
}

template <class E>
__global__ void crop_kernel(const E* src, E* dst, int64_t total, int64_t H, int64_t W, int64_t Hp, int64_t Wp,
                            int64_t top, int64_t left) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t w = i % W, h = (i / W) % H, p = i / (W * H);
    dst[i] = src[(p * Hp + h + top) * Wp + w + left];
  }
}

// Calls f(E{}) with an unsigned integer type of elem_size bytes (the copies move bits).
template <class F>
void with_bits(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 2: f(uint16_t{}); return;
    case 4: f(uint32_t{}); return;
    case 8: f(uint64_t{}); return;
    default: break;
  }
  throw Error(str("conv padding: unsupported element size ", elem_size));
}

}  // namespace

void conv_epilogue(DType t, void* y, const void* bias, const void* residual, int64_t N, int64_t C, int64_t S,
                   FusedActivation act, bool residual_first, cudaStream_t stream) {
  const int64_t total = N * C * S;
  if (total == 0 || (!bias && !residual && act == FusedActivation::None)) return;
  const bool narrow = total < (int64_t{1} << 31);  // 32-bit indices while i + the grid stride cannot wrap
  with_float_storage(t, "conv epilogue", [&](auto tag) {
    using St = decltype(tag);
    auto launch = [&](auto kernel, auto index) {
      using I = decltype(index);
      kernel<<<grid_for(total, kThreads), kThreads, 0, stream>>>(static_cast<St*>(y), static_cast<const St*>(bias),
                                                                 static_cast<const St*>(residual), static_cast<I>(total),
                                                                 static_cast<I>(C), static_cast<I>(S), residual_first);
    };
    auto with_act = [&](auto index) {
      using I = decltype(index);
      switch (act) {
        case FusedActivation::None: launch(epilogue_kernel<St, FusedActivation::None, I>, index); break;
        case FusedActivation::Relu: launch(epilogue_kernel<St, FusedActivation::Relu, I>, index); break;
        case FusedActivation::Gelu: launch(epilogue_kernel<St, FusedActivation::Gelu, I>, index); break;
        case FusedActivation::GeluTanh: launch(epilogue_kernel<St, FusedActivation::GeluTanh, I>, index); break;
        case FusedActivation::Relu6: launch(epilogue_kernel<St, FusedActivation::Relu6, I>, index); break;
        case FusedActivation::Silu: launch(epilogue_kernel<St, FusedActivation::Silu, I>, index); break;
      }
    };
    if (narrow) with_act(uint32_t{});
    else with_act(int64_t{});
  });
  check_launch("conv_epilogue");
}

void pad_planes(size_t elem_size, const void* src, void* dst, int64_t P, int64_t H, int64_t W, int64_t Hp, int64_t Wp,
                int64_t top, int64_t left, cudaStream_t stream) {
  const int64_t total = P * Hp * Wp;
  if (total == 0) return;
  with_bits(elem_size, [&](auto tag) {
    using E = decltype(tag);
    pad_kernel<E><<<grid_for(total, kThreads), kThreads, 0, stream>>>(static_cast<const E*>(src), static_cast<E*>(dst),
                                                                     total, H, W, Hp, Wp, top, left);
  });
  check_launch("conv pad_planes");
}

void crop_planes(size_t elem_size, const void* src, void* dst, int64_t P, int64_t H, int64_t W, int64_t Hp, int64_t Wp,
                 int64_t top, int64_t left, cudaStream_t stream) {
  const int64_t total = P * H * W;
  if (total == 0) return;
  with_bits(elem_size, [&](auto tag) {
    using E = decltype(tag);
    crop_kernel<E><<<grid_for(total, kThreads), kThreads, 0, stream>>>(static_cast<const E*>(src), static_cast<E*>(dst),
                                                                      total, H, W, Hp, Wp, top, left);
  });
  check_launch("conv crop_planes");
}

}  // namespace lucid::cuda
