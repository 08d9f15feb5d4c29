// The CUDA caching allocator: core/allocator.h's Allocator for DeviceType::CUDA, stream-ordered,
// in the manner of PyTorch's CUDACachingAllocator (its design, not its code).
//
// cudaMalloc and cudaFree are slow (tens of microseconds, and cudaFree synchronises the device),
// so buffers are kept for reuse. Per device:
// - Sizes are rounded up to 512 bytes. Requests up to 1 MiB come from the small pool, whose
//   segments are 2 MiB; larger ones from the large pool, whose segments are 20 MiB for requests
//   under 10 MiB and the request rounded up to 2 MiB otherwise.
// - A request takes the smallest free block of its pool and stream that fits (best fit on a
//   std::set ordered by (stream, size, address)) and splits off the rest when the rest is worth
//   keeping (>= 512 B in the small pool, > 1 MiB in the large); a freed block merges with its free
//   neighbours of the same segment. Nothing found: cudaMalloc a new segment.
// - Blocks are tagged with the stream that was current when they were allocated (the thread's
//   current stream of that device, stream.h). Freeing returns the block to that stream's free
//   blocks at once, without waiting: work already queued on the stream that reads the block runs
//   before any later work on the same stream that reuses it. A block is reused only by
//   allocations on its own stream.
// - Uses on other streams (torch's record_stream, cuda_allocator.h): the handed-out blocks are
//   found by address (LiveBuffers, live_buffers.h), and record_stream adds a stream other than the
//   block's own to the block's uses. Freeing a block with uses records one event per use stream
//   (cudaEventDisableTiming, from a per-device pool) and puts the block on a pending list instead
//   of its pool; allocate (first thing), the out-of-memory retry and empty_cache (after their
//   synchronisation) return the pending blocks whose events have all completed to their pools. A
//   pending block is no longer counted in memory_allocated (as torch: it belongs to no tensor) but
//   is still active (active_blocks, active_bytes) and reserved, so memory_reserved -
//   memory_allocated includes it. If an event cannot be recorded (a freed block's deleter cannot
//   raise), the device is synchronised instead and the block freed at once.
// - cudaMalloc failing with cudaErrorMemoryAllocation: the device is synchronised, every cached
//   segment with no block in use is freed, and cudaMalloc is tried once more; failing again raises
//   lucid::OutOfMemoryError with the request, the device, the allocator's allocated and reserved
//   bytes and cudaMemGetInfo's free and total. The CUDA error is cleared, so the process stays
//   usable. set_memory_fraction caps the bytes reserved (torch's
//   set_per_process_memory_fraction): past it a cudaMalloc is treated as failed.
// - empty_cache synchronises the device, then frees every segment with no block in use.
// One mutex per device guards its pools, live blocks and counters. The allocator is never
// destroyed (tensors may be freed during static destruction), and freeing a block without uses
// on other streams makes no CUDA call.
// While a CUDA graph is captured on this thread (graph_capture.h), every block handed out is also kept
// by the capture's GraphPool, so it outlives the graph's replays.
// LUCID_CUDA_ALLOCATOR=cudaMallocAsync installs the driver's stream-ordered pool instead
// (cuda_malloc_async.cu), read once when the allocator is installed.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "lucid/backends/cuda/cuda_allocator.h"
#include "lucid/backends/cuda/cuda_malloc_async.h"
#include "lucid/backends/cuda/device_info.h"
#include "lucid/backends/cuda/graph_capture.h"
#include "lucid/backends/cuda/live_buffers.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/core/allocator.h"
#include "lucid/core/device.h"
#include "lucid/core/error.h"
#include "lucid/core/memory_error.h"

