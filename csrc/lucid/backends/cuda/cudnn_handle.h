// The cuDNN handle of the calling thread for a device, bound to that device's current stream
// (stream.h), and check_cudnn, which turns a failed cuDNN call into a lucid::Error carrying
// cuDNN's status text. A cudnnHandle_t must not be used by two threads at once, so each thread has
// its own per device, created on first use and, when the thread ends, given back to a process-wide
// pool that later threads reuse (as PyTorch's handle pool), so threads that come and go do not
// leak handles. The handle is set to the current stream on every call, which is one cheap
// cudnnSetStream, so `with lucid.cuda.stream(s):` moves cuDNN's work to s.
#pragma once
#include <cudnn.h>

#include "lucid/core/device.h"

namespace lucid::cuda {

// "CUDNN_STATUS_BAD_PARAM: ..." as a lucid::Error naming `what`.
void check_cudnn(cudnnStatus_t status, const char* what);

// This thread's handle for CUDA device `d`, set to current_stream(d). The caller has made `d` the
// current device (DeviceGuard).
cudnnHandle_t cudnn_handle(const Device& d);

}  // namespace lucid::cuda
