// Random number generation: a counter-based Philox4x32-10 generator. Its whole state is
// (seed, offset): the n-th 32-bit draw of a stream is word n%4 of philox(key=seed, counter=n/4),
// so any element of any random op can be computed independently of the others. Random ops
// reserve a block of draws (reserve()) and record (seed, offset) in their attributes; their
// kernels then give the same numbers for any thread count, and a compiled step can replay or
// advance the stream by reading and bumping the offset.
#pragma once
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
