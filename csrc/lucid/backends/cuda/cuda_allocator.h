// The CUDA caching allocator's calls beyond core/allocator.h's interface: torch.cuda's
// memory_stats (reserved bytes and their peak, cudaMalloc/cudaFree counts, retries, OOMs),
// mem_get_info, and torch's Tensor.record_stream (record_stream below). The allocator itself
// (cuda_allocator.cu) is core/allocator.h's Allocator for DeviceType::CUDA, installed from a
// static initialiser, so Storage::allocate, memory_allocated and empty_cache reach it through
// allocator_for like the CPU's.
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
  int64_t allocated = 0;       // in blocks held by tensors (memory_allocated)
  int64_t peak_allocated = 0;  // max of `allocated` since the start or reset_peak
  int64_t reserved = 0;        // in segments obtained from cudaMalloc (allocated + cached)
  int64_t peak_reserved = 0;   // max of `reserved` since the start or reset_peak
  int64_t active_blocks = 0;   // blocks not reusable now: held by tensors, or freed and pending
  int64_t active_bytes = 0;    // their bytes: `allocated` plus the pending blocks (record_stream)
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

// torch's Tensor.record_stream: the buffer at `ptr` of device `index` (a storage's base pointer,
// Storage::data, as the allocator returned it; not a view's offset pointer) is used by work queued
// on `stream` (a cudaStream_t of that device as an integer, 0: the legacy default stream), so once
// its storage is freed it is not reused before that work, queued until the free, has finished.
// The caching allocator holds the freed block on a pending list until an event recorded on each
// such stream at the free has completed; the cudaMallocAsync backend orders its cudaFreeAsync
// after those events. Nothing for the buffer's own stream or an address the allocator did not
// hand out (memory imported through DLPack), as torch.
void record_stream(const void* ptr, int index, uintptr_t stream);

}  // namespace lucid::cuda
