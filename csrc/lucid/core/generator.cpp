// Philox generator state and the default generator (see generator.h).
#include "lucid/core/generator.h"

#include <chrono>
#include <random>

namespace lucid {

void Generator::manual_seed(uint64_t s) {
  std::lock_guard<std::mutex> g(mu_);
  seed_ = s;
  offset_ = 0;
}

uint64_t Generator::seed() {
  std::random_device rd;
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
               static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  manual_seed(s);
  return s;
}

uint64_t Generator::initial_seed() const {
  std::lock_guard<std::mutex> g(mu_);
  return seed_;
}

uint64_t Generator::offset() const {
  std::lock_guard<std::mutex> g(mu_);
  return offset_;
}

void Generator::set_state(uint64_t seed, uint64_t offset) {
  std::lock_guard<std::mutex> g(mu_);
  seed_ = seed;
  offset_ = (offset + 3) & ~uint64_t{3};  // ops start on a fresh Philox counter
}

uint64_t Generator::reserve(uint64_t n) {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t start = offset_;
  offset_ += (n + 3) & ~uint64_t{3};
  return start;
}

const std::shared_ptr<Generator>& default_generator() {
  static const std::shared_ptr<Generator> g = std::make_shared<Generator>();
  return g;
}

}  // namespace lucid
