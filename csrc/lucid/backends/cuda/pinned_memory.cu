// The CUDA build's pinned host memory (pinned_memory.h): cudaHostAlloc'd buffers cached by size
// class, with the events of the asynchronous copies that used each one.
#include <cuda_runtime_api.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "lucid/backends/cuda/device_info.h"
#include "lucid/backends/cuda/pinned_memory.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/core/allocator.h"
#include "lucid/core/device.h"
#include "lucid/core/error.h"
#include "lucid/core/memory_error.h"
#include "lucid/core/storage.h"

namespace lucid::cuda {

namespace {

constexpr size_t kMinPinned = 512;

size_t size_class(size_t n) {
  size_t c = kMinPinned;
  while (c < n) c <<= 1;
  return c;
}

struct HostBlock {
  char* ptr = nullptr;
  size_t size = 0;  // the size class
  std::vector<std::pair<int, cudaEvent_t>> uses;  // (device, event) of copies queued on it
};

class PinnedCache {
 public:
  Allocation allocate(size_t nbytes) {
    const size_t cls = size_class(nbytes);
    std::lock_guard<std::mutex> lk(mu_);
    HostBlock* b = take_free(cls);
    if (!b) b = fresh(cls, nbytes);
    Allocation a;
    a.data = b->ptr;
    a.owner = std::shared_ptr<void>(b->ptr, [this, b](void*) { release(b); });
    return a;
  }

  bool contains(const void* p) {
    const char* c = static_cast<const char*>(p);
    std::lock_guard<std::mutex> lk(mu_);
    auto it = by_ptr_.upper_bound(c);
    if (it == by_ptr_.begin()) return false;
    --it;
    return c < it->first + it->second->size;
  }

  void record_use(const void* p, const StreamRef& s) {
    const char* c = static_cast<const char*>(p);
    std::lock_guard<std::mutex> lk(mu_);
    auto it = by_ptr_.upper_bound(c);
    if (it == by_ptr_.begin()) return;
    --it;
    HostBlock* b = it->second;
    if (c >= b->ptr + b->size) return;
    DeviceGuard g(s.device);
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    cudaError_t st = cudaEventRecord(e, reinterpret_cast<cudaStream_t>(s.handle));
    if (st != cudaSuccess) cudaEventDestroy(e);
    check_cuda(st, "cudaEventRecord");
    b->uses.emplace_back(s.device, e);
  }

 private:
  // A free block of class cls whose recorded copies have all finished (their events destroyed).
  HostBlock* take_free(size_t cls) {
    auto it = free_.find(cls);
    if (it == free_.end()) return nullptr;
    std::vector<HostBlock*>& v = it->second;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!uses_finished(v[i])) continue;
      HostBlock* b = v[i];
      v[i] = v.back();
      v.pop_back();
      return b;
    }
    return nullptr;
  }

  static bool uses_finished(HostBlock* b) {
    while (!b->uses.empty()) {
      auto [device, e] = b->uses.back();
      DeviceGuard g(device);
      cudaError_t st = cudaEventQuery(e);
      if (st == cudaErrorNotReady) {
        cudaGetLastError();
        return false;
      }
      cudaEventDestroy(e);
      b->uses.pop_back();
      check_cuda(st, "cudaEventQuery (a pinned buffer's copy)");
    }
    return true;
  }

  HostBlock* fresh(size_t cls, size_t nbytes) {
    void* p = nullptr;
    cudaError_t st = cudaHostAlloc(&p, cls, cudaHostAllocDefault);
    if (st == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_unused();
      st = cudaHostAlloc(&p, cls, cudaHostAllocDefault);
      if (st == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw OutOfMemoryError(str("pin_memory: out of pinned host memory: cudaHostAlloc of ", cls, " bytes (for ",
                                   nbytes, " requested) failed, after freeing the ", "cached pinned buffers"));
      }
    }
    check_cuda(st, "cudaHostAlloc");
    auto* b = new HostBlock;
    b->ptr = static_cast<char*>(p);
    b->size = cls;
    by_ptr_.emplace(b->ptr, b);
    return b;
  }

  // Frees the cached buffers whose copies have finished (caller holds mu_).
  void release_unused() {
    for (auto& [cls, v] : free_) {
      for (size_t i = 0; i < v.size();) {
        HostBlock* b = v[i];
        if (!uses_finished(b)) {
          ++i;
          continue;
        }
        cudaFreeHost(b->ptr);
        by_ptr_.erase(b->ptr);
        delete b;
        v[i] = v.back();
        v.pop_back();
      }
    }
  }

  void release(HostBlock* b) {
    std::lock_guard<std::mutex> lk(mu_);
    free_[b->size].push_back(b);
  }

  std::mutex mu_;
  std::map<const char*, HostBlock*> by_ptr_;              // every block, for is_pinned and record_use
  std::map<size_t, std::vector<HostBlock*>> free_;        // size class -> blocks not in use
};

PinnedCache& pinned_cache() {
  static PinnedCache* c = new PinnedCache;  // never destroyed (tensors may die at exit)
  return *c;
}

}  // namespace

bool is_pinned(const void* p) {
  if (!p) return false;
  if (pinned_cache().contains(p)) return true;
  if (device_count() == 0) return false;
  cudaPointerAttributes attr{};
  cudaError_t st = cudaPointerGetAttributes(&attr, p);
  if (st != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

Tensor pin_memory(const Tensor& t) {
  LUCID_CHECK(t.device().is_cpu(), TypeError, "pin_memory: cannot pin a tensor on ", t.device().str(),
              ": only dense CPU tensors can be pinned");
  LUCID_CHECK(device_count() > 0, Error, "pin_memory: pinned memory needs a CUDA device, and none is available: ",
              unavailable_reason());
  if (t.numel() > 0 && is_pinned(t.data_ptr())) return t;
  const Tensor src = t.contiguous_data();
  const size_t nbytes = static_cast<size_t>(t.numel()) * itemsize(t.dtype());
  Allocation a = pinned_cache().allocate(nbytes);
  if (nbytes) std::memcpy(a.data, src.data_ptr(), nbytes);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(a.data, nbytes, std::move(a.owner));
  impl->shape = t.shape();
  impl->strides = contiguous_strides(t.shape());
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

void record_host_use(const void* p, const StreamRef& s) { pinned_cache().record_use(p, s); }

}  // namespace lucid::cuda
