// Input checks whose verdict the host collects later, so that validating an op's input does not
// stall the GPU. A check kernel writes a BadIndexRecord on the device (index_check.cuh); instead of
// copying it back and waiting (which drains the stream: the host then launches the next kernels
// while the GPU idles), defer_check queues the copy into pinned host memory behind it, marks it
// with an event, and returns. The op's kernels must make an invalid input give NaN (never a
// number that looks right, never an out-of-bounds access), and the error is raised, as the CPU
// raises it, at the host's next meeting with the device:
//   - a device-to-host read (item(), numpy(), .cpu()) and every synchronising call
//     (lucid.cuda.synchronize, Stream/Event.synchronize): the checks the sync waited for;
//   - the end of a backward pass (autograd's engine, through DeviceHooks): waits for each pending
//     check's event, which lies in the middle of the queue by then, so the GPU is not drained;
//   - the next deferred check: any whose copy has landed.
// Used by cross_entropy and nll_loss's class targets (kernels/loss_nll.cu), the check a training
// step meets every step; the index checks of gather/scatter/embedding still wait (index_check.cu).
//
// In a CUDA graph (compile/executor.cpp): while a CapturedChecks is active on the capturing
// thread, defer_check captures the record's copy into pinned memory the graph keeps and an event
// record node, and keeps the op's raise, instead of refusing. After each replay's launch,
// queue_replayed (on the CapturedChecks) adds its checks to the pending ones, collected and raised
// as any other; since every replay copies into the same memory, collect_replayed, before the next
// launch, first collects the previous replay's (waiting for their copies if they have not landed).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "lucid/core/device.h"

namespace lucid::cuda {

class BadIndexFlag;  // index_check.cuh (a device-code header: this one is included from .cpp files)

// After the kernels that validate an input into `flag` are queued on dev's current stream: its
// record is copied to pinned host memory behind them and an event marks the copy. `raise` throws
// the op's error for the recorded value (record.value, record.where); it runs on the host later.
void defer_check(const Device& dev, const BadIndexFlag& flag, std::function<void(int64_t value, int64_t where)> raise);

// Throws the error of the oldest failed deferred check, after dropping every earlier one that
// passed. wait: waits for each pending check's event (only the work queued before that check, not
// the whole device); otherwise stops at the first check whose copy has not landed yet.
void raise_deferred_errors(bool wait);

class CapturedChecks {
 public:
  CapturedChecks();
  ~CapturedChecks();  // after the graph's last replay: waits for its copies, returns their memory
  CapturedChecks(const CapturedChecks&) = delete;
  CapturedChecks& operator=(const CapturedChecks&) = delete;
  bool empty() const;
  void queue_replayed();   // after a replay's launch
  void collect_replayed(); // before the next launch (raises a failed check of the previous replay)

  struct State;  // deferred_check.cu's
  State& state() { return *state_; }

 private:
  std::shared_ptr<State> state_;
};

// Makes sure n recycled slots of dev are free, allocating what lacks: a capture can't allocate
// pinned memory, so the executor reserves them before it starts one (a program with more checks
// than reserved ends its capture, and runs without a graph).
void reserve_deferred_slots(const Device& dev, int n);

// The capture on this thread collects its deferred checks into `c` (null: none, defer_check
// refuses to be captured) while the scope lives.
class CapturedChecksScope {
 public:
  explicit CapturedChecksScope(CapturedChecks* c);
  ~CapturedChecksScope();
  CapturedChecksScope(const CapturedChecksScope&) = delete;
  CapturedChecksScope& operator=(const CapturedChecksScope&) = delete;

 private:
  CapturedChecks* prev_;
};

}  // namespace lucid::cuda
