// Per-thread current device and current stream (stream.h), and the CUDA backend's DeviceHooks
// (core/device.h: device count, why there is none, synchronize, the deferred checks' errors),
// registered at load.
#include "lucid/backends/cuda/deferred_check.h"
#include "lucid/backends/cuda/device_info.h"
#include "lucid/backends/cuda/stream.h"

namespace lucid::cuda {

namespace {
constexpr int kMaxDevices = 64;
thread_local cudaStream_t tl_streams[kMaxDevices] = {};  // null: the legacy default stream

int checked_index(int index) {
  LUCID_CHECK(index >= 0 && index < kMaxDevices, IndexError, "cuda: device index ", index, " out of range");
  return index;
}
}  // namespace

cudaStream_t current_stream(int index) { return tl_streams[checked_index(index)]; }

cudaStream_t set_current_stream(int index, cudaStream_t s) {
  cudaStream_t prev = tl_streams[checked_index(index)];
  tl_streams[index] = s;
  return prev;
}

DeviceGuard::DeviceGuard(int index) {
  int cur = 0;
  check_cuda(cudaGetDevice(&cur), "cudaGetDevice");
  if (cur == index) return;
  check_cuda(cudaSetDevice(index), "cudaSetDevice");
  prev_ = cur;
}

DeviceGuard::~DeviceGuard() {
  if (prev_ >= 0) cudaSetDevice(prev_);
}

void synchronize(int index) {
  DeviceGuard g(index);
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  raise_deferred_errors(false);  // the device's checks have landed
}

namespace {
void raise_pending() { raise_deferred_errors(true); }
const DeviceHooks kHooks{&device_count, &unavailable_reason, &synchronize, &raise_pending};
struct RegisterHooks {
  RegisterHooks() { set_device_hooks(DeviceType::CUDA, &kHooks); }
} register_hooks;
}  // namespace

}  // namespace lucid::cuda
