// The CUDA backend's row-reduction driver, shared by the reduce, reduce_minmax, scan, sort,
// softmax and norm kernels. A reduction runs on x seen as a contiguous [outer, r, inner] block
// (ops/reduce_layout.h, the CPU's geometry). A Reducer describes the math once, on the device:
//   using S = state;  __device__ S init() const;  __device__ void step(S&, C v, int64_t k) const;
//   __device__ void merge(S& a, const S& b) const;   (order-independent: the driver merges
//                                                     partial states of interleaved elements)
//   __device__ void write(const S&, int64_t o) const;
// launch_reduce picks a kernel from the geometry: contiguous rows (inner == 1) are reduced by a
// group of 1..256 threads each (by the row length), columns (inner > 1) by a 32 x 8 thread tile
// per 32 columns; long rows with few outputs are split across blocks into partial states that a
// second kernel merges. Floats accumulate in double and integers in int64, as on the CPU.
//
// Also loads and stores of host-typed elements in their compute type (cuda_dtype.cuh's
// conversions), and the host helpers the kernels share: the device's Copy kernel for casts and
// strided copies.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/core/dtype.h"
#include "lucid/core/half.h"
#include "lucid/ops/op_def.h"
#include "lucid/ops/reduce_layout.h"
#include "lucid/ops/reduce_util.h"

namespace lucid::cuda {

// ---- device loads and stores -------------------------------------------------------------------
// Elements of a host storage type T (lucid::Half / BFloat16 bits included) read and written in
// their compute type, through cuda_dtype.cuh's device types and conversions.
template <class T>
__device__ inline compute_t<T> load(const T* p, int64_t i) {
  return to_compute(reinterpret_cast<const device_t<T>*>(p)[i]);
}

template <class T>
__device__ inline void store(T* p, int64_t i, compute_t<T> v) {
  reinterpret_cast<device_t<T>*>(p)[i] = from_compute<device_t<T>>(v);
}

// Accumulator of sums and products: double for floats, int64 for integers and bool (the CPU's).
template <class C>
using acc_t = std::conditional_t<std::is_floating_point_v<C>, double, int64_t>;

// ---- host helpers ----------------------------------------------------------------------------------
// dst <- src (src broadcast to dst's shape, cast to dst's dtype, either side strided) with the
// Copy kernel of dst's device: the same path as contiguous_data, without dispatch.
inline void copy_on_device(const Tensor& dst, const Tensor& src) {
  KernelFn k = op_def(OpId::Copy).kernel(dst.device().type);
  LUCID_CHECK(k, NotImplementedError, "copy: not implemented on ", dst.device().str());
  k({src}, {dst}, {{"dtype", dst.dtype()}});
}

// x contiguous and of dtype dt (x itself when it already is).
inline Tensor contiguous_as(const Tensor& x, DType dt) {
  if (x.dtype() == dt) return x.contiguous_data();
  Tensor t = Tensor::empty(x.shape(), dt, x.device());
  copy_on_device(t, x);
  return t;
}

// Copies a tensor computed in a RowLayout's permuted order back into `out` (x's shape).
inline void unpermute_on_device(const Tensor& out, const Tensor& tmp, const IntList& perm) {
  Strides st(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) st[perm[i]] = tmp.strides()[i];
  copy_on_device(out, Tensor::make_view(tmp, out.shape(), st, tmp.offset()));
}

// ---- block-level merge of states ---------------------------------------------------------------
constexpr int kReduceThreads = 256;

// Merges the states of each group of `group` consecutive threads (a power of two dividing
// kReduceThreads) into the group's first thread; `sm` is shared memory for kReduceThreads states.
// Every thread of the block must call it.
template <class R, class S>
__device__ inline S group_merge(const R& red, S s, S* sm, int group) {
  const int t = threadIdx.x + threadIdx.y * blockDim.x;
  sm[t] = s;
  __syncthreads();
  const int lane = t % group;
  for (int w = group / 2; w > 0; w /= 2) {
    if (lane < w) {
      S a = sm[t];
      red.merge(a, sm[t + w]);
      sm[t] = a;
    }
    __syncthreads();
  }
  return sm[t];
}

// Shared memory for kReduceThreads states of type S (S may have constructors).
template <class S>
__device__ inline S* state_smem() {
  __shared__ __align__(16) unsigned char raw[kReduceThreads * sizeof(S)];
  return reinterpret_cast<S*>(raw);
}

// ---- kernels -----------------------------------------------------------------------------------
// Contiguous rows: groups of `group` threads per row, kReduceThreads / group rows per block.
// With nsplit > 1, row o's split `sp` covers [sp * chunk, (sp + 1) * chunk) and its state goes to
// part[o * nsplit + sp]; else the state is written.
template <class T, class R>
__global__ void reduce_rows_kernel(const T* x, int64_t outer, int64_t r, int group, int64_t nsplit, int64_t chunk,
                                   R red, typename R::S* part) {
  using S = typename R::S;
  S* sm = state_smem<S>();
  const int rows_per_block = kReduceThreads / group;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / group;
  const int64_t sp = blockIdx.y;
  const int lane = threadIdx.x % group;
  S s = red.init();
  if (o < outer) {
    const int64_t k0 = sp * chunk, k1 = min(r, k0 + chunk);
    const T* row = x + o * r;
    for (int64_t k = k0 + lane; k < k1; k += group) red.step(s, load(row, k), k);
  }
  s = group_merge(red, s, sm, group);
  if (lane == 0 && o < outer) {
    if (nsplit > 1) part[o * nsplit + sp] = s;
    else red.write(s, o);
  }
}

// Columns: a 32 x 8 tile; threadIdx.x walks 32 adjacent columns j of one outer index, threadIdx.y
// interleaves the k of split blockIdx.y ([sp * chunk, (sp + 1) * chunk)).
template <class T, class R>
__global__ void reduce_cols_kernel(const T* x, int64_t outer, int64_t r, int64_t inner, int64_t nsplit, int64_t chunk,
                                   R red, typename R::S* part) {
  using S = typename R::S;
  S* sm = state_smem<S>();
  const int64_t col_blocks = (inner + 31) / 32;
  const int64_t o = blockIdx.x / col_blocks;
  const int64_t j = (blockIdx.x % col_blocks) * 32 + threadIdx.x;
  const int64_t sp = blockIdx.y;
  S s = red.init();
  if (j < inner) {
    const int64_t k0 = sp * chunk, k1 = min(r, k0 + chunk);
    const T* base = x + o * r * inner + j;
    for (int64_t k = k0 + threadIdx.y; k < k1; k += blockDim.y) red.step(s, load(base, k * inner), k);
  }
  // Merge the 8 states of column threadIdx.x: lay them out as groups of 8 consecutive slots.
  const int t = threadIdx.x * blockDim.y + threadIdx.y;
  sm[t] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < inner) {
    S a = sm[t];
    for (int y = 1; y < static_cast<int>(blockDim.y); ++y) red.merge(a, sm[t + y]);
    const int64_t out = o * inner + j;
    if (nsplit > 1) part[out * nsplit + sp] = a;
    else red.write(a, out);
  }
}

