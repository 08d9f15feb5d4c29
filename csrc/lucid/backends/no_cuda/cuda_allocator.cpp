// The CPU-only build's definition of lucid/backends/cuda/cuda_allocator.h: no CUDA backend, so no
// CUDA allocator to ask. CMake builds either this file or backends/cuda/, never both.
#include "lucid/backends/cuda/cuda_allocator.h"

#include "lucid/backends/cuda/device_info.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

void set_memory_fraction(double, int) {
  throw Error(str("cuda set_per_process_memory_fraction: no CUDA device is available: ", unavailable_reason()));
}

const char* allocator_backend() {
  throw Error(str("cuda get_allocator_backend: no CUDA device is available: ", unavailable_reason()));
}

AllocatorStats allocator_stats(int) {
  throw Error(str("cuda memory_stats: no CUDA device is available: ", unavailable_reason()));
}

DeviceMemoryInfo mem_get_info(int) {
  throw Error(str("cuda mem_get_info: no CUDA device is available: ", unavailable_reason()));
}

void record_stream(const void*, int, uintptr_t) {
  throw Error(str("cuda record_stream: no CUDA device is available: ", unavailable_reason()));
}

}  // namespace lucid::cuda
