// The plane geometry of the 2-D pooling kernels, shared by every backend (records in
// ops/pool_ops.cpp, kernels in backends/cpu/kernels/pool.cpp and backends/cuda/kernels/pool.cu):
// an input [..., H, W] and its output [..., OH, OW] seen as P planes. Shapes only, no data; the
// struct is plain, so the CUDA kernels take it by value.
#pragma once
#include <cstddef>
#include <cstdint>

#include "lucid/core/shape.h"

namespace lucid {

// P planes of H x W in, OH x OW out.
struct PoolGeo {
  int64_t P, H, W, OH, OW;
};

// The geometry of `in` (the input side) and `out` (the output side), both of rank >= 2.
inline PoolGeo pool_geo(const Shape& in, const Shape& out) {
  const size_t nd = in.size();
  PoolGeo g{1, in[nd - 2], in[nd - 1], out[nd - 2], out[nd - 1]};
  for (size_t i = 0; i + 2 < nd; ++i) g.P *= in[i];
  return g;
}

}  // namespace lucid
