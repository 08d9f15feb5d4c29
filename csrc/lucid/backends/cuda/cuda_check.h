// check_cuda: a failed CUDA runtime call becomes a lucid::Error naming the call and carrying the
// runtime's error name and string (so Python sees a RuntimeError, never a crash). The thread's
// last-error slot is cleared, so one failure is not reported again by the next call's
// cudaGetLastError. Only for CUDA translation units and tests built with LUCID_CUDA.
#pragma once
#include <cuda_runtime_api.h>

#include "lucid/core/error.h"

namespace lucid::cuda {

// "cudaErrorNoDevice (no CUDA-capable device is detected)"
inline std::string cuda_error_text(cudaError_t status) {
  return str(cudaGetErrorName(status), " (", cudaGetErrorString(status), ")");
}

inline void check_cuda(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw Error(str("CUDA error in ", call, ": ", cuda_error_text(status)));
}

}  // namespace lucid::cuda
