// The CUDA backend's library versions (built only with LUCID_CUDA): the engine's records agree
// with the headers this test compiles against (the same include folders as the backend), with
// what CMake found (LUCID_CUDA_FOUND_*), and with the libraries loaded in this process. None of
// it needs a GPU or a driver.
#include <gtest/gtest.h>

#include <cub/version.cuh>
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn_frontend_version.h>
#include <cudnn_version.h>

#include <map>
#include <string>

#include "lucid/backends/cuda/libraries.h"

using namespace lucid;

namespace {
std::map<std::string, cuda::Library> by_name() {
  std::map<std::string, cuda::Library> m;
  for (const cuda::Library& lib : cuda::libraries()) m[lib.name] = lib;
  return m;
}
// "9.19.0" from major*10000 + minor*100 + patch
std::string dotted3(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}
}  // namespace

TEST(CudaLibraries, EveryLibraryIsListedOnce) {
  auto libs = by_name();
  EXPECT_EQ(libs.size(), cuda::libraries().size());
  for (const char* name : {"cuda_runtime", "cublas", "cublaslt", "cudnn", "cudnn_frontend", "nvrtc", "cub"})
    EXPECT_EQ(libs.count(name), 1u) << name;
}

TEST(CudaLibraries, CompiledVersionsAreTheHeadersCMakeFound) {
  auto libs = by_name();
  EXPECT_EQ(libs["cuda_runtime"].compiled, CUDART_VERSION);
  EXPECT_EQ(libs["cublas"].compiled, CUBLAS_VERSION);
  EXPECT_EQ(libs["cublaslt"].compiled, CUBLAS_VERSION);
  EXPECT_EQ(libs["cudnn"].compiled, CUDNN_VERSION);
  EXPECT_EQ(libs["cudnn_frontend"].compiled, CUDNN_FRONTEND_VERSION);
  EXPECT_EQ(libs["cub"].compiled, CUB_VERSION);  // what nvcc saw (cub_version.cu) == what g++ sees here
  // CMake read the same headers: the configure report is the build's truth.
  EXPECT_EQ(libs["cublas"].configured, dotted3(CUBLAS_VERSION));
  EXPECT_EQ(libs["cublas"].configured, LUCID_CUDA_FOUND_CUBLAS);
  EXPECT_EQ(libs["cudnn"].configured, dotted3(CUDNN_VERSION));
  EXPECT_EQ(libs["cudnn_frontend"].configured, dotted3(CUDNN_FRONTEND_VERSION));
  EXPECT_EQ(libs["cub"].configured, std::to_string(CUB_MAJOR_VERSION) + "." + std::to_string(CUB_MINOR_VERSION) +
                                        "." + std::to_string(CUB_SUBMINOR_VERSION));
  EXPECT_EQ(libs["nvrtc"].compiled, 0);  // nvrtc.h carries no version
}

TEST(CudaLibraries, LoadedLibrariesShareTheCompiledMajorVersion) {
  // A newer minor release may be loaded (the process may hold torch's copy); a different major
  // release is an ABI break and must not be.
  auto libs = by_name();
  EXPECT_EQ(libs["cublas"].loaded / 10000, CUBLAS_VER_MAJOR);
  EXPECT_GE(libs["cublas"].loaded, CUBLAS_VERSION);
  EXPECT_EQ(libs["cublaslt"].loaded, libs["cublas"].loaded);  // one release, two libraries
  EXPECT_EQ(libs["cudnn"].loaded / 10000, CUDNN_MAJOR);
  EXPECT_GE(libs["cudnn"].loaded, CUDNN_VERSION);
  EXPECT_EQ(libs["nvrtc"].loaded / 1000, CUDART_VERSION / 1000);  // NVRTC of the toolkit's major release
  EXPECT_EQ(libs["cuda_runtime"].loaded, CUDART_VERSION);         // linked statically
  EXPECT_EQ(libs["cudnn_frontend"].loaded, CUDNN_FRONTEND_VERSION);
  EXPECT_EQ(libs["cudnn"].version, dotted3(libs["cudnn"].loaded));
  std::string nvrtc = libs["nvrtc"].configured;  // "13.0.88": starts with the loaded "13.0"
  EXPECT_EQ(nvrtc.rfind(libs["nvrtc"].version, 0), 0u) << nvrtc << " vs " << libs["nvrtc"].version;
}
