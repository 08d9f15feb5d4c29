// CUDA kernels of the fused optimizer steps (records in ops/optim_ops.cpp): FusedAdam and
// FusedSgd as multi-tensor launches in the manner of PyTorch's multi_tensor_apply: the lists'
// tensors are cut into chunks of kChunk elements, and one launch covers up to kMaxBlocks chunks
// of up to MaxTensors<Depth> tensors, their pointers and sizes passed in the kernel's parameter
// block (under 4 KiB); a list longer than that takes a few launches. Each block updates one chunk
// with optim_update.h's per-element math, the CPU kernel's, kIlp elements per thread at a time. This file is compiled with
// -fmad=false (CMakeLists.txt): no multiply-add contraction, so the bits equal the CPU's.
#include <algorithm>
#include <vector>

#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/ops/optim.h"

namespace lucid::cuda {

namespace {

constexpr int64_t kChunk = 65536;
constexpr int kThreads = 512;
constexpr int kMaxBlocks = 320;
// Tensors per launch by list count (torch's depth_to_max_tensors), keeping the metadata < 4 KiB.
template <int Depth> constexpr int kMaxTensors = Depth == 2 ? 64 : Depth == 3 ? 48 : Depth == 4 ? 36 : 30;

template <int Depth> struct Meta {
  void* ptrs[Depth][kMaxTensors<Depth>];
  int64_t sizes[kMaxTensors<Depth>];
  unsigned char block_tensor[kMaxBlocks];
  int block_chunk[kMaxBlocks];
};

template <class T> struct DeviceRound {
  using C = compute_t<T>;
  __device__ C operator()(C v) const { return to_compute(from_compute<T>(v)); }
};

// Elements per thread per step of the kernel's loop: each op loads kIlp elements of every list
// into registers before computing and storing any, so that many loads are in flight per thread
// (the lists' stores could alias the next loads as far as the compiler knows).
constexpr int kIlp = 4;

// Element i of the step at j0 is j0 + i * step; those at or past `end` are skipped.
template <class T, int Depth> struct AdamOp {
  AdamCoeffs k;
  __device__ void operator()(const Meta<Depth>& m, int t, int64_t j0, int64_t step, int64_t end) const {
    using C = compute_t<T>;
    T* p = static_cast<T*>(m.ptrs[0][t]);
    const T* g = static_cast<const T*>(m.ptrs[1][t]);
    T* ea = static_cast<T*>(m.ptrs[2][t]);
    T* eq = static_cast<T*>(m.ptrs[3][t]);
    T* vmax = Depth == 5 ? static_cast<T*>(m.ptrs[Depth - 1][t]) : nullptr;
    C pc[kIlp], gc[kIlp], mc[kIlp], vc[kIlp], vm[kIlp];
#pragma unroll
    for (int i = 0; i < kIlp; ++i) {
      const int64_t j = j0 + i * step;
      pc[i] = gc[i] = mc[i] = vc[i] = vm[i] = C(0);
      if (j < end) {
        pc[i] = to_compute(p[j]), gc[i] = to_compute(g[j]), mc[i] = to_compute(ea[j]), vc[i] = to_compute(eq[j]);
        if constexpr (Depth == 5) vm[i] = to_compute(vmax[j]);
      }
    }
#pragma unroll
    for (int i = 0; i < kIlp; ++i) adam_update<C>(pc[i], gc[i], mc[i], vc[i], vm[i], k, DeviceRound<T>{});
#pragma unroll
    for (int i = 0; i < kIlp; ++i) {
      const int64_t j = j0 + i * step;
      if (j >= end) continue;
      p[j] = from_compute<T>(pc[i]), ea[j] = from_compute<T>(mc[i]), eq[j] = from_compute<T>(vc[i]);
      if constexpr (Depth == 5) vmax[j] = from_compute<T>(vm[i]);
    }
  }
};

template <class T, int Depth> struct SgdOp {
  SgdCoeffs k;
  __device__ void operator()(const Meta<Depth>& m, int t, int64_t j0, int64_t step, int64_t end) const {
    using C = compute_t<T>;
    T* p = static_cast<T*>(m.ptrs[0][t]);
    const T* g = static_cast<const T*>(m.ptrs[1][t]);
    T* buf = Depth == 3 ? static_cast<T*>(m.ptrs[Depth - 1][t]) : nullptr;
    C pc[kIlp], gc[kIlp], bc[kIlp];
#pragma unroll
    for (int i = 0; i < kIlp; ++i) {
      const int64_t j = j0 + i * step;
      pc[i] = gc[i] = bc[i] = C(0);
      if (j < end) {
        pc[i] = to_compute(p[j]), gc[i] = to_compute(g[j]);
        if constexpr (Depth == 3) bc[i] = to_compute(buf[j]);
      }
    }
#pragma unroll
    for (int i = 0; i < kIlp; ++i) sgd_update<C>(pc[i], gc[i], bc[i], k, DeviceRound<T>{});
#pragma unroll
    for (int i = 0; i < kIlp; ++i) {
      const int64_t j = j0 + i * step;
      if (j >= end) continue;
      p[j] = from_compute<T>(pc[i]);
      if constexpr (Depth == 3) buf[j] = from_compute<T>(bc[i]);
    }
  }
};

template <int Depth, class Op> __global__ void multi_tensor_kernel(Meta<Depth> meta, Op op) {
  const int t = meta.block_tensor[blockIdx.x];
  const int64_t begin = static_cast<int64_t>(meta.block_chunk[blockIdx.x]) * kChunk;
  const int64_t end = meta.sizes[t] < begin + kChunk ? meta.sizes[t] : begin + kChunk;
  const int64_t step = blockDim.x;
  for (int64_t j = begin + threadIdx.x; j < end; j += step * kIlp) op(meta, t, j, step, end);
}

// Runs op over the lists in `in` (Depth lists of n tensors, list 0 the params) in as few
// launches as the metadata limits allow.
template <int Depth, class Op> void multi_tensor_apply(const TensorList& in, const Op& op) {
  const size_t n = in.size() / Depth;
  if (n == 0) return;
  const Device dev = in[0].device();
  DeviceGuard guard(dev);
  cudaStream_t s = current_stream(dev);
  Meta<Depth> meta{};
  int tensors = 0, blocks = 0;
  auto launch = [&] {
    multi_tensor_kernel<Depth, Op><<<blocks, kThreads, 0, s>>>(meta, op);
    check_launch("multi_tensor_apply");
    blocks = 0;
  };
  for (size_t i = 0; i < n; ++i) {
    const int64_t numel = in[i].numel();
    if (numel == 0) continue;
    for (int l = 0; l < Depth; ++l) meta.ptrs[l][tensors] = in[l * n + i].data_ptr();
    meta.sizes[tensors] = numel;
    const int64_t chunks = (numel + kChunk - 1) / kChunk;
    for (int64_t c = 0; c < chunks; ++c) {
      meta.block_tensor[blocks] = static_cast<unsigned char>(tensors);
      meta.block_chunk[blocks] = static_cast<int>(c);
      ++blocks;
      const bool full_blocks = blocks == kMaxBlocks;
      const bool last_chunk = c == chunks - 1;
      if (full_blocks) {
        launch();
        if (!last_chunk) {  // this tensor continues in the next launch, in slot 0
          for (int l = 0; l < Depth; ++l) meta.ptrs[l][0] = meta.ptrs[l][tensors];
          meta.sizes[0] = meta.sizes[tensors];
          tensors = 0;
        } else {
          tensors = -1;  // next tensor starts at slot 0
        }
      }
    }
    ++tensors;
    if (tensors == kMaxTensors<Depth>) {
      if (blocks > 0) launch();
      tensors = 0;
    }
  }
  if (blocks > 0) launch();
}

template <template <class, int> class OpT, int Depth, class K> void by_dtype(const TensorList& in, const K& k) {
  switch (in[0].dtype()) {
    case DType::Float32: multi_tensor_apply<Depth>(in, OpT<float, Depth>{k}); return;
    case DType::Float64: multi_tensor_apply<Depth>(in, OpT<double, Depth>{k}); return;
    case DType::Float16: multi_tensor_apply<Depth>(in, OpT<__half, Depth>{k}); return;
    case DType::BFloat16: multi_tensor_apply<Depth>(in, OpT<__nv_bfloat16, Depth>{k}); return;
    default: throw TypeError(str("fused optimizer step: dtype ", dtype_name(in[0].dtype()), " is not supported"));
  }
}

void fused_adam_kernel(const TensorList& in, const TensorList&, const Attrs& a) {
  if (in.empty()) return;
  const AdamCoeffs k = adam_coeffs(a);
  if (k.amsgrad) by_dtype<AdamOp, 5>(in, k);
  else by_dtype<AdamOp, 4>(in, k);
}

void fused_sgd_kernel(const TensorList& in, const TensorList&, const Attrs& a) {
  if (in.empty()) return;
  const SgdCoeffs k = sgd_coeffs(a);
  if (k.momentum != 0) by_dtype<SgdOp, 3>(in, k);
  else by_dtype<SgdOp, 2>(in, k);
}

}  // namespace

LUCID_REGISTER_KERNEL(FusedAdam, CUDA, fused_adam_kernel);
LUCID_REGISTER_KERNEL(FusedSgd, CUDA, fused_sgd_kernel);

}  // namespace lucid::cuda
