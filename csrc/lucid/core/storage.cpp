#include "lucid/core/storage.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace lucid {

namespace {
std::atomic<int64_t> g_allocated{0}, g_peak{0};
}

int64_t memory_allocated() { return g_allocated.load(std::memory_order_relaxed); }
int64_t max_memory_allocated() { return g_peak.load(std::memory_order_relaxed); }
void reset_peak_memory_stats() { g_peak.store(g_allocated.load(std::memory_order_relaxed), std::memory_order_relaxed); }

std::shared_ptr<Storage> Storage::allocate(size_t nbytes) {
  auto s = std::make_shared<Storage>();
  size_t n = nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, n);
  if (!p) throw std::bad_alloc();
  s->data = p;
  s->nbytes = nbytes;
  const int64_t bytes = static_cast<int64_t>(n);
  int64_t now = g_allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  for (int64_t peak = g_peak.load(std::memory_order_relaxed);
       now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed);) {
  }
  s->owner = std::shared_ptr<void>(p, [bytes](void* q) {
    std::free(q);
    g_allocated.fetch_sub(bytes, std::memory_order_relaxed);
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
