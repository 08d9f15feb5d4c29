// Storage: one reference-counted buffer shared by a tensor and all its views. The version
// counter lives here so every view of a buffer sees in-place writes (autograd uses it to
// detect a saved tensor that was modified before backward). Storage::allocate takes its bytes
// from the device's allocator (core/allocator.h); the per-device memory statistics below read
// that allocator's counters.
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
  std::atomic<bool> has_derived{false};  // a DerivedCache holds data computed from this buffer

  ~Storage();  // tells the derived caches (when has_derived), then `owner` frees the buffer
  // A buffer from device's allocator (allocator_for: raises for a device type without one).
  static std::shared_ptr<Storage> allocate(size_t nbytes, const Device& device = Device{});
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, std::shared_ptr<void> owner);
  void bump_version() { version.fetch_add(1, std::memory_order_relaxed); }
  void mark_derived() { has_derived.store(true, std::memory_order_relaxed); }
};

// A cache of data derived from storages' bytes (the GEMM packed weights in
// backends/cpu/dnnl_matmul.cpp). Its entries live no longer than their storage: a storage marked
// with mark_derived() calls every registered cache's storage_freed from its destructor. Its
// bytes count in memory_cached(), and empty_cache() empties it. The callbacks must not destroy
// storages themselves (they run inside a storage's destructor).
struct DerivedCache {
  void (*storage_freed)(const Storage* s);
  int64_t (*bytes)();
  int64_t (*release_all)();  // drops every entry; returns the bytes freed
};
void register_derived_cache(const DerivedCache* cache);  // once per cache, kept for the process

// Per device (the CPU by default), through its allocator's counters (MemoryStats); each raises
// NotImplementedError for a device type without an allocator in this build.
// Bytes held by the buffers lucid allocated (Storage::allocate: tensors, compiled executables'
// arenas), not those it wraps (NumPy, DLPack). For memory tests and tools; as
// torch.cuda.memory_allocated / max_memory_allocated / reset_peak_memory_stats.
// Sizes are those of the buffers held (rounded up to a size class on the CPU, see
// backends/cpu/cpu_allocator.cpp).
int64_t memory_allocated(const Device& device = Device{});
int64_t max_memory_allocated(const Device& device = Device{});
void reset_peak_memory_stats(const Device& device = Device{});  // the peak restarts from the current value
// Memory kept for reuse: freed buffers waiting in the allocator's free lists, plus, on the CPU,
// every DerivedCache's bytes (packed GEMM weights); empty_cache() frees both (returns the bytes).
int64_t memory_cached(const Device& device = Device{});
int64_t empty_cache(const Device& device = Device{});

}  // namespace lucid
