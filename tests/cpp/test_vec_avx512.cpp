// The AVX-512F rows of backends/cpu/vec_avx512.h against the AVX2 rows of scalar_vec.h, bit for
// bit: random bit patterns (NaN payloads, infinities, subnormals, signed zeros) and every tail
// length, since the eager kernels and the compiled blocks take whichever the CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "lucid/backends/cpu/scalar_vec.h"
#include "lucid/backends/cpu/vec_avx512.h"

namespace lucid::cpu {
namespace {

std::vector<float> inputs() {
  std::mt19937 gen(7);
  std::vector<float> x(1 << 20);
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t u = gen();
    if (i % 3 == 0) {  // half of them in the activations' working range
      float f = std::uniform_real_distribution<float>(-30.f, 30.f)(gen);
      std::memcpy(&u, &f, 4);
    }
    std::memcpy(&x[i], &u, 4);
  }
  const float specials[] = {0.f, -0.f, 1e-45f, -1e-45f, 88.7f, -88.7f, 104.f, -104.f, 1e30f, -1e30f};
  std::memcpy(x.data(), specials, sizeof(specials));
  return x;
}

template <class Avx2, class Avx512>
void expect_same_bits(Avx2 avx2, Avx512 avx512, const char* what) {
  if (!avx512_rows()) GTEST_SKIP() << "this CPU has no AVX-512F";
  const std::vector<float> x = inputs();
  std::vector<float> a(x.size()), b(x.size());
  avx2(a.data(), x.data(), static_cast<int64_t>(x.size()));
  avx512(b.data(), x.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t ua, ub;
    std::memcpy(&ua, &a[i], 4);
    std::memcpy(&ub, &b[i], 4);
    ASSERT_EQ(ua, ub) << what << " at x = " << x[i];
  }
  for (int64_t n = 0; n <= 40; ++n) {  // tails: nothing written past n
    std::vector<float> pa(48, 7.f), pb(48, 7.f);
    avx2(pa.data(), x.data() + 100, n);
    avx512(pb.data(), x.data() + 100, n);
    ASSERT_EQ(0, std::memcmp(pa.data(), pb.data(), sizeof(float) * 48)) << what << " tail " << n;
  }
}

TEST(VecAvx512, SigmoidRowsEqualTheAvx2Rows) {
  expect_same_bits([](float* o, const float* a, int64_t n) { vec_map(o, a, n, [](__m256 x) { return v_sigmoid(x); }); },
                   sigmoid_rows_avx512, "sigmoid");
}

TEST(VecAvx512, SiluRowsEqualTheAvx2Rows) {
  expect_same_bits(
      [](float* o, const float* a, int64_t n) { vec_map(o, a, n, [](__m256 x) { return _mm256_mul_ps(x, v_sigmoid(x)); }); },
      silu_rows_avx512, "silu");
}

TEST(VecAvx512, TanhRowsEqualTheAvx2Rows) {
  expect_same_bits([](float* o, const float* a, int64_t n) { vec_map(o, a, n, [](__m256 x) { return Sleef_tanhf8_u35avx2(x); }); },
                   tanh_rows_avx512, "tanh");
}

// The recurrences' GEMM: each output is fma(a, r, acc) over q in order from 0 (or C's value),
// what the AVX2 tiles of kernels/rnn.cpp compute too; any row count and the column tail.
TEST(VecAvx512, RecurrenceGemmSumsEachColumnInOrder) {
  if (!avx512_rows()) GTEST_SKIP() << "this CPU has no AVX-512F";
  std::mt19937 gen(3);
  std::normal_distribution<float> nd;
  for (int64_t M : {1, 3, 4, 7, 16}) {
    for (bool accumulate : {false, true}) {
      const int64_t Q = 37, P = 200;  // 3 tiles of 64 columns, then 8 left to the caller
      std::vector<float> A(M * Q), R(Q * P), C(M * P), want(M * P);
      for (float& v : A) v = nd(gen);
      for (float& v : R) v = nd(gen);
      for (float& v : C) v = nd(gen);
      want = C;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t p = 0; p < 192; ++p) {
          float acc = accumulate ? want[m * P + p] : 0.f;
          for (int64_t q = 0; q < Q; ++q) acc = std::fma(A[m * Q + q], R[q * P + p], acc);
          want[m * P + p] = acc;
        }
      ASSERT_EQ(192, gemm_rows_avx512(A.data(), M, Q, R.data(), P, C.data(), accumulate));
      ASSERT_EQ(0, std::memcmp(C.data(), want.data(), sizeof(float) * C.size())) << "M " << M << " acc " << accumulate;
    }
  }
}

}  // namespace
}  // namespace lucid::cpu
