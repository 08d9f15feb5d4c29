// defer_check and raise_deferred_errors (deferred_check.h): a FIFO of pending checks, each a
// pinned BadIndexRecord and an event of its device; slots are recycled per device, since
// cudaHostAlloc and cudaEventCreate are slow; a CUDA graph's captured checks keep theirs while
// the graph lives, and each replay queues them again. The table is never destroyed (no CUDA calls
// at process exit).
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
  std::shared_ptr<CapturedChecks::State> graph;  // a replayed graph's check (its slot is the graph's)
  size_t index = 0;                              // which of the graph's checks
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
    return fresh();
  }
  static Slot fresh() {  // on the current device
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

thread_local CapturedChecks* t_captured = nullptr;  // the capture on this thread keeps its checks here

}  // namespace

// A graph's captured checks; `outstanding` and `released` are guarded by the table's mutex.
struct CapturedChecks::State {
  struct Check {
    Slot slot;
    int device;
    std::function<void(int64_t, int64_t)> raise;
  };
  std::vector<Check> checks;
  int outstanding = 0;    // replays' checks queued and not collected yet
  bool released = false;  // the graph is gone: the last collection returns the slots
  void give_back(Table& t) {
    for (const Check& c : checks) t.free[c.device].push_back(c.slot);
    checks.clear();
  }
};

void defer_check(const Device& dev, const BadIndexFlag& flag, std::function<void(int64_t, int64_t)> raise) {
  Table& t = table();
  DeviceGuard g(dev);
  cudaStream_t s = current_stream(dev);
  // The host collects the verdict after the copy lands; a CUDA graph replaying the check would
  // leave nobody to collect it, so a capture stops here (the CUDA executor runs without a graph).
  // (unless the capture keeps its checks: CapturedChecks, which the executor queues per replay).
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(s, &capturing), "cudaStreamIsCapturing (deferred check)");
  LUCID_CHECK(capturing == cudaStreamCaptureStatusNone || t_captured, NotImplementedError,
              "a deferred input check (a loss's class targets) cannot be captured into a CUDA graph");
  std::lock_guard<std::mutex> lock(t.mu);
  Slot slot = t.acquire(dev.index);
  check_cuda(cudaMemcpyAsync(slot.host, flag.get(), sizeof(BadIndexRecord), cudaMemcpyDeviceToHost, s),
             "cudaMemcpyAsync (deferred check)");
  if (capturing != cudaStreamCaptureStatusNone) {  // an event record node: re-recorded by each replay
    check_cuda(cudaEventRecordWithFlags(slot.done, s, cudaEventRecordExternal), "cudaEventRecordWithFlags (deferred check)");
    t_captured->state().checks.push_back({slot, dev.index, std::move(raise)});
    return;
  }
  check_cuda(cudaEventRecord(slot.done, s), "cudaEventRecord (deferred check)");
  t.pending.push_back({slot, dev.index, std::move(raise)});
}

void raise_deferred_errors(bool wait) {
  if (t_captured) return;  // querying events would end the capture; the replays collect them
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
        failed = p.graph ? p.graph->checks[p.index].raise : std::move(p.raise);
      }
      if (!p.graph) {
        t.free[p.device].push_back(p.slot);
      } else if (--p.graph->outstanding == 0 && p.graph->released) {
        p.graph->give_back(t);
      }
      t.pending.pop_front();
      if (bad) break;
    }
  }
  if (failed) failed(value, where);  // throws, outside the lock
}

void reserve_deferred_slots(const Device& dev, int n) {
  Table& t = table();
  DeviceGuard g(dev);
  std::lock_guard<std::mutex> lock(t.mu);
  std::vector<Slot>& f = t.free[dev.index];
  while (static_cast<int>(f.size()) < n) f.push_back(Table::fresh());
}

CapturedChecks::CapturedChecks() : state_(std::make_shared<State>()) {}

CapturedChecks::~CapturedChecks() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  state_->released = true;
  if (state_->outstanding == 0) state_->give_back(t);
}

bool CapturedChecks::empty() const { return state_->checks.empty(); }

void CapturedChecks::queue_replayed() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (size_t k = 0; k < state_->checks.size(); ++k) {
    const State::Check& c = state_->checks[k];
    t.pending.push_back({c.slot, c.device, nullptr, state_, k});
    ++state_->outstanding;
  }
}

void CapturedChecks::collect_replayed() {
  bool queued;
  {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    queued = state_->outstanding > 0;
  }
  if (queued) raise_deferred_errors(true);
}

CapturedChecksScope::CapturedChecksScope(CapturedChecks* c) : prev_(t_captured) { t_captured = c; }
CapturedChecksScope::~CapturedChecksScope() { t_captured = prev_; }

}  // namespace lucid::cuda
