// defer_check and raise_deferred_errors (deferred_check.h): a FIFO of pending checks, each a
// pinned BadIndexRecord and an event of its device; slots are recycled per device, since
// cudaHostAlloc and cudaEventCreate are slow. The table is never destroyed (no CUDA calls at
// process exit).
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "lucid/backends/cuda/deferred_check.h"
#include "lucid/backends/cuda/index_check.cuh"
#include "lucid/backends/cuda/stream.h"

namespace lucid::cuda {

namespace {

struct Slot {
  BadIndexRecord* host = nullptr;
  cudaEvent_t done = nullptr;
};

struct Pending {
  Slot slot;
  int device;
  std::function<void(int64_t, int64_t)> raise;
};

struct Table {
  std::mutex mu;
  std::deque<Pending> pending;
  std::unordered_map<int, std::vector<Slot>> free;  // per device: events belong to one device

  Slot acquire(int device) {
    std::vector<Slot>& f = free[device];
    if (!f.empty()) {
      Slot s = f.back();
      f.pop_back();
      return s;
    }
    Slot s;
    void* p = nullptr;
    check_cuda(cudaHostAlloc(&p, sizeof(BadIndexRecord), cudaHostAllocDefault), "cudaHostAlloc (deferred check)");
    s.host = static_cast<BadIndexRecord*>(p);
    check_cuda(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), "cudaEventCreateWithFlags (deferred check)");
    return s;
  }
};

Table& table() {
  static Table* t = new Table();  // leaked on purpose: see the header
  return *t;
}

}  // namespace

void defer_check(const Device& dev, const BadIndexFlag& flag, std::function<void(int64_t, int64_t)> raise) {
  Table& t = table();
  DeviceGuard g(dev);
  cudaStream_t s = current_stream(dev);
  // The host collects the verdict after the copy lands; a CUDA graph replaying the check would
  // leave nobody to collect it, so a capture stops here (the CUDA executor runs without a graph).
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(s, &capturing), "cudaStreamIsCapturing (deferred check)");
  LUCID_CHECK(capturing == cudaStreamCaptureStatusNone, NotImplementedError,
              "a deferred input check (a loss's class targets) cannot be captured into a CUDA graph");
  std::lock_guard<std::mutex> lock(t.mu);
  Slot slot = t.acquire(dev.index);
  check_cuda(cudaMemcpyAsync(slot.host, flag.get(), sizeof(BadIndexRecord), cudaMemcpyDeviceToHost, s),
             "cudaMemcpyAsync (deferred check)");
  check_cuda(cudaEventRecord(slot.done, s), "cudaEventRecord (deferred check)");
  t.pending.push_back({slot, dev.index, std::move(raise)});
}

void raise_deferred_errors(bool wait) {
  Table& t = table();
  std::function<void(int64_t, int64_t)> failed;
  int64_t value = 0, where = 0;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    while (!t.pending.empty()) {
      Pending& p = t.pending.front();
      if (wait) {
        check_cuda(cudaEventSynchronize(p.slot.done), "cudaEventSynchronize (deferred check)");
      } else {
        cudaError_t q = cudaEventQuery(p.slot.done);
        if (q == cudaErrorNotReady) break;
        check_cuda(q, "cudaEventQuery (deferred check)");
      }
      const bool bad = p.slot.host->set != 0;
      if (bad) {
        value = p.slot.host->value;
        where = p.slot.host->where;
        failed = std::move(p.raise);
      }
      t.free[p.device].push_back(p.slot);
      t.pending.pop_front();
      if (bad) break;
    }
  }
  if (failed) failed(value, where);  // throws, outside the lock
}

}  // namespace lucid::cuda
