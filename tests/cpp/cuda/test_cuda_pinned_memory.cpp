// Pinned host memory (backends/cuda/pinned_memory.cu): pin_memory copies into a cached
// cudaHostAlloc buffer, is_pinned recognises it (and pageable memory as not pinned), and a freed
// buffer is reused for the next request of its size class once the copies recorded on it are done.
// Skipped without a device.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include "lucid/backends/cuda/device_info.h"
#include "lucid/backends/cuda/pinned_memory.h"
#include "lucid/backends/cuda/stream_objects.h"

using namespace lucid;

namespace {
Tensor filled(int64_t n) {
  Tensor t = Tensor::empty({n}, DType::Float32);
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
}  // namespace

TEST(CudaPinnedMemory, PinMemoryCopiesIntoAPinnedBufferThatIsReusedAfterItsCopies) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Tensor host = filled(1000);
  EXPECT_FALSE(cuda::is_pinned(host.data_ptr()));
  void* first = nullptr;
  {
    Tensor p = cuda::pin_memory(host);
    EXPECT_TRUE(cuda::is_pinned(p.data_ptr()));
    EXPECT_TRUE(cuda::is_pinned(p.data<float>() + 999));  // anywhere inside the buffer
    EXPECT_EQ(p.data<float>()[999], 999.0f);
    EXPECT_EQ(cuda::pin_memory(p).data_ptr(), p.data_ptr());  // pinned already: itself
    first = p.data_ptr();
    cuda::StreamRef s = cuda::pooled_stream(0, 0);
    void* dev = nullptr;
    ASSERT_EQ(cudaMalloc(&dev, 4000), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(dev, p.data_ptr(), 4000, cudaMemcpyHostToDevice, reinterpret_cast<cudaStream_t>(s.handle)),
              cudaSuccess);
    cuda::record_host_use(p.data_ptr(), s);
    cuda::stream_synchronize(s);
    cudaFree(dev);
  }
  Tensor again = cuda::pin_memory(filled(1000));  // same size class, its copy done: the same buffer
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(again.data<float>()[10], 10.0f);
}