namespace lucid::cuda {

namespace {

constexpr size_t kMinBlock = 512;             // every size is rounded up to a multiple of this
constexpr size_t kSmallSize = size_t{1} << 20;        // largest request of the small pool
constexpr size_t kSmallSegment = size_t{2} << 20;     // the small pool's segment size
constexpr size_t kMinLargeAlloc = size_t{10} << 20;   // requests below this share a 20 MiB segment
constexpr size_t kLargeSegment = size_t{20} << 20;
constexpr size_t kRoundLarge = size_t{2} << 20;       // larger requests: a segment of their own, rounded
constexpr int kMaxDevices = 64;

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

struct Block {
  char* ptr = nullptr;
  size_t size = 0;
  cudaStream_t stream = nullptr;
  bool allocated = false;
  bool small = false;       // which pool it belongs to
  Block* prev = nullptr;    // neighbours within the segment (null at its ends)
  Block* next = nullptr;
  std::vector<cudaStream_t> uses;    // other streams it was used on (record_stream), while handed out
  std::vector<cudaEvent_t> events;   // while pending: one per use, recorded when it was freed
};

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return reinterpret_cast<uintptr_t>(a->stream) < reinterpret_cast<uintptr_t>(b->stream);
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};
using Pool = std::set<Block*, BlockOrder>;

std::string format_bytes(int64_t n) {
  const double v = static_cast<double>(n);
  if (n < 1024) return str(n, " bytes");
  if (n < (int64_t{1} << 20)) return str(static_cast<int64_t>(v / 1024 * 100) / 100.0, " KiB");
  if (n < (int64_t{1} << 30)) return str(static_cast<int64_t>(v / (1 << 20) * 100) / 100.0, " MiB");
  return str(static_cast<int64_t>(v / (1 << 30) * 100) / 100.0, " GiB");
}

class DeviceCache {
 public:
  explicit DeviceCache(int device) : device_(device) {}

  Block* allocate(size_t nbytes, cudaStream_t stream) {
    const size_t size = nbytes < kMinBlock ? kMinBlock : round_up(nbytes, kMinBlock);
    const bool small = size <= kSmallSize;
    std::lock_guard<std::mutex> lk(mu_);
    if (!pending_.empty()) process_pending();
    Pool& pool = small ? small_ : large_;
    Block key;
    key.stream = stream;
    key.size = size;
    auto it = pool.lower_bound(&key);
    Block* b = nullptr;
    if (it != pool.end() && (*it)->stream == stream) {
      b = *it;
      pool.erase(it);
    } else {
      b = new_segment(nbytes, size, small, stream);
    }
    const size_t rest = b->size - size;
    if (small ? rest >= kMinBlock : rest > kSmallSize) {
      Block* r = make_block();
      r->ptr = b->ptr + size;
      r->size = rest;
      r->stream = stream;
      r->small = small;
      r->prev = b;
      r->next = b->next;
      if (r->next) r->next->prev = r;
      b->next = r;
      b->size = size;
      pool.insert(r);
    }
    b->allocated = true;
    live_.add(b->ptr, b);
    s_.allocated += static_cast<int64_t>(b->size);
    if (s_.allocated > s_.peak_allocated) s_.peak_allocated = s_.allocated;
    s_.active_bytes += static_cast<int64_t>(b->size);
    ++s_.active_blocks;
    ++s_.num_allocs;
    return b;
  }

  // The storage's deleter: back to the pool, or to the pending list when other streams used it.
  void free(Block* b) {
    std::lock_guard<std::mutex> lk(mu_);
    live_.take(b->ptr);
    s_.allocated -= static_cast<int64_t>(b->size);
    if (!b->uses.empty() && record_uses(b)) {
      pending_.push_back(b);
      return;
    }
    free_block(b);
  }

  // torch's recordStream: `stream` uses the live block at ptr. Nothing for the block's own stream
  // or an address this allocator did not hand out (a DLPack import: torch skips those too).
  void record_stream(const void* ptr, cudaStream_t stream) {
    std::lock_guard<std::mutex> lk(mu_);
    Block** found = live_.find(ptr);
    if (!found) return;
    Block* b = *found;
    if (stream == b->stream || std::find(b->uses.begin(), b->uses.end(), stream) != b->uses.end()) return;
    b->uses.push_back(stream);
  }

  int64_t empty_cache() {
    std::lock_guard<std::mutex> lk(mu_);
    process_pending();
    return release_cached();
  }

  AllocatorStats stats() const {
    std::lock_guard<std::mutex> lk(mu_);
    return s_;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lk(mu_);
    s_.peak_allocated = s_.allocated;
    s_.peak_reserved = s_.reserved;
  }

