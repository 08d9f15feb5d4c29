// The cudaMallocAsync backend (cuda_malloc_async.h): each buffer is cudaMallocAsync'd on the
// current stream of its device and cudaFreeAsync'd on that same stream when its storage dies, so
// the driver's stream-ordered pool (the device's default memory pool) does the caching, splitting
// and cross-stream bookkeeping. The pool's release threshold is raised to "never" at first use, so
// freed memory stays reserved for reuse (as the caching allocator keeps it) until empty_cache
// trims the pool. Out of memory: the device is synchronised (finishing the queued frees), the
// pool trimmed, and the allocation tried once more before lucid::OutOfMemoryError.
//
// record_stream (torch's, cuda_allocator.h): the live buffers are found by address (LiveBuffers,
// live_buffers.h) with the streams other than their own that used them; at the free, an event is
// recorded on each such stream and the buffer's stream waits on it (cudaStreamWaitEvent) before
// its cudaFreeAsync, so the driver reuses the memory only after that work. A buffer without such
// uses is freed as before (one cudaFreeAsync).
//
// Counters: allocated bytes and their peak are the requested sizes (the driver's rounding is not
// visible), and active bytes are the allocated ones (a freed buffer goes back to the driver at
// once); reserved bytes and their peak are the pool's own (cudaMemPoolAttrReservedMem*).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "lucid/backends/cuda/cuda_malloc_async.h"
#include "lucid/backends/cuda/live_buffers.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/core/device.h"
#include "lucid/core/error.h"
#include "lucid/core/memory_error.h"

namespace lucid::cuda {

namespace {

constexpr int kMaxDevices = 64;

struct LiveBuffer {
  cudaStream_t stream = nullptr;     // the stream it was allocated on, and is freed on
  std::vector<cudaStream_t> uses;    // other streams that used it (record_stream)
};

struct DevicePool {
  std::mutex mu;
  cudaMemPool_t pool = nullptr;
  AllocatorStats s;  // allocated, peak_allocated and the call counts; reserved is asked of the pool
  LiveBuffers<LiveBuffer> live;  // the buffers handed out, by address
};

// Orders `stream` after the work queued so far on each of `uses` (an event recorded on each,
// waited on by stream). A deleter cannot raise: when that fails the device is synchronised.
void order_after_uses(cudaStream_t stream, const std::vector<cudaStream_t>& uses) {
  cudaEvent_t e = nullptr;
  cudaError_t st = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  for (size_t i = 0; st == cudaSuccess && i < uses.size(); ++i) {
    st = cudaEventRecord(e, uses[i]);  // a wait captures the event's state when it is queued, so
    if (st == cudaSuccess) st = cudaStreamWaitEvent(stream, e, 0);  // the event can be recorded again
  }
  if (e) cudaEventDestroy(e);  // released once its recorded work has completed
  if (st != cudaSuccess) {
    cudaGetLastError();
    if (cudaDeviceSynchronize() != cudaSuccess) cudaGetLastError();
  }
}

uint64_t pool_attr(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  uint64_t v = 0;
  check_cuda(cudaMemPoolGetAttribute(pool, attr, &v), "cudaMemPoolGetAttribute");
  return v;
}

class MallocAsyncAllocator final : public Allocator {
 public:
  Allocation allocate(size_t nbytes, int device_index) override {
    DevicePool& d = pool(device_index);
    cudaStream_t stream = current_stream(device_index);
    const size_t size = nbytes ? nbytes : 1;  // a valid, unique pointer for 0 bytes too
    DeviceGuard g(device_index);
    void* p = nullptr;
    cudaError_t st = cudaMallocAsync(&p, size, stream);
    if (st == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (before trimming the memory pool)");
      check_cuda(cudaMemPoolTrimTo(d.pool, 0), "cudaMemPoolTrimTo");
      {
        std::lock_guard<std::mutex> lk(d.mu);
        ++d.s.num_alloc_retries;
      }
      st = cudaMallocAsync(&p, size, stream);
      if (st == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw_oom(d, device_index, nbytes);
      }
    }
    check_cuda(st, "cudaMallocAsync");
    {
      std::lock_guard<std::mutex> lk(d.mu);
      d.live.add(p, LiveBuffer{stream, {}});
      d.s.allocated += static_cast<int64_t>(size);
      if (d.s.allocated > d.s.peak_allocated) d.s.peak_allocated = d.s.allocated;
      d.s.active_bytes += static_cast<int64_t>(size);
      ++d.s.active_blocks;
      ++d.s.num_allocs;
      ++d.s.num_device_alloc;
    }
    Allocation a;
    a.data = p;
    a.owner = std::shared_ptr<void>(p, [&d, device_index, stream, size](void* q) {
      std::vector<cudaStream_t> uses;
      {
        std::lock_guard<std::mutex> lk(d.mu);  // off the live list before the driver may hand q out again
        uses = d.live.take(q).uses;
        d.s.allocated -= static_cast<int64_t>(size);
        d.s.active_bytes -= static_cast<int64_t>(size);
        --d.s.active_blocks;
        ++d.s.num_device_free;
      }
      try {  // a deleter must not throw; at process exit the runtime may be gone
        DeviceGuard g(device_index);
        if (!uses.empty()) order_after_uses(stream, uses);
        cudaError_t e = cudaFreeAsync(q, stream);
        if (e != cudaSuccess) cudaGetLastError();
      } catch (const Error&) {
      }
    });
    return a;
  }

