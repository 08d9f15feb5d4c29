// Storage allocation (size classes and free lists), the memory counters, and the registry of
// derived caches that live no longer than their storages (see storage.h).
#include "lucid/core/storage.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "lucid/core/error.h"

namespace lucid {

namespace {

std::atomic<int64_t> g_allocated{0}, g_peak{0};

// Buffer recycling. A training or inference loop allocates the same sizes every step (activations,
// gradients, kernel temporaries, compiled outputs); through malloc each large buffer takes the
// slow path, and glibc returns the top of the heap to the system on free, so the next step
// page-faults the memory back in (measured on the transformer training step: malloc, free and
// page clearing were ~12% of its time). Buffers of 4 KiB and more are rounded up to a size class
// (four per power of two: at most 25% larger) and, when freed, wait in their class's free list
// for the next allocation of that class. Idle bytes are bounded by LUCID_CPU_CACHE_MB (default
// 256; 0: every buffer goes straight back to malloc); lucid.empty_cache() frees them all.
// Smaller buffers go straight to malloc, whose small-size caches already do this.
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

// Never destroyed: storages may outlive static destruction (Python finalisation).
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

// Registered derived caches; never destroyed (storages may die during static destruction).
struct DerivedCaches {
  std::mutex mu;
  std::vector<const DerivedCache*> list;
};
DerivedCaches& derived_caches() {
  static DerivedCaches* d = new DerivedCaches;
  return *d;
}
std::vector<const DerivedCache*> derived_cache_list() {
  std::lock_guard<std::mutex> lk(derived_caches().mu);
  return derived_caches().list;
}

}  // namespace

int64_t memory_allocated() { return g_allocated.load(std::memory_order_relaxed); }
int64_t max_memory_allocated() { return g_peak.load(std::memory_order_relaxed); }
void reset_peak_memory_stats() { g_peak.store(g_allocated.load(std::memory_order_relaxed), std::memory_order_relaxed); }

void register_derived_cache(const DerivedCache* cache) {
  std::lock_guard<std::mutex> lk(derived_caches().mu);
  derived_caches().list.push_back(cache);
}

Storage::~Storage() {
  if (has_derived.load(std::memory_order_relaxed))
    for (const DerivedCache* c : derived_cache_list()) c->storage_freed(this);
}

int64_t memory_cached() {
  int64_t n = 0;
  for (const DerivedCache* c : derived_cache_list()) n += c->bytes();
  std::lock_guard<std::mutex> lk(pool().mu);
  return n + static_cast<int64_t>(pool().idle);
}
int64_t empty_cache() {
  int64_t n = 0;
  for (const DerivedCache* c : derived_cache_list()) n += c->release_all();
  return n + static_cast<int64_t>(pool().release_all());
}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes) {
  auto s = std::make_shared<Storage>();
  const size_t cls = size_class(nbytes == 0 ? 64 : nbytes);
  void* p = pool().take(cls);
  if (!p) p = std::aligned_alloc(64, cls);
  if (!p) {
    empty_cache();  // idle buffers of other sizes may be what is missing
    p = std::aligned_alloc(64, cls);
    LUCID_CHECK(p, Error, "out of memory: tried to allocate ", nbytes, " bytes (", (nbytes + (1 << 20) - 1) >> 20,
                " MiB) on the CPU and the system refused");
  }
  s->data = p;
  s->nbytes = nbytes;
  const int64_t bytes = static_cast<int64_t>(cls);
  int64_t now = g_allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  for (int64_t peak = g_peak.load(std::memory_order_relaxed);
       now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed);) {
  }
  s->owner = std::shared_ptr<void>(p, [cls](void* q) {
    g_allocated.fetch_sub(static_cast<int64_t>(cls), std::memory_order_relaxed);
    pool().give(q, cls);
  });
  return s;
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, std::shared_ptr<void> owner) {
  auto s = std::make_shared<Storage>();
  s->data = data;
  s->nbytes = nbytes;
  s->owner = std::move(owner);
  return s;
}

}  // namespace lucid