// Merges the nsplit partial states of each output (one thread per output).
template <class R>
__global__ void reduce_finish_kernel(int64_t nout, int64_t nsplit, R red, const typename R::S* part) {
  const int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= nout) return;
  typename R::S s = part[o * nsplit];
  for (int64_t sp = 1; sp < nsplit; ++sp) red.merge(s, part[o * nsplit + sp]);
  red.write(s, o);
}

// ---- the driver --------------------------------------------------------------------------------
constexpr int64_t kTargetBlocks = 1024;  // enough blocks to fill an H200 (132 SMs) a few times over

// Reduces L (its data of dtype T, on device dev) with `red`: outer * inner outputs of r elements.
template <class T, class R>
void launch_reduce(const RowLayout& L, const R& red, const Device& dev, const char* name) {
  using S = typename R::S;
  const int64_t outer = L.outer, r = L.r, inner = L.inner, nout = outer * inner;
  if (nout == 0) return;
  cudaStream_t stream = current_stream(dev);
  const T* x = L.data.template data<T>();
  Tensor scratch;
  S* part = nullptr;
  auto alloc_parts = [&](int64_t nsplit) {
    if (nsplit <= 1) return;
    scratch = Tensor::empty({nout * nsplit * static_cast<int64_t>(sizeof(S))}, DType::UInt8, dev);
    part = reinterpret_cast<S*>(scratch.data_ptr());
  };
  int64_t nsplit = 1, chunk = std::max<int64_t>(r, 1);
  if (inner == 1) {
    const int group = r >= 2048 ? 256 : r >= 256 ? 64 : r >= 32 ? 16 : r >= 8 ? 4 : 1;
    const int64_t rows_per_block = kReduceThreads / group;
    const int64_t blocks = (outer + rows_per_block - 1) / rows_per_block;
    if (group == 256 && blocks < kTargetBlocks && r >= 65536) {
      nsplit = std::min<int64_t>((r + 16383) / 16384, (kTargetBlocks + blocks - 1) / blocks);
      nsplit = std::min<int64_t>(nsplit, 65535);
      chunk = (r + nsplit - 1) / nsplit;
      nsplit = (r + chunk - 1) / chunk;
    }
    alloc_parts(nsplit);
    dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(nsplit));
    reduce_rows_kernel<T, R><<<grid, kReduceThreads, 0, stream>>>(x, outer, r, group, nsplit, chunk, red, part);
  } else {
    const int64_t blocks = outer * ((inner + 31) / 32);
    if (blocks < kTargetBlocks && r >= 1024) {
      nsplit = std::min<int64_t>((r + 255) / 256, (kTargetBlocks + blocks - 1) / blocks);
      nsplit = std::min<int64_t>(nsplit, 65535);
      chunk = (r + nsplit - 1) / nsplit;
      nsplit = (r + chunk - 1) / chunk;
    }
    alloc_parts(nsplit);
    dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(nsplit));
    reduce_cols_kernel<T, R><<<grid, dim3(32, kReduceThreads / 32), 0, stream>>>(x, outer, r, inner, nsplit, chunk, red, part);
  }
  check_launch(name);
  if (nsplit > 1) {
    reduce_finish_kernel<R><<<blocks_covering(nout, 256), 256, 0, stream>>>(nout, nsplit, red, part);
    check_launch(name);
  }
}

}  // namespace lucid::cuda
