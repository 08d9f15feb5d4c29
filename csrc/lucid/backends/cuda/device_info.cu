// Device discovery through the CUDA runtime (the LUCID_CUDA build's definition of
// device_info.h). The first query calls cudaGetDeviceCount once and caches the answer: a machine
// without a GPU or driver gets an error status there (cudaErrorNoDevice,
// cudaErrorInsufficientDriver, ...) and reports 0 devices with that status as the reason.
// Compiled by nvcc, like the kernels that will follow it in this folder.
#include "lucid/backends/cuda/cuda_check.h"
#include "lucid/backends/cuda/device_info.h"

#include <cuda_runtime_api.h>

namespace lucid::cuda {

namespace {
struct Probe {
  int count = 0;
  cudaError_t status = cudaSuccess;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    int n = 0;
    r.status = cudaGetDeviceCount(&n);
    if (r.status == cudaSuccess) {
      r.count = n;
    } else {
      cudaGetLastError();  // the failure is recorded here, not left for the next call to find
    }
    return r;
  }();
  return p;
}
}  // namespace

bool is_built() { return true; }

int device_count() { return probe().count; }

std::string unavailable_reason() {
  const Probe& p = probe();
  if (p.count > 0) return "";
  if (p.status == cudaSuccess) return "the CUDA runtime reports 0 devices";
  if (p.status == cudaErrorInsufficientDriver) {  // also what the runtime says when there is no driver at all
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return str("no NVIDIA driver was found, or it is older than this CUDA runtime (", runtime / 1000, ".",
               runtime % 1000 / 10, "): ", cuda_error_text(p.status));
  }
  return cuda_error_text(p.status);
}

DeviceProperties device_properties(int index) {
  int n = device_count();
  LUCID_CHECK(n > 0, Error, "cuda device_properties: no CUDA device is available: ", unavailable_reason());
  LUCID_CHECK(index >= 0 && index < n, IndexError, "cuda device_properties: device index ", index,
              " is out of range: ", n, n == 1 ? " device" : " devices", " (expected 0 <= index < ", n, ")");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
  DeviceProperties r;
  r.name = prop.name;
  r.major = prop.major;
  r.minor = prop.minor;
  r.total_memory = prop.totalGlobalMem;
  r.multi_processor_count = prop.multiProcessorCount;
  return r;
}

}  // namespace lucid::cuda
