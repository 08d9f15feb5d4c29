// The CPU's allocator (core/allocator.h): 64-byte-aligned buffers from size classes with free
// lists, and its counters (memory_allocated, the peak, the idle bytes of the free lists).
//
// Buffer recycling. A training or inference loop allocates the same sizes every step (activations,
// gradients, kernel temporaries, compiled outputs); through malloc each large buffer takes the
// slow path, and glibc returns the top of the heap to the system on free, so the next step
// page-faults the memory back in (measured on the transformer training step: malloc, free and
// page clearing were ~12% of its time). Buffers of 4 KiB and more are rounded up to a size class
// (four per power of two: at most 25% larger) and, when freed, wait in their class's free list
// for the next allocation of that class. Idle bytes are bounded by LUCID_CPU_CACHE_MB (default
// 256; 0: every buffer goes straight back to malloc); lucid.empty_cache() frees them all.
// Smaller buffers go straight to malloc, whose small-size caches already do this.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "lucid/core/allocator.h"
#include "lucid/core/error.h"
#include "lucid/core/storage.h"

namespace lucid {

namespace {

constexpr size_t kPoolMin = 4096;

size_t size_class(size_t n) {
  if (n < kPoolMin) return (n + 63) / 64 * 64;
  int k = 63 - __builtin_clzll(n);  // 2^k <= n < 2^(k+1)
  size_t step = size_t{1} << (k - 2);
  return (n + step - 1) / step * step;
}

struct Pool {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free;  // size class -> idle buffers
  size_t idle = 0, limit;
  Pool() {
    const char* e = std::getenv("LUCID_CPU_CACHE_MB");
    limit = static_cast<size_t>(e ? std::max(0L, std::atol(e)) : 256L) << 20;
  }
  void* take(size_t cls) {
    if (cls < kPoolMin) return nullptr;
    std::lock_guard<std::mutex> lk(mu);
    auto it = free.find(cls);
    if (it == free.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    idle -= cls;
    return p;
  }
  void give(void* p, size_t cls) {
    if (cls >= kPoolMin) {
      std::lock_guard<std::mutex> lk(mu);
      if (idle + cls <= limit) {
        free[cls].push_back(p);
        idle += cls;
        return;
      }
    }
    std::free(p);
  }
  size_t release_all() {
    std::lock_guard<std::mutex> lk(mu);
    size_t freed = idle;
    for (auto& [cls, list] : free)
      for (void* p : list) std::free(p);
    free.clear();
    idle = 0;
    return freed;
  }
};

class CpuAllocator final : public Allocator {
 public:
  Allocation allocate(size_t nbytes, int) override {
    const size_t cls = size_class(nbytes == 0 ? 64 : nbytes);
    void* p = pool_.take(cls);
    if (!p) p = std::aligned_alloc(64, cls);
    if (!p) {
      lucid::empty_cache(Device{});  // idle buffers of other sizes (and packed weights) may be what is missing
      p = std::aligned_alloc(64, cls);
      LUCID_CHECK(p, Error, "out of memory: tried to allocate ", nbytes, " bytes (", (nbytes + (1 << 20) - 1) >> 20,
                  " MiB) on the CPU and the system refused");
    }
    const int64_t bytes = static_cast<int64_t>(cls);
    int64_t now = allocated_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    for (int64_t peak = peak_.load(std::memory_order_relaxed);
         now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed);) {
    }
    return {p, std::shared_ptr<void>(p, [this, cls](void* q) {
              allocated_.fetch_sub(static_cast<int64_t>(cls), std::memory_order_relaxed);
              pool_.give(q, cls);
            })};
  }

  MemoryStats stats(int) const override {
    MemoryStats s;
    s.allocated = allocated_.load(std::memory_order_relaxed);
    s.peak = peak_.load(std::memory_order_relaxed);
    std::lock_guard<std::mutex> lk(pool_.mu);
    s.cached = static_cast<int64_t>(pool_.idle);
    return s;
  }

  void reset_peak(int) override {
    peak_.store(allocated_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }

  int64_t empty_cache(int) override { return static_cast<int64_t>(pool_.release_all()); }

 private:
  std::atomic<int64_t> allocated_{0}, peak_{0};
  mutable Pool pool_;
};

}  // namespace

// Never destroyed: storages may outlive static destruction (Python finalisation).
Allocator& cpu_allocator() {
  static CpuAllocator* a = new CpuAllocator;
  return *a;
}

}  // namespace lucid
