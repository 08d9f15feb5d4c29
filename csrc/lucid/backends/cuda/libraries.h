// The CUDA backend's libraries and their versions: the CUDA runtime, cuBLAS, cuBLASLt, cuDNN,
// cudnn-frontend, NVRTC and CUB (cmake/cuda_libraries.cmake finds them). One interface, two
// definitions chosen by the build, as device_info.h: libraries.cpp (+ cub_version.cu) in a CUDA
// build, ../no_cuda/libraries.cpp in a CPU-only one (no libraries). No CUDA header here, so the
// bindings and the artifact stamp compile the same in both builds.
//
// Every version is queried without a GPU or a driver (the libraries answer from their own code).
// Codes are each library's own encoding: CUDA runtime and NVRTC major*1000 + minor*10 (13000),
// cuBLAS/cuBLASLt and cuDNN and cudnn-frontend major*10000 + minor*100 + patch (130100, 91900,
// 13200), CUB major*100000 + minor*100 + subminor (300001).
#pragma once
#include <string>
#include <vector>

namespace lucid::cuda {

struct Library {
  std::string name;        // "cuda_runtime", "cublas", "cublaslt", "cudnn", "cudnn_frontend", "nvrtc", "cub"
  int compiled = 0;        // the version code of the headers this build compiled against (0: NVRTC's
                           // header carries none)
  int loaded = 0;          // the version code the library loaded in this process reports (header-only
                           // libraries: the compiled one)
  std::string configured;  // the version CMake found ("9.19.0"; NVRTC: its wheel's or the toolkit's)
  std::string version;     // `loaded` as text: "9.19.0", "13.0"
};

// The libraries of this build, in the order above; empty in a CPU-only build.
const std::vector<Library>& libraries();

}  // namespace lucid::cuda
