// Storage allocation through the device's allocator, the per-device memory statistics, and the
// registry of derived caches that live no longer than their storages (see storage.h). The CPU's
// size classes and free lists are backends/cpu/cpu_allocator.cpp.
#include "lucid/core/storage.h"

#include <mutex>
#include <vector>

#include "lucid/core/allocator.h"

namespace lucid {

namespace {

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

int64_t memory_allocated(const Device& device) {
  return allocator_for(device, "memory_allocated").stats(device.index).allocated;
}
int64_t max_memory_allocated(const Device& device) {
  return allocator_for(device, "max_memory_allocated").stats(device.index).peak;
}
void reset_peak_memory_stats(const Device& device) {
  allocator_for(device, "reset_peak_memory_stats").reset_peak(device.index);
}

void register_derived_cache(const DerivedCache* cache) {
  std::lock_guard<std::mutex> lk(derived_caches().mu);
  derived_caches().list.push_back(cache);
}

Storage::~Storage() {
  if (has_derived.load(std::memory_order_relaxed))
    for (const DerivedCache* c : derived_cache_list()) c->storage_freed(this);
}

// The derived caches hold CPU memory: they count in the CPU's cached bytes, and the CPU's
// empty_cache drops them too.
int64_t memory_cached(const Device& device) {
  Allocator& a = allocator_for(device, "memory_cached");
  int64_t n = 0;
  if (device.is_cpu())
    for (const DerivedCache* c : derived_cache_list()) n += c->bytes();
  return n + a.stats(device.index).cached;
}
int64_t empty_cache(const Device& device) {
  Allocator& a = allocator_for(device, "empty_cache");
  int64_t n = 0;
  if (device.is_cpu())
    for (const DerivedCache* c : derived_cache_list()) n += c->release_all();
  return n + a.empty_cache(device.index);
}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, const Device& device) {
  Allocator& a = allocator_for(device, "allocate");
  auto s = std::make_shared<Storage>();
  Allocation buf = a.allocate(nbytes, device.index);
  s->data = buf.data;
  s->nbytes = nbytes;
  s->device = device;
  s->owner = std::move(buf.owner);
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
