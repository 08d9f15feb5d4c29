// The CUDA backend's execution context: the current device and the current stream of each device,
// per thread, as torch.cuda's current_device / current_stream. Every CUDA kernel of lucid launches
// on current_stream(tensor's device) and every allocation is ordered on that stream
// (cuda_allocator.cu), so `with lucid.cuda.stream(s):` moves a region's work to s.
//
// The default stream of a device is the legacy default stream (stream 0), as in PyTorch: work
// queued by torch on its default stream and by lucid on its default stream is ordered, which
// DLPack exchange relies on. Kernels check their launch with check_launch (a failed launch
// becomes a lucid::Error naming the kernel; see cuda_check.h), never leaving a sticky error.
#pragma once
#include <cuda_runtime_api.h>

#include "lucid/backends/cuda/cuda_check.h"
#include "lucid/core/device.h"

namespace lucid::cuda {

// The current stream of device `index` on this thread (the legacy default stream unless set).
cudaStream_t current_stream(int index);
inline cudaStream_t current_stream(const Device& d) { return current_stream(d.index); }
// Sets the current stream of device `index` on this thread; returns the previous one.
cudaStream_t set_current_stream(int index, cudaStream_t s);

// Makes `index` the CUDA runtime's current device for this scope (cudaSetDevice), restoring the
// previous one after. Cheap when it is already current (no runtime call).
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  explicit DeviceGuard(const Device& d) : DeviceGuard(static_cast<int>(d.index)) {}
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

// After a kernel launch: a launch error (bad configuration, no kernel image for this GPU) raises a
// lucid::Error naming `kernel`. Asynchronous faults surface at the next synchronising call.
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

// Blocks until every queued operation of device `index` has finished (torch.cuda.synchronize).
void synchronize(int index);

}  // namespace lucid::cuda
