// The CUDA backend's device discovery and error translation (built only with LUCID_CUDA): the
// engine's answers are compared with the CUDA runtime's own, so the same test holds on a machine
// without a GPU or driver (0 devices, the runtime's error as the reason) and on the GPU machine.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include "lucid/backends/cuda/cuda_check.h"
#include "lucid/backends/cuda/device_info.h"

using namespace lucid;

TEST(CudaCheck, SuccessPassesAndFailureBecomesLucidErrorWithTheRuntimeString) {
  EXPECT_NO_THROW(cuda::check_cuda(cudaSuccess, "cudaFree"));
  try {
    cuda::check_cuda(cudaErrorMemoryAllocation, "cudaMalloc");
    FAIL() << "check_cuda did not throw";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cudaMalloc"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cudaErrorMemoryAllocation"), std::string::npos) << msg;
    EXPECT_NE(msg.find(cudaGetErrorString(cudaErrorMemoryAllocation)), std::string::npos) << msg;
  }
}

TEST(CudaCheck, ClearsTheLastErrorOfAFailedCall) {
  // Without a driver every runtime call fails again with the initialisation error, so this needs
  // a working runtime: then cudaSetDevice(-1)'s cudaErrorInvalidDevice must not linger.
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  cudaError_t status = cudaSetDevice(-1);
  ASSERT_EQ(status, cudaErrorInvalidDevice);
  EXPECT_THROW(cuda::check_cuda(status, "cudaSetDevice"), Error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaDeviceInfo, AgreesWithTheRuntime) {
  EXPECT_TRUE(cuda::is_built());
  int n = -1;
  cudaError_t status = cudaGetDeviceCount(&n);
  cudaGetLastError();
  if (status != cudaSuccess) {
    EXPECT_EQ(cuda::device_count(), 0);
    EXPECT_FALSE(cuda::is_available());
    EXPECT_NE(cuda::unavailable_reason().find(cudaGetErrorName(status)), std::string::npos)
        << cuda::unavailable_reason();
    EXPECT_THROW(cuda::device_properties(0), Error);
    return;
  }
  EXPECT_EQ(cuda::device_count(), n);
  EXPECT_EQ(cuda::is_available(), n > 0);
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, i), cudaSuccess);
    cuda::DeviceProperties p = cuda::device_properties(i);
    EXPECT_EQ(p.name, std::string(prop.name));
    EXPECT_FALSE(p.name.empty());
    EXPECT_EQ(p.major, prop.major);
    EXPECT_EQ(p.minor, prop.minor);
    EXPECT_EQ(p.total_memory, prop.totalGlobalMem);
    EXPECT_GT(p.multi_processor_count, 0);
  }
  EXPECT_THROW(cuda::device_properties(n), IndexError);
  EXPECT_THROW(cuda::device_properties(-1), IndexError);
}