 private:
  // Returns a block that no tensor holds and no other stream still reads to its pool, merged with
  // its free neighbours (caller holds mu_).
  void free_block(Block* b) {
    b->allocated = false;
    b->uses.clear();
    s_.active_bytes -= static_cast<int64_t>(b->size);
    --s_.active_blocks;
    Pool& pool = b->small ? small_ : large_;
    if (b->prev && !b->prev->allocated) {  // absorb the free block before this one
      Block* p = b->prev;
      pool.erase(p);
      p->size += b->size;
      p->next = b->next;
      if (p->next) p->next->prev = p;
      recycle(b);
      b = p;
    }
    if (b->next && !b->next->allocated) {  // and the one after
      Block* n = b->next;
      pool.erase(n);
      b->size += n->size;
      b->next = n->next;
      if (b->next) b->next->prev = b;
      recycle(n);
    }
    pool.insert(b);
  }

  // Records an event on each of b's use streams (b->uses moves to b->events); false, with the
  // events given back and the device synchronised, when that fails (a deleter cannot raise: at
  // exit the runtime may be gone, or a foreign stream destroyed), so b can be freed at once.
  bool record_uses(Block* b) {
    cudaError_t st = cudaSuccess;
    try {
      DeviceGuard g(device_);
      for (cudaStream_t u : b->uses) {
        cudaEvent_t e = nullptr;
        if (free_events_.empty()) {
          st = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
          if (st != cudaSuccess) break;
        } else {
          e = free_events_.back();
          free_events_.pop_back();
        }
        b->events.push_back(e);
        st = cudaEventRecord(e, u);
        if (st != cudaSuccess) break;
      }
      if (st != cudaSuccess) {
        cudaGetLastError();
        if (cudaDeviceSynchronize() != cudaSuccess) cudaGetLastError();
      }
    } catch (const Error&) {  // DeviceGuard's cudaGetDevice / cudaSetDevice failed
      st = cudaErrorUnknown;
    }
    if (st == cudaSuccess) {
      b->uses.clear();
      return true;
    }
    free_events_.insert(free_events_.end(), b->events.begin(), b->events.end());
    b->events.clear();
    return false;
  }

  // Frees the pending blocks whose events have all completed into their pools (caller holds mu_).
  // A failed query (a fault on a use stream) raises, leaving the block pending.
  void process_pending() {
    for (size_t i = 0; i < pending_.size();) {
      Block* b = pending_[i];
      while (!b->events.empty()) {
        const cudaError_t st = cudaEventQuery(b->events.back());
        if (st == cudaErrorNotReady) {
          cudaGetLastError();
          break;
        }
        check_cuda(st, "cudaEventQuery (a block used on another stream: record_stream)");
        free_events_.push_back(b->events.back());
        b->events.pop_back();
      }
      if (!b->events.empty()) {
        ++i;
        continue;
      }
      pending_[i] = pending_.back();
      pending_.pop_back();
      free_block(b);
    }
  }

