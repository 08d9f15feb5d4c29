// The CUDA caching allocator's queries beyond core/allocator.h's interface: torch.cuda's
// memory_stats (reserved bytes and their peak, cudaMalloc/cudaFree counts, retries, OOMs) and
// mem_get_info. The allocator itself (cuda_allocator.cu) is core/allocator.h's Allocator for
// DeviceType::CUDA, installed from a static initialiser, so Storage::allocate, memory_allocated
// and empty_cache reach it through allocator_for like the CPU's.
//
// One interface, two definitions (as device_info.h): cuda_allocator.cu in a CUDA build,
// ../no_cuda/cuda_allocator.cpp (raising "no CUDA backend") in a CPU-only one. No CUDA header is
// included here, so the bindings compile the same in both builds.
#pragma once
#include <cstddef>
#include <cstdint>

namespace lucid::cuda {

// Counters of one device's caching allocator (bytes are those of the rounded blocks).
struct AllocatorStats {
  int64_t allocated = 0;       // in blocks handed out (memory_allocated)
  int64_t peak_allocated = 0;  // max of `allocated` since the start or reset_peak
  int64_t reserved = 0;        // in segments obtained from cudaMalloc (allocated + cached)
  int64_t peak_reserved = 0;   // max of `reserved` since the start or reset_peak
  int64_t active_blocks = 0;   // blocks handed out now
  int64_t segments = 0;        // cudaMalloc'd segments held now
  int64_t num_allocs = 0;      // allocate calls answered
  int64_t num_device_alloc = 0;  // cudaMalloc calls that succeeded
  int64_t num_device_free = 0;   // cudaFree calls
  int64_t num_alloc_retries = 0;  // cudaMalloc failures answered by freeing the cache and retrying
  int64_t num_ooms = 0;           // OutOfMemoryErrors raised
};

// "native" (the caching allocator) or "cudaMallocAsync", as LUCID_CUDA_ALLOCATOR chose
// (torch.cuda.get_allocator_backend).
const char* allocator_backend();

// Device `index`'s counters; raises (as check_available) when there is no such device.
AllocatorStats allocator_stats(int index);

// Caps what the caching allocator of device `index` may reserve at fraction (0 to 1) of the GPU's
// memory (torch.cuda.set_per_process_memory_fraction); a request past it raises OutOfMemoryError
// after freeing the cache. NotImplementedError with the cudaMallocAsync backend.
void set_memory_fraction(double fraction, int index);

// cudaMemGetInfo of device `index`: {free, total} bytes of the whole GPU (torch.cuda.mem_get_info).
struct DeviceMemoryInfo {
  size_t free = 0;
  size_t total = 0;
};
DeviceMemoryInfo mem_get_info(int index);

}  // namespace lucid::cuda
