// Storage: one reference-counted buffer shared by a tensor and all its views. The version
// counter lives here so every view of a buffer sees in-place writes (autograd uses it to
// detect a saved tensor that was modified before backward).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "lucid/core/device.h"

namespace lucid {

struct Storage {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  std::shared_ptr<void> owner;  // frees `data` (our allocator, or a NumPy/DLPack producer)
  std::atomic<uint32_t> version{0};

  static std::shared_ptr<Storage> allocate(size_t nbytes);
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, std::shared_ptr<void> owner);
  void bump_version() { version.fetch_add(1, std::memory_order_relaxed); }
};

// Bytes held by the buffers lucid allocated (Storage::allocate: tensors, compiled executables'
// arenas), not those it wraps (NumPy, DLPack). For memory tests and tools; as
// torch.cuda.memory_allocated / max_memory_allocated / reset_peak_memory_stats.
// Sizes are those of the buffers held (rounded up to a size class, see storage.cpp).
int64_t memory_allocated();
int64_t max_memory_allocated();
void reset_peak_memory_stats();  // the peak restarts from the current value
// Freed buffers kept for reuse (storage.cpp): their bytes, and freeing them (returns the bytes).
int64_t memory_cached();
int64_t empty_cache();

}  // namespace lucid
