// Random number generation: a counter-based Philox4x32-10 generator. Its whole state is
// (seed, offset): the n-th 32-bit draw of a stream is word n%4 of philox(key=seed, counter=n/4),
// so any element of any random op can be computed independently of the others. Random ops
// reserve a block of draws (reserve()) and record (seed, offset) in their attributes; their
// kernels then give the same numbers for any thread count, and a compiled step can replay or
// advance the stream by reading and bumping the offset.
#pragma once
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>

namespace lucid {

// Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"),
// on a full 128-bit counter and 64-bit key (checked against the Random123 known answers).
inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c[0];
    uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// The generator's block function: counter = (counter, 0) as 128 bits, key = seed.
inline std::array<uint32_t, 4> philox4x32_10(uint64_t counter, uint64_t key) {
  return philox4x32_10({static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u},
                       static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
}

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

class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;
  explicit Generator(uint64_t seed = kDefaultSeed) : seed_(seed) {}

  // Resets the stream: seed s, offset 0.
  void manual_seed(uint64_t s);
  // Seeds from a non-deterministic source and returns the seed.
  uint64_t seed();
  uint64_t initial_seed() const;
  uint64_t offset() const;
  void set_state(uint64_t seed, uint64_t offset);

  // Reserves n 32-bit draws (rounded up to a multiple of 4, so every op starts on a fresh
  // Philox counter) and returns the offset they start at.
  uint64_t reserve(uint64_t n);

 private:
  mutable std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The process-wide default generator (lucid.manual_seed, lucid.random.*).
const std::shared_ptr<Generator>& default_generator();

// Draw helpers over a reserved block: the draw at absolute index n.
inline uint32_t philox_draw(uint64_t seed, uint64_t n) { return philox4x32_10(n >> 2, seed)[n & 3]; }

}  // namespace lucid