  // A fresh segment for a request of `size` (rounded) bytes; `nbytes` as asked, for the message.
  Block* new_segment(size_t nbytes, size_t size, bool small, cudaStream_t stream) {
    const size_t seg = small ? kSmallSegment : size < kMinLargeAlloc ? kLargeSegment : round_up(size, kRoundLarge);
    DeviceGuard g(device_);
    void* p = nullptr;
    cudaError_t st = device_malloc(&p, seg);
    if (st == cudaErrorMemoryAllocation) {
      ++s_.num_alloc_retries;
      check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (before freeing the CUDA allocator's cache)");
      process_pending();
      release_cached();
      st = device_malloc(&p, seg);
      if (st == cudaErrorMemoryAllocation) {
        ++s_.num_ooms;
        throw_oom(nbytes, seg);
      }
    }
    check_cuda(st, "cudaMalloc");
    ++s_.num_device_alloc;
    ++s_.segments;
    s_.reserved += static_cast<int64_t>(seg);
    if (s_.reserved > s_.peak_reserved) s_.peak_reserved = s_.reserved;
    Block* b = make_block();
    b->ptr = static_cast<char*>(p);
    b->size = seg;
    b->stream = stream;
    b->small = small;
    return b;
  }

  // cudaMalloc, refused as out of memory (the error cleared) past the limit of
  // set_memory_fraction. During a CUDA graph capture on this thread cudaMalloc is a "potentially
  // unsafe" call that would end the capture; the segment is the capture's to keep (graph_capture.h),
  // so it is made with the thread's capture mode relaxed for this one call, as PyTorch does.
  cudaError_t device_malloc(void** p, size_t seg) {
    if (limit_ && s_.reserved + static_cast<int64_t>(seg) > limit_) return cudaErrorMemoryAllocation;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    const bool capturing = active_graph_pool() != nullptr;
    if (capturing) cudaThreadExchangeStreamCaptureMode(&mode);
    cudaError_t st = cudaMalloc(p, seg);
    if (capturing) cudaThreadExchangeStreamCaptureMode(&mode);
    if (st == cudaErrorMemoryAllocation) cudaGetLastError();
    return st;
  }

 public:
  void set_limit(int64_t bytes) {
    std::lock_guard<std::mutex> lk(mu_);
    limit_ = bytes;
  }

 private:
  [[noreturn]] void throw_oom(size_t nbytes, size_t seg) {
    size_t free_b = 0, total_b = 0;
    const bool have_info = cudaMemGetInfo(&free_b, &total_b) == cudaSuccess;
    cudaGetLastError();
    std::string info = have_info ? str("the GPU has a total capacity of ", format_bytes(static_cast<int64_t>(total_b)),
                                       " of which ", format_bytes(static_cast<int64_t>(free_b)), " is free")
                                 : std::string("cudaMemGetInfo failed");
    throw OutOfMemoryError(str("CUDA out of memory. Tried to allocate ", format_bytes(static_cast<int64_t>(nbytes)), " (",
                               nbytes, " bytes; a segment of ", seg, " bytes) on device cuda:", device_, ": ", info,
                               ". Of the memory lucid holds on it, ", format_bytes(s_.allocated), " (", s_.allocated,
                               " bytes) is allocated by tensors and ", format_bytes(s_.reserved), " (", s_.reserved,
                               " bytes) is reserved by the caching allocator (after freeing its unused cache)",
                               limit_ ? str("; this process may reserve at most ", limit_, " bytes of it "
                                            "(set_per_process_memory_fraction)")
                                      : std::string()));
  }

  // Frees every segment that is one free block (caller holds mu_ and has synchronised if needed).
  int64_t release_cached() {
    int64_t freed = 0;
    for (Pool* pool : {&small_, &large_}) {
      for (auto it = pool->begin(); it != pool->end();) {
        Block* b = *it;
        if (b->prev || b->next) {
          ++it;
          continue;
        }
        DeviceGuard g(device_);
        check_cuda(cudaFree(b->ptr), "cudaFree");
        ++s_.num_device_free;
        --s_.segments;
        s_.reserved -= static_cast<int64_t>(b->size);
        freed += static_cast<int64_t>(b->size);
        it = pool->erase(it);
        recycle(b);
      }
    }
    return freed;
  }

  Block* make_block() {
    if (spare_.empty()) return new Block;
    Block* b = spare_.back();
    spare_.pop_back();
    *b = Block{};
    return b;
  }
  void recycle(Block* b) { spare_.push_back(b); }

  const int device_;
  mutable std::mutex mu_;
  Pool small_, large_;
  std::vector<Block*> spare_;  // Block records kept for reuse (no heap allocation per split)
  LiveBuffers<Block*> live_;   // the blocks handed out, by address (record_stream finds them)
  std::vector<Block*> pending_;         // freed, waiting for their events (uses on other streams)
  std::vector<cudaEvent_t> free_events_;  // events for pending blocks, kept for reuse
  AllocatorStats s_;
  int64_t limit_ = 0;  // most bytes reserved (set_memory_fraction); 0: no limit
};

class CachingAllocator final : public Allocator {
 public:
  Allocation allocate(size_t nbytes, int device_index) override {
    DeviceCache& c = cache(device_index);
    Block* b = c.allocate(nbytes, current_stream(device_index));
    Allocation a;
    a.data = b->ptr;
    a.owner = std::shared_ptr<void>(b->ptr, [&c, b](void*) { c.free(b); });
    if (GraphPool* pool = active_graph_pool()) pool->keep(a.owner);  // a CUDA graph is being captured
    return a;
  }
  MemoryStats stats(int device_index) const override {
    AllocatorStats s = cache(device_index).stats();
    MemoryStats m;
    m.allocated = s.allocated;
    m.peak = s.peak_allocated;
    m.cached = s.reserved - s.allocated;
    return m;
  }
  void reset_peak(int device_index) override { cache(device_index).reset_peak(); }
  int64_t empty_cache(int device_index) override {
    DeviceCache& c = cache(device_index);
    if (c.stats().reserved == 0) return 0;  // nothing to free: no synchronisation (nor a context) needed
    synchronize(device_index);  // freed blocks may still be read by queued work
    return c.empty_cache();
  }

