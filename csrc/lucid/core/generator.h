// Random number generation: the state of a counter-based Philox4x32-10 generator. Its whole
// state is (seed, offset): the n-th 32-bit draw of a stream is word n%4 of philox(key=seed,
// counter=n/4) (core/philox.h, the same on every device), so any element of any random op can be
// computed independently of the others. Random ops reserve a block of draws (reserve()) and
// record (seed, offset) in their attributes; their kernels then give the same numbers for any
// thread count, and a compiled step can replay or advance the stream by reading and bumping the
// offset.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>

namespace lucid {

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

}  // namespace lucid
