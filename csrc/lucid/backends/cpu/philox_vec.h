// The CPU's form of the Philox stream (core/philox.h): 8 consecutive blocks at once, one per
// AVX2 lane, giving the same words as the scalar block function (tests/cpp/test_reduce_random.cpp
// checks it). The random kernels (backends/cpu/kernels/random.cpp) draw through it.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace lucid::cpu {

// Draws of 8 consecutive blocks (block0 .. block0 + 7 of the key `seed`) in stream order:
// out[4 * b + q] = word q of block block0 + b. AVX2: the 8 blocks run in the 8 lanes.
inline void philox_draws8(uint64_t block0, uint64_t seed, uint32_t* out) {
  alignas(32) uint32_t lo[8], hi[8];
  for (int b = 0; b < 8; ++b) {
    uint64_t c = block0 + static_cast<uint64_t>(b);
    lo[b] = static_cast<uint32_t>(c);
    hi[b] = static_cast<uint32_t>(c >> 32);
  }
  __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u)), m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  for (int r = 0; r < 10; ++r) {
    // 32x32 -> 64-bit products of the even and odd lanes, split into low and high words.
    __m256i e0 = _mm256_mul_epu32(c0, m0), o0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
    __m256i e1 = _mm256_mul_epu32(c2, m1), o1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
    __m256i lo0 = _mm256_blend_epi32(e0, _mm256_slli_epi64(o0, 32), 0xAA);
    __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(e0, 32), o0, 0xAA);
    __m256i lo1 = _mm256_blend_epi32(e1, _mm256_slli_epi64(o1, 32), 0xAA);
    __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(e1, 32), o1, 0xAA);
    __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  // Transpose the 4 words x 8 lanes into stream order.
  __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
  __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
  __m256i b0 = _mm256_unpacklo_epi64(t0, t2), b1 = _mm256_unpackhi_epi64(t0, t2);
  __m256i b2 = _mm256_unpacklo_epi64(t1, t3), b3 = _mm256_unpackhi_epi64(t1, t3);
  // b0 = blocks (0, 4), b1 = (1, 5), b2 = (2, 6), b3 = (3, 7), 128-bit halves.
  __m256i* o = reinterpret_cast<__m256i*>(out);
  _mm256_storeu_si256(o + 0, _mm256_permute2x128_si256(b0, b1, 0x20));
  _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(b2, b3, 0x20));
  _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(b0, b1, 0x31));
  _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(b2, b3, 0x31));
}

}  // namespace lucid::cpu