  // The device's cache, made on first use; raises for a device that is not there.
  DeviceCache& cache(int index) const {
    if (index >= 0 && index < kMaxDevices) {
      if (DeviceCache* c = caches_[index].load(std::memory_order_acquire)) return *c;
    }
    check_available(Device{DeviceType::CUDA, static_cast<int16_t>(index)});
    LUCID_CHECK(index >= 0 && index < kMaxDevices, IndexError, "cuda allocator: device index ", index, " out of range");
    std::lock_guard<std::mutex> lk(make_mu_);
    DeviceCache* c = caches_[index].load(std::memory_order_relaxed);
    if (!c) {
      c = new DeviceCache(index);  // never destroyed
      caches_[index].store(c, std::memory_order_release);
    }
    return *c;
  }

 private:
  mutable std::mutex make_mu_;
  mutable std::atomic<DeviceCache*> caches_[kMaxDevices]{};
};

CachingAllocator& caching_allocator() {
  static CachingAllocator* a = new CachingAllocator;  // never destroyed
  return *a;
}

// LUCID_CUDA_ALLOCATOR: unset or "native" is this caching allocator; "cudaMallocAsync" is the
// driver's stream-ordered pool (cuda_malloc_async.cu). Another value warns and takes the default.
bool use_malloc_async() {
  static const bool async = [] {
    const char* e = std::getenv("LUCID_CUDA_ALLOCATOR");
    if (!e || !*e || std::strcmp(e, "native") == 0) return false;
    if (std::strcmp(e, "cudaMallocAsync") == 0) return true;
    std::fprintf(stderr, "lucid: LUCID_CUDA_ALLOCATOR='%s' is not one of 'native', 'cudaMallocAsync'; using 'native'\n", e);
    return false;
  }();
  return async;
}

struct RegisterAllocator {
  RegisterAllocator() {
    set_allocator(DeviceType::CUDA, use_malloc_async() ? &malloc_async_allocator() : &caching_allocator());
  }
} register_allocator;

}  // namespace

void set_memory_fraction(double fraction, int index) {
  LUCID_CHECK(fraction >= 0.0 && fraction <= 1.0, ValueError, "set_per_process_memory_fraction: argument 'fraction' "
              "expected a number in [0, 1], got ", fraction);
  LUCID_CHECK(!use_malloc_async(), NotImplementedError, "set_per_process_memory_fraction: not supported by the "
              "cudaMallocAsync allocator (LUCID_CUDA_ALLOCATOR)");
  DeviceCache& c = caching_allocator().cache(index);
  const DeviceMemoryInfo m = mem_get_info(index);
  // 0 bytes would read as "no limit": the smallest limit is one byte, which refuses every segment.
  c.set_limit(std::max<int64_t>(1, static_cast<int64_t>(fraction * static_cast<double>(m.total))));
}

const char* allocator_backend() { return use_malloc_async() ? "cudaMallocAsync" : "native"; }

void record_stream(const void* ptr, int index, uintptr_t stream) {
  if (use_malloc_async()) return malloc_async_record_stream(ptr, index, stream);
  caching_allocator().cache(index).record_stream(ptr, reinterpret_cast<cudaStream_t>(stream));
}

AllocatorStats allocator_stats(int index) {
  return use_malloc_async() ? malloc_async_stats(index) : caching_allocator().cache(index).stats();
}

DeviceMemoryInfo mem_get_info(int index) {
  check_available(Device{DeviceType::CUDA, static_cast<int16_t>(index)});
  DeviceGuard g(index);
  DeviceMemoryInfo m;
  check_cuda(cudaMemGetInfo(&m.free, &m.total), "cudaMemGetInfo");
  return m;
}

}  // namespace lucid::cuda
