// 16-lane (AVX-512F) float32 rows of the activations whose cost is their arithmetic rather than
// memory traffic: Sigmoid and SiLU (EfficientNet runs a SiLU after nearly every convolution; at
// batch 32 they were a third of its compiled call), Tanh, and the recurrences' small GEMM
// (kernels/rnn.cpp: LSTM and GRU steps). Used by scalar_vec.h's VecF32 rows, so eager
// kernels and the compiler's fused blocks both take them, on CPUs that have AVX-512F
// (avx512_rows(); the library is built for AVX2, these functions alone are compiled for
// AVX-512F with target attributes, so nothing else can pick up AVX-512 code). Each lane computes
// what the AVX2 row computes, bit for bit: Sleef's expf u10 gives the same bits in its AVX2 and
// AVX-512F builds (checked over all 2^32 inputs, and so is tanhf u35), and the rest is the same
// IEEE operations in the same order: each GEMM output sums its products over q in order with one
// fused multiply-add each, whatever the vector width (tests/cpp/test_vec_avx512.cpp compares).
#pragma once
#include <cstdint>

namespace lucid::cpu {

bool avx512_rows();  // this CPU runs AVX-512F (read once)
void sigmoid_rows_avx512(float* o, const float* a, int64_t n);
void silu_rows_avx512(float* o, const float* a, int64_t n);
void tanh_rows_avx512(float* o, const float* a, int64_t n);  // Sleef's 3.5-ulp tanhf
// C (M x P) = [C +] A (M x Q) @ R (Q x P), row-major and dense, for the columns [0, P / 64 * 64);
// returns that column count (the caller computes the rest).
int64_t gemm_rows_avx512(const float* A, int64_t M, int64_t Q, const float* R, int64_t P, float* C, bool accumulate);

}  // namespace lucid::cpu
