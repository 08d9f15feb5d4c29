// The integer GEMM of the CUDA backend (cuBLASLt has no integer GEMM of lucid's semantics): the
// CPU's (backends/cpu/dnnl_matmul.cpp, gemm_generic) on the device, for uint8, int8, int32 and
// int64 operands: products accumulated in int64 (wrapping), then
//   v = (alpha == 1 ? acc : int64(alpha) * acc) + bias[col]  [+ int64(beta) * out_before]
// stored as the dtype (wrapping), as the CPU computes it. A 16 x 16 shared-memory tiled kernel:
// integer matmuls are rare and small in deep learning; this is correct, not fast.
#pragma once
#include <cstdint>

#include "lucid/core/tensor.h"

namespace lucid::cuda {

// One strided-batched integer GEMM in lucid's row-major terms: out[b] (M x N, contiguous rows of
// ld N, batch stride M * N) from a[b] (M x K, element strides sar, sac; batch stride sab) and
// b[b] (K x N: sbr, sbc; sbb). bias: undefined or 1-D [N]. beta_sum: add int64(beta) * out's
// old value. Pointers are element offsets into the tensors' data (a_off etc.).
struct IntGemm {
  int64_t M = 0, N = 0, K = 0, batch = 1;
  int64_t sar = 0, sac = 0, sab = 0, sbr = 0, sbc = 0, sbb = 0;
  int64_t a_off = 0, b_off = 0, out_off = 0;  // elements
  double alpha = 1.0, beta = 0.0;
  bool beta_sum = false;
};

void int_gemm(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out, const IntGemm& g);

}  // namespace lucid::cuda
