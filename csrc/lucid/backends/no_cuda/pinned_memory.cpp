// The CPU-only build's definition of lucid/backends/cuda/pinned_memory.h: no CUDA driver to pin
// memory with, so pin_memory raises and nothing is pinned. CMake builds either this file or
// backends/cuda/, never both.
#include "lucid/backends/cuda/pinned_memory.h"

#include "lucid/backends/cuda/device_info.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

Tensor pin_memory(const Tensor&) {
  throw Error(str("pin_memory: pinned memory needs a CUDA device, and none is available: ", unavailable_reason()));
}

bool is_pinned(const void*) { return false; }

void record_host_use(const void*, const StreamRef&) {
  throw Error(str("record_host_use: no CUDA device is available: ", unavailable_reason()));
}

}  // namespace lucid::cuda
