// The float32 matmul precision setting (see matmul_precision.h).
#include "lucid/ops/matmul_precision.h"

#include <atomic>

namespace lucid {

namespace {
std::atomic<uint8_t> g_precision{static_cast<uint8_t>(MatmulPrecision::Highest)};
}  // namespace

MatmulPrecision float32_matmul_precision() {
  return static_cast<MatmulPrecision>(g_precision.load(std::memory_order_relaxed));
}

void set_float32_matmul_precision(MatmulPrecision p) {
  g_precision.store(static_cast<uint8_t>(p), std::memory_order_relaxed);
}

}  // namespace lucid