  MemoryStats stats(int device_index) const override {
    AllocatorStats s = detailed(device_index);
    MemoryStats m;
    m.allocated = s.allocated;
    m.peak = s.peak_allocated;
    m.cached = s.reserved > s.allocated ? s.reserved - s.allocated : 0;
    return m;
  }

  void reset_peak(int device_index) override {
    DevicePool& d = pool(device_index);
    uint64_t zero = 0;  // the pool's high-water marks can only be reset to 0 (= to the current value)
    check_cuda(cudaMemPoolSetAttribute(d.pool, cudaMemPoolAttrReservedMemHigh, &zero), "cudaMemPoolSetAttribute");
    check_cuda(cudaMemPoolSetAttribute(d.pool, cudaMemPoolAttrUsedMemHigh, &zero), "cudaMemPoolSetAttribute");
    std::lock_guard<std::mutex> lk(d.mu);
    d.s.peak_allocated = d.s.allocated;
  }

  int64_t empty_cache(int device_index) override {
    DevicePool& d = pool(device_index);
    synchronize(device_index);  // queued frees complete, so their memory can be released
    const int64_t before = static_cast<int64_t>(pool_attr(d.pool, cudaMemPoolAttrReservedMemCurrent));
    check_cuda(cudaMemPoolTrimTo(d.pool, 0), "cudaMemPoolTrimTo");
    return before - static_cast<int64_t>(pool_attr(d.pool, cudaMemPoolAttrReservedMemCurrent));
  }

  void record_stream(const void* ptr, int device_index, cudaStream_t stream) {
    DevicePool& d = pool(device_index);
    std::lock_guard<std::mutex> lk(d.mu);
    LiveBuffer* b = d.live.find(ptr);
    if (!b || stream == b->stream || std::find(b->uses.begin(), b->uses.end(), stream) != b->uses.end()) return;
    b->uses.push_back(stream);
  }

  AllocatorStats detailed(int device_index) const {
    DevicePool& d = pool(device_index);
    AllocatorStats s;
    {
      std::lock_guard<std::mutex> lk(d.mu);
      s = d.s;
    }
    s.reserved = static_cast<int64_t>(pool_attr(d.pool, cudaMemPoolAttrReservedMemCurrent));
    s.peak_reserved = static_cast<int64_t>(pool_attr(d.pool, cudaMemPoolAttrReservedMemHigh));
    return s;
  }

 private:
  [[noreturn]] void throw_oom(DevicePool& d, int device_index, size_t nbytes) {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
    int64_t allocated = 0;
    {
      std::lock_guard<std::mutex> lk(d.mu);
      ++d.s.num_ooms;
      allocated = d.s.allocated;
    }
    uint64_t reserved = 0;
    if (cudaMemPoolGetAttribute(d.pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess) cudaGetLastError();
    throw OutOfMemoryError(str("CUDA out of memory. Tried to allocate ", nbytes, " bytes on device cuda:", device_index,
                               " (cudaMallocAsync backend): the GPU has a total capacity of ", total_b, " bytes of which ",
                               free_b, " bytes are free. Of the memory lucid holds on it, ", allocated,
                               " bytes are allocated by tensors and ", reserved,
                               " bytes are reserved by the memory pool (after trimming it)"));
  }

  // The device's pool, set up on first use; raises for a device that is not there.
  DevicePool& pool(int index) const {
    if (index >= 0 && index < kMaxDevices) {
      if (DevicePool* p = pools_[index].load(std::memory_order_acquire)) return *p;
    }
    check_available(Device{DeviceType::CUDA, static_cast<int16_t>(index)});
    LUCID_CHECK(index >= 0 && index < kMaxDevices, IndexError, "cuda allocator: device index ", index, " out of range");
    std::lock_guard<std::mutex> lk(make_mu_);
    DevicePool* p = pools_[index].load(std::memory_order_relaxed);
    if (!p) {
      auto fresh = std::make_unique<DevicePool>();
      check_cuda(cudaDeviceGetDefaultMemPool(&fresh->pool, index), "cudaDeviceGetDefaultMemPool");
      uint64_t keep = UINT64_MAX;  // never release freed memory at synchronisation points
      check_cuda(cudaMemPoolSetAttribute(fresh->pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
      p = fresh.release();  // never destroyed
      pools_[index].store(p, std::memory_order_release);
    }
    return *p;
  }

  mutable std::mutex make_mu_;
  mutable std::atomic<DevicePool*> pools_[kMaxDevices]{};
};

MallocAsyncAllocator& instance() {
  static MallocAsyncAllocator* a = new MallocAsyncAllocator;  // never destroyed
  return *a;
}

}  // namespace

Allocator& malloc_async_allocator() { return instance(); }

AllocatorStats malloc_async_stats(int index) { return instance().detailed(index); }

void malloc_async_record_stream(const void* ptr, int index, uintptr_t stream) {
  instance().record_stream(ptr, index, reinterpret_cast<cudaStream_t>(stream));
}

}  // namespace lucid::cuda
