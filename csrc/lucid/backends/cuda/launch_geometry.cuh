// Launch geometry shared by the CUDA kernels that loop over elements with one thread each or in
// a grid-stride loop: the block size kThreads, grid_for (a capped grid for grid-stride loops,
// int64 indices so sizes above 2^31 work), blocks_covering (one thread per item, uncapped), row_blocks (a block
// per row), the
// device-side global index and stride, and LUCID_GRID_LOOP. Families with their own tuned block
// sizes (elementwise_launch.cuh, optim.cu, the row kernels) keep those beside their kernels.
#pragma once
#include <cstdint>

namespace lucid::cuda {

constexpr int kThreads = 256;  // threads per block of the grid-stride kernels

// Blocks for a grid-stride loop over n items (at least 1, capped at 65535 * 8: each thread loops
// over the rest).
inline unsigned grid_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

// Blocks of `threads` covering n items with one thread each (at least 1; no cap: the kernel does
// not loop).
inline unsigned blocks_covering(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

// Blocks of a one-block-per-row kernel over `rows` rows (at least 1, at most 2^30; the kernels
// loop over the rest).
inline unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(rows < 1 ? 1 : (rows > (1 << 30) ? (1 << 30) : rows));
}

#ifdef __CUDACC__
__device__ __forceinline__ int64_t global_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t global_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }
#endif

// for (Index i = ...; i < n; i += grid size): a grid-stride loop.
#define LUCID_GRID_LOOP(Index, i, n)                                                      \
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<Index>(gridDim.x) * blockDim.x)

}  // namespace lucid::cuda
