// Allocator: the interface a backend implements to hand out the memory of its device, and the
// table by device type that Storage::allocate and the memory statistics look it up in. Core
// holds only the interface; each backend owns its allocator (the CPU's size-class pool is
// backends/cpu/cpu_allocator.cpp; a CUDA caching allocator goes in backends/cuda/), so adding a
// device adds an allocator without touching Storage or its callers.
//
// Statistics are per device (type and index), as torch.cuda.memory_allocated(device) is; the
// process-wide functions over them (memory_allocated(Device) ...) are in core/storage.h, which
// adds the CPU's derived caches (packed GEMM weights) to its cached bytes.
//
// Static initialisation: the CPU allocator is not looked up in the table. Every build links the
// CPU backend, and cpu_allocator() (declared here, defined in backends/cpu/cpu_allocator.cpp)
// constructs it on first use, so a CPU tensor made while static initialisers run (a registrar
// or a global constant in any translation unit) finds it whatever the initialisation order. The
// table holds the other device types' allocators: a backend sets its slot from a static
// initialiser (set_allocator), and the table is a constant-initialised array, so it is valid
// before any initialiser runs; a device type without an allocator raises on lookup.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "lucid/core/device.h"

namespace lucid {

// One buffer: `data` and the owner that frees it (owner's deleter returns the buffer to the
// allocator that made it, so a buffer outlives any change of the table). For the CPU allocator
// owner.get() == data (dnnl_matmul's packable_storage relies on it).
struct Allocation {
  void* data = nullptr;
  std::shared_ptr<void> owner;
};

// Byte counts of one device, as its allocator holds them (buffers rounded up to its block sizes).
struct MemoryStats {
  int64_t allocated = 0;  // in live buffers (torch.cuda.memory_allocated)
  int64_t peak = 0;       // the most `allocated` has been since the start or reset_peak
  int64_t cached = 0;     // freed and kept for reuse; reserved = allocated + cached
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // nbytes may be 0 (a valid, unique pointer is still returned). Raises lucid::Error when the
  // device is out of memory, after releasing its cached buffers and trying again.
  virtual Allocation allocate(size_t nbytes, int device_index) = 0;
  virtual MemoryStats stats(int device_index) const = 0;
  virtual void reset_peak(int device_index) = 0;  // the peak restarts from the current value
  virtual int64_t empty_cache(int device_index) = 0;  // frees the cached buffers; returns their bytes
};

// The CPU's allocator (backends/cpu/cpu_allocator.cpp); constructed on first use, never destroyed.
Allocator& cpu_allocator();

// Sets device type t's allocator (not the CPU's) and returns the previous one (null at first):
// a backend calls it once from a static initialiser; a test may install a stand-in and put the
// previous one back. Buffers already handed out keep returning to the allocator that made them.
Allocator* set_allocator(DeviceType t, Allocator* a);

// The allocator of device d. Raises NotImplementedError naming `what` (the caller, e.g.
// "memory_allocated") and the device when its type has no allocator in this build.
Allocator& allocator_for(const Device& d, const char* what);

}  // namespace lucid
