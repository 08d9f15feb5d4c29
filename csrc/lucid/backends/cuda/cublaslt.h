// cuBLASLt glue of the CUDA backend: one GEMM call, D = epilogue(alpha * op(A) op(B) + beta * D),
// in cuBLASLt's own column-major terms, run on the current stream of the device. The matrix-product
// kernels (kernels/matmul.cpp) map lucid's row-major, strided operands onto it (a transposed view
// becomes an op flag, never a copy).
//
// Per device, one cublasLt handle, created on first use (thread-safe). Per thread, a plan cache:
// the matmul and layout descriptors and the algorithm cuBLASLt's heuristic picked, keyed by
// everything but the data pointers (dtype, sizes, leading dims, batch strides, transposes,
// epilogue, the pointers' alignment, TF32), so a repeated GEMM costs one hash lookup and the
// cublasLtMatmul call. Per thread because the bias pointer is an attribute of the matmul
// descriptor, set before each call. The workspace the chosen algorithm needs comes from the
// device's caching allocator (Tensor::empty), ordered on the stream like any other scratch.
//
// Math: float32 computes in full FP32 (CUBLAS_COMPUTE_32F) unless the float32 matmul precision
// (ops/matmul_precision.h, lucid.set_float32_matmul_precision / backends.cuda.matmul.allow_tf32)
// allows TF32; float64 in FP64; float16 and bfloat16 compute in FP32 and round once into their
// own dtype, as torch's default (no reduced-precision reductions are requested).
#pragma once
#include <cstdint>

#include "lucid/core/device.h"
#include "lucid/core/dtype.h"

namespace lucid::cuda {

enum class LtEpilogue : uint8_t {
  None,
  Bias,          // + bias[row of D] (bias has m elements, contiguous, D's dtype)
};

// One (strided-batched) GEMM in column-major terms. D is m x n with leading dim ldd; op(A) is
// m x k (A stored m x k, or k x m when trans_a), op(B) is k x n (stored k x n, or n x k when
// trans_b). Batch b reads A + b * stride_a (0 is allowed: one matrix for every batch), etc.
// beta != 0 reads D's old values (C is D, in place). All matrices have dtype `dtype`.
struct LtGemm {
  DType dtype = DType::Float32;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  const void* a = nullptr;
  int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  int64_t ldb = 0, stride_b = 0;
  void* d = nullptr;
  int64_t ldd = 0, stride_d = 0;
  double alpha = 1.0, beta = 0.0;
  LtEpilogue epilogue = LtEpilogue::None;
  const void* bias = nullptr;
};

// Whether cuBLASLt runs GEMMs of this dtype (float32, float64, float16, bfloat16).
bool lt_supports(DType dt);

// Runs g on the current stream of `device` (k >= 1, m, n, batch >= 1). Returns false, having
// queued nothing, when cuBLASLt has no algorithm for this problem with this epilogue (the
// caller then runs it with LtEpilogue::None and finishes the epilogue itself); raises a
// lucid::Error for a failed call.
bool lt_matmul(const LtGemm& g, const Device& device);

// Number of cached plans of this thread (tests read it).
size_t lt_plan_cache_size();

}  // namespace lucid::cuda
