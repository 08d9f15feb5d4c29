// The cudaMallocAsync backend (backends/cuda/cuda_malloc_async.cu), used directly (the process's
// allocator table holds the default one unless LUCID_CUDA_ALLOCATOR=cudaMallocAsync): counters,
// memory kept in the pool until empty_cache, record_stream's ordering of the free, and
// out-of-memory recovery. Skipped without a device.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include "lucid/backends/cuda/cuda_malloc_async.h"
#include "lucid/backends/cuda/device_info.h"
#include "lucid/backends/cuda/stream_objects.h"
#include "lucid/core/memory_error.h"
#include "held_stream.h"

using namespace lucid;

TEST(CudaMallocAsync, CountsRequestedBytesAndKeepsFreedMemoryUntilEmptyCache) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Allocator& a = cuda::malloc_async_allocator();
  const int64_t before = a.stats(0).allocated;
  {
    Allocation x = a.allocate(3 << 20, 0);
    Allocation zero = a.allocate(0, 0);
    EXPECT_NE(x.data, nullptr);
    EXPECT_NE(zero.data, nullptr);
    EXPECT_EQ(a.stats(0).allocated, before + (3 << 20) + 1);
    EXPECT_GE(a.stats(0).peak, before + (3 << 20));
    EXPECT_EQ(cudaMemsetAsync(x.data, 0, 3 << 20, nullptr), cudaSuccess);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(a.stats(0).allocated, before);
  const cuda::AllocatorStats s = cuda::malloc_async_stats(0);
  EXPECT_GE(s.reserved, 3 << 20);  // kept by the pool (release threshold: never)
  EXPECT_GE(s.peak_reserved, s.reserved);
  EXPECT_GE(a.empty_cache(0), 0);
  a.reset_peak(0);
  EXPECT_EQ(a.stats(0).peak, a.stats(0).allocated);
}

TEST(CudaMallocAsync, RecordStreamOrdersTheFreeAfterTheUsingStream) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Allocator& a = cuda::malloc_async_allocator();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStream_t side = reinterpret_cast<cudaStream_t>(cuda::pooled_stream(0, 0).handle);
  Allocation x = a.allocate(1 << 20, 0);  // on the legacy default stream
  {
    test::HeldStream held(side);
    cuda::malloc_async_record_stream(x.data, 0, reinterpret_cast<uintptr_t>(side));
    x = {};  // cudaFreeAsync on the default stream, after an event of the held side stream
    EXPECT_EQ(cudaStreamQuery(nullptr), cudaErrorNotReady);  // the default stream now waits for side
    cudaGetLastError();
    held.release();
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const cuda::AllocatorStats s = cuda::malloc_async_stats(0);
  EXPECT_EQ(s.active_bytes, s.allocated);
  Allocation y = a.allocate(1 << 20, 0);  // without uses: the free is one cudaFreeAsync
  y = {};
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaSuccess);
}

TEST(CudaMallocAsync, OutOfMemoryRaisesAndTheDeviceStaysUsable) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Allocator& a = cuda::malloc_async_allocator();
  EXPECT_THROW(a.allocate(size_t{10} << 40, 0), OutOfMemoryError);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cuda::malloc_async_stats(0).num_ooms, 1);
  Allocation ok = a.allocate(1 << 20, 0);
  EXPECT_EQ(cudaMemsetAsync(ok.data, 1, 1 << 20, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}
