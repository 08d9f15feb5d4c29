// The CUDA build's definition of libraries.h: each library's header version (compiled in) and
// the version the library loaded in this process reports, neither needing a GPU or a driver:
// cudaRuntimeGetVersion, cublasGetProperty, cublasLtGetVersion, cudnnGetVersion, nvrtcVersion;
// cudnn-frontend and CUB are header-only (CUB's from cub_version.cu, which nvcc compiles). The
// headers of all of them are included here, so a broken include path fails the build (CI
// builds the CUDA backend). CMake passes what it found as LUCID_CUDA_FOUND_* definitions.
#include "lucid/backends/cuda/libraries.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cudnn_frontend.h>
#include <nvrtc.h>

#include "lucid/core/error.h"

#ifndef LUCID_CUDA_FOUND_CUBLAS
#error "libraries.cpp needs CMake's LUCID_CUDA_FOUND_* definitions (target lucid_cuda_libraries)"
#endif

namespace lucid::cuda {

int cub_version();  // cub_version.cu

namespace {

// major*10000 + minor*100 + patch -> "9.19.0"
std::string dotted3(int code) { return str(code / 10000, ".", code / 100 % 100, ".", code % 100); }
// CUDA's major*1000 + minor*10 -> "13.0"
std::string dotted_cuda(int code) { return str(code / 1000, ".", code % 1000 / 10); }

std::vector<Library> query() {
  std::vector<Library> r;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);  // the static runtime answers without a driver
  r.push_back({"cuda_runtime", CUDART_VERSION, runtime, LUCID_CUDA_FOUND_CUDA_RUNTIME, dotted_cuda(runtime)});

  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  int cublas = major * 10000 + minor * 100 + patch;
  r.push_back({"cublas", CUBLAS_VERSION, cublas, LUCID_CUDA_FOUND_CUBLAS, dotted3(cublas)});
  int lt = static_cast<int>(cublasLtGetVersion());
  r.push_back({"cublaslt", CUBLAS_VERSION,  // one release with cuBLAS; cublasLt.h has no version of its own
              lt, LUCID_CUDA_FOUND_CUBLAS, dotted3(lt)});

  int cudnn = static_cast<int>(cudnnGetVersion());
  r.push_back({"cudnn", CUDNN_VERSION, cudnn, LUCID_CUDA_FOUND_CUDNN, dotted3(cudnn)});
  r.push_back({"cudnn_frontend", CUDNN_FRONTEND_VERSION, CUDNN_FRONTEND_VERSION, LUCID_CUDA_FOUND_CUDNN_FRONTEND,
               dotted3(CUDNN_FRONTEND_VERSION)});

  int nv_major = 0, nv_minor = 0;
  nvrtcVersion(&nv_major, &nv_minor);
  int nvrtc = nv_major * 1000 + nv_minor * 10;
  r.push_back({"nvrtc", 0, nvrtc, LUCID_CUDA_FOUND_NVRTC, dotted_cuda(nvrtc)});

  int cub = cub_version();
  r.push_back({"cub", cub, cub, LUCID_CUDA_FOUND_CUB, str(cub / 100000, ".", cub / 100 % 1000, ".", cub % 100)});
  return r;
}

}  // namespace

const std::vector<Library>& libraries() {
  static const std::vector<Library> libs = query();
  return libs;
}

}  // namespace lucid::cuda
