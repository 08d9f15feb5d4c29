// Vector helpers for the nn and loss CPU kernels (backends/cpu/kernels/: softmax, attention,
// loss_nll), AVX2 + SLEEF, the baseline the build targets: row max (NaN-propagating), in-place
// exp over a buffer, sums with double accumulation, and the small register-tiled GEMM and
// transpose of the attention kernels. They work on the compute type C (float or double); 16-bit
// inputs are converted into a float buffer first by the callers. Host only (x86 intrinsics).
#pragma once
#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace lucid::nnvec {

inline float vmax(const float* x, int64_t n) {
  int64_t i = 0;
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 nan = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    m = _mm256_max_ps(m, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  alignas(32) float mb[8], nb[8];
  _mm256_store_ps(mb, m);
  _mm256_store_ps(nb, nan);
  float r = -std::numeric_limits<float>::infinity();
  bool has_nan = false;
  for (int k = 0; k < 8; ++k) { r = mb[k] > r ? mb[k] : r; has_nan |= nb[k] != 0.f; }
  for (; i < n; ++i) { r = x[i] > r ? x[i] : r; has_nan |= std::isnan(x[i]); }
  return has_nan ? std::numeric_limits<float>::quiet_NaN() : r;
}

inline double vmax(const double* x, int64_t n) {
  double r = -std::numeric_limits<double>::infinity();
  bool has_nan = false;
  for (int64_t i = 0; i < n; ++i) { r = x[i] > r ? x[i] : r; has_nan |= std::isnan(x[i]); }
  return has_nan ? std::numeric_limits<double>::quiet_NaN() : r;
}

// x[i] = exp(x[i] - sub)
inline void vexp_sub(float* x, int64_t n, float sub) {
  int64_t i = 0;
  __m256 s = _mm256_set1_ps(sub);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), s)));
  for (; i < n; ++i) x[i] = std::exp(x[i] - sub);
}

inline void vexp_sub(double* x, int64_t n, double sub) {
  int64_t i = 0;
  __m256d s = _mm256_set1_pd(sub);
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(x + i, Sleef_expd4_u10avx2(_mm256_sub_pd(_mm256_loadu_pd(x + i), s)));
  for (; i < n; ++i) x[i] = std::exp(x[i] - sub);
}

template <class C>
inline double vsum(const C* x, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]);
  return s;
}

}  // namespace lucid::nnvec

namespace lucid::nnvec {

// Small row-major GEMM for the attention kernels (the linalg family's matmul is not a dependency
// of the nn ops): Cm[M,N] = alpha * A[M,K] B[K,N] (+ Cm when accumulate). A 4 x (2 vectors)
// register tile accumulates over K; the last N % 16 columns go through the same tile from a
// zero-padded copy, the last M % 4 rows through a row-at-a-time loop.
template <class C>
void gemm(int64_t M, int64_t N, int64_t K, const C* A, int64_t lda, const C* B, int64_t ldb, C* Cm, int64_t ldc, C alpha,
          bool accumulate) {
  constexpr int MR = 4;
  constexpr int NR = sizeof(C) == 4 ? 16 : 8;
  const int64_t n_full = N / NR * NR, rem = N - n_full;
  // The last N % NR columns of B, zero-padded to NR, so they take the register tile too (a
  // column at a time, their strided dot products cost more than the whole tile).
  std::vector<C> pad;
  if (rem && M >= MR) {
    pad.assign(static_cast<size_t>(K * NR), C(0));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < rem; ++c) pad[k * NR + c] = B[k * ldb + n_full + c];
  }
  auto tile = [&](int64_t i, const C* Bt, int64_t ldbt, int64_t j, int64_t ncols) {
    C acc[MR][NR] = {};
    for (int64_t k = 0; k < K; ++k) {
      const C* b = Bt + k * ldbt;
      for (int r = 0; r < MR; ++r) {
        const C a = A[(i + r) * lda + k];
#pragma omp simd
        for (int c = 0; c < NR; ++c) acc[r][c] += a * b[c];
      }
    }
    for (int r = 0; r < MR; ++r) {
      C* o = Cm + (i + r) * ldc + j;
      for (int64_t c = 0; c < ncols; ++c) o[c] = (accumulate ? o[c] : C(0)) + alpha * acc[r][c];
    }
  };
  int64_t i = 0;
  for (; i + MR <= M; i += MR) {
    for (int64_t j = 0; j < n_full; j += NR) tile(i, B + j, ldb, j, NR);
    if (rem) tile(i, pad.data(), NR, n_full, rem);
  }
  for (; i < M; ++i) {
    C* o = Cm + i * ldc;
    if (!accumulate)
      for (int64_t j = 0; j < N; ++j) o[j] = C(0);
    for (int64_t k = 0; k < K; ++k) {
      const C a = alpha * A[i * lda + k];
      const C* b = B + k * ldb;
#pragma omp simd
      for (int64_t j = 0; j < N; ++j) o[j] += a * b[j];
    }
  }
}

// dst[N, M] = src[M, N]^T (leading dims given).
template <class C>
void transpose(int64_t M, int64_t N, const C* src, int64_t lds, C* dst, int64_t ldd) {
  constexpr int64_t T = 32;
  for (int64_t i0 = 0; i0 < M; i0 += T)
    for (int64_t j0 = 0; j0 < N; j0 += T)
      for (int64_t i = i0; i < std::min(M, i0 + T); ++i)
        for (int64_t j = j0; j < std::min(N, j0 + T); ++j) dst[j * ldd + i] = src[i * lds + j];
}

}  // namespace lucid::nnvec
