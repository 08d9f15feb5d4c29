// CUDA kernels of the movement family's copying ops (records in ops/movement_copy.cpp,
// ops/movement_views.cpp, ops/core_strided.cpp): Cat, Flip, Roll, Tril, Triu, Repeat, Pad,
// PadBackward, SliceScatter, DiagonalBackward, UnfoldBackward, AsStridedScatter. Flip, Roll,
// Repeat, Pad, PadBackward and the scatters are the backend-neutral ones of ops/movement_plan.h
// (the CPU's too) on the device's strided copy, accumulation, fill and zero (CudaMoves,
// strided_move.h), so their accumulations run in the CPU's order and give the CPU's bits. Written
// here: Cat, which copies many dense inputs in one batched launch, and Tril/Triu, which zero their
// triangle in one kernel.
#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/backends/cuda/offset_calculator.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/backends/cuda/strided_move.h"
#include "lucid/ops/movement_plan.h"
#include "lucid/ops/movement_util.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

// ---- Cat ----------------------------------------------------------------------------------
// Up to kCatBatch dense inputs of the output's dtype per launch (blockIdx.y picks the input): the
// output seen as [outer, out_row] and input k as [outer, row_k] placed at column col_k.
constexpr int kCatBatch = 32;
struct CatBatch {
  const void* src[kCatBatch];
  int64_t row[kCatBatch];  // elements per outer index of input k (its dim size * inner)
  int64_t col[kCatBatch];  // where its row starts in the output's row
};

template <class U>
__global__ void cat_batch_kernel(U* dst, CatBatch b, int64_t outer, int64_t out_row) {
  const int k = blockIdx.y;
  const U* src = static_cast<const U*>(b.src[k]);
  const int64_t row = b.row[k], n = outer * row;
  U* d = dst + b.col[k];
  LUCID_GRID_LOOP(int64_t, i, n) {
    int64_t o = i / row, r = i - o * row;
    d[o * out_row + r] = src[i];
  }
}

void cat_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  if (o.numel() == 0) return;
  DeviceGuard g(o.device());
  int64_t dim = wrap_dim(a.i("dim"), o.ndim(), "cat");
  int64_t inner = 1, outer = 1;
  for (int64_t d = 0; d < o.ndim(); ++d) {
    if (d < dim) outer *= o.shape()[d];
    else if (d > dim) inner *= o.shape()[d];
  }
  const int64_t out_row = o.shape()[dim] * inner;
  const bool batched = o.is_contiguous();
  CatBatch batch{};
  int nb = 0;
  int64_t max_n = 0;
  auto flush = [&] {
    if (nb == 0) return;
    by_width(o.dtype(), [&](auto tag) {
      using U = decltype(tag);
      dim3 grid(grid_for(max_n), nb);
      cat_batch_kernel<U><<<grid, kThreads, 0, current_stream(o.device())>>>(static_cast<U*>(o.data_ptr()), batch, outer, out_row);
    });
    check_launch("cat_batch_kernel");
    nb = 0;
    max_n = 0;
  };
  int64_t at = 0;
  for (const Tensor& t : in) {
    if (cat_skipped(t)) continue;
    int64_t n = t.shape()[dim];
    if (n > 0 && t.numel() > 0) {
      if (batched && t.dtype() == o.dtype() && t.is_contiguous()) {
        batch.src[nb] = t.data_ptr();
        batch.row[nb] = n * inner;
        batch.col[nb] = at * inner;
        max_n = std::max(max_n, outer * n * inner);
        if (++nb == kCatBatch) flush();
      } else {
        strided_copy(narrow_view(o, dim, at, n), t);  // strided or another dtype (the converting copy)
      }
    }
    at += n;
  }
  flush();
}

// ---- Tril / Triu --------------------------------------------------------------------------
// Zeroes the elements of o above (Lower) or below the k-th diagonal of its last two dims.
template <class U, class Index>
__global__ void tri_zero_kernel(U* o, OffsetCalculator<1, Index> ix, Index n, int64_t R, int64_t C, int64_t k, bool lower) {
  LUCID_GRID_LOOP(Index, i, n) {
    int64_t c = static_cast<int64_t>(i) % C, r = (static_cast<int64_t>(i) / C) % R;
    if (lower ? c - r > k : c - r < k) {
      Index off[1];
      ix.get(i, off);
      o[off[0]] = U(0);
    }
  }
}

template <bool Lower>
void tri_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  if (!same_view(o, in[0])) strided_copy(o, in[0]);
  if (o.numel() == 0) return;
  DeviceGuard g(o.device());
  int64_t k = a.i("diagonal");
  int64_t nd = o.ndim(), R = o.shape()[nd - 2], C = o.shape()[nd - 1];
  const int64_t n = o.numel();
  const Geometry geo = strided_geometry<1>(o.shape(), {&o.strides()}, "tril/triu");
  cudaStream_t s = current_stream(o.device());
  by_width(o.dtype(), [&](auto tag) {
    using U = decltype(tag);
    U* p = static_cast<U*>(o.data_ptr());
    with_offset_calculator<1>(geo, [&](auto ix, auto ni) {
      tri_zero_kernel<<<grid_for(n), kThreads, 0, s>>>(p, ix, ni, R, C, k, Lower);
    });
  });
  check_launch("tri_zero_kernel");
}

}  // namespace

LUCID_REGISTER_KERNEL(Cat, CUDA, cat_kernel);
LUCID_REGISTER_KERNEL(Tril, CUDA, tri_kernel<true>);
LUCID_REGISTER_KERNEL(Triu, CUDA, tri_kernel<false>);
LUCID_REGISTER_MOVEMENT_PLAN(CUDA, CudaMoves);

}  // namespace lucid::cuda
