// The AVX-512F rows of vec_avx512.h. Only <immintrin.h> and this file's own functions are
// compiled for AVX-512F (target attributes, no file-wide -mavx512f), so no inline function of a
// shared header is emitted here in an AVX-512 form the linker could hand to the AVX2 code.
#include "lucid/backends/cpu/vec_avx512.h"

#include <immintrin.h>

// sleef.h declares the AVX-512F entry points only when the whole file is compiled for AVX-512F.
extern "C" __m512 Sleef_expf16_u10avx512f(__m512);
extern "C" __m512 Sleef_tanhf16_u35avx512f(__m512);

namespace lucid::cpu {

namespace {

// 1 / (1 + exp(0 - x)): scalar_vec.h's v_sigmoid (0 - x, not -x: the same bits for x = +0).
__attribute__((target("avx512f"))) inline __m512 sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.f);
  return _mm512_div_ps(one, _mm512_add_ps(one, Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

template <class F>
__attribute__((target("avx512f"))) inline void rows16(float* o, const float* a, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, f(_mm512_loadu_ps(a + i)));
  if (i < n) {  // masked-off lanes read as 0, as the AVX2 row's zero-padded tail
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(o + i, m, f(_mm512_maskz_loadu_ps(m, a + i)));
  }
}

}  // namespace

bool avx512_rows() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

__attribute__((target("avx512f"))) void sigmoid_rows_avx512(float* o, const float* a, int64_t n) {
  rows16(o, a, n, [](__m512 x) __attribute__((target("avx512f"))) { return sigmoid16(x); });
}

__attribute__((target("avx512f"))) void silu_rows_avx512(float* o, const float* a, int64_t n) {
  rows16(o, a, n, [](__m512 x) __attribute__((target("avx512f"))) { return _mm512_mul_ps(x, sigmoid16(x)); });
}

__attribute__((target("avx512f"))) void tanh_rows_avx512(float* o, const float* a, int64_t n) {
  rows16(o, a, n, [](__m512 x) __attribute__((target("avx512f"))) { return Sleef_tanhf16_u35avx512f(x); });
}

namespace {

// Rows x 64 columns of C at column p, the accumulators in registers across the whole q loop.
template <int Rows>
__attribute__((target("avx512f"))) inline void gemm_tile16(const float* A, int64_t Q, const float* R, int64_t P, float* C,
                                                          bool accumulate, int64_t p) {
  __m512 acc[Rows][4];
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = accumulate ? _mm512_loadu_ps(C + i * P + p + 16 * j) : _mm512_setzero_ps();
  for (int64_t q = 0; q < Q; ++q) {
    const float* r = R + q * P + p;
    const __m512 r0 = _mm512_loadu_ps(r), r1 = _mm512_loadu_ps(r + 16), r2 = _mm512_loadu_ps(r + 32),
                 r3 = _mm512_loadu_ps(r + 48);
    for (int i = 0; i < Rows; ++i) {
      const __m512 a = _mm512_set1_ps(A[i * Q + q]);
      acc[i][0] = _mm512_fmadd_ps(a, r0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(a, r1, acc[i][1]);
      acc[i][2] = _mm512_fmadd_ps(a, r2, acc[i][2]);
      acc[i][3] = _mm512_fmadd_ps(a, r3, acc[i][3]);
    }
  }
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(C + i * P + p + 16 * j, acc[i][j]);
}

}  // namespace

__attribute__((target("avx512f"))) int64_t gemm_rows_avx512(const float* A, int64_t M, int64_t Q, const float* R, int64_t P,
                                                            float* C, bool accumulate) {
  const int64_t pv = P / 64 * 64;
  int64_t m = 0;
  for (; m + 4 <= M; m += 4)
    for (int64_t p = 0; p < pv; p += 64) gemm_tile16<4>(A + m * Q, Q, R, P, C + m * P, accumulate, p);
  for (; m < M; ++m)
    for (int64_t p = 0; p < pv; p += 64) gemm_tile16<1>(A + m * Q, Q, R, P, C + m * P, accumulate, p);
  return pv;
}

}  // namespace lucid::cpu
