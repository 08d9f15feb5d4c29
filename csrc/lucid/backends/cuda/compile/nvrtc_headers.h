// The headers a generated kernel includes, as in-memory texts for NVRTC (nvrtc_program.cpp):
// lucid_nvrtc_std.h (nvrtc_std.h), lucid/core/host_device.h and lucid/ops/scalar_functors.h,
// copied verbatim from the source tree at build time into nvrtc_headers.cpp in the build folder
// (cmake/cuda_libraries.cmake, lucid_cuda_nvrtc_headers), so the kernels compiled at run time use
// the very functors this build's eager kernels were compiled from, and no file is read at run time.
#pragma once

namespace lucid::cuda {

struct NvrtcHeader {
  const char* name;  // the include name
  const char* text;
};
extern const NvrtcHeader kNvrtcHeaders[];
extern const int kNvrtcHeaderCount;

}  // namespace lucid::cuda
