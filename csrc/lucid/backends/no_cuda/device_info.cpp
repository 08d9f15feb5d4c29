// The CPU-only build's definition of lucid/backends/cuda/device_info.h (LUCID_CUDA off, or AUTO
// without the CUDA toolkit): no backend, so no devices. CMake builds either this file or
// backends/cuda/, never both.
#include "lucid/backends/cuda/device_info.h"

#include "lucid/core/error.h"

namespace lucid::cuda {

bool is_built() { return false; }

int device_count() { return 0; }

std::string unavailable_reason() {
  return "this build of lucid has no CUDA backend (configured with LUCID_CUDA=OFF, or LUCID_CUDA=AUTO found no CUDA "
         "toolkit)";
}

DeviceProperties device_properties(int) {
  throw Error(str("cuda device_properties: no CUDA device is available: ", unavailable_reason()));
}

}  // namespace lucid::cuda
