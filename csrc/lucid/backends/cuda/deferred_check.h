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
#pragma once
#include <cstdint>
#include <functional>

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

}  // namespace lucid::cuda
