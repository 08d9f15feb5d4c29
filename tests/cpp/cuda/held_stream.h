// HeldStream: holds a CUDA stream so that the work queued on it afterwards stays pending until
// release(), deterministically (no timing): a host function queued on the stream spins on a
// flag. For the tests of record_stream (test_cuda_allocator.cpp, test_cuda_malloc_async.cpp).
// Nothing may synchronise with the held stream before release(); the destructor releases it and
// waits for the stream.
#pragma once
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <atomic>
#include <thread>

namespace lucid::test {

class HeldStream {
 public:
  explicit HeldStream(cudaStream_t s) : stream_(s) {
    EXPECT_EQ(cudaLaunchHostFunc(stream_, &spin, &go_), cudaSuccess);
  }
  ~HeldStream() {
    release();
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }
  HeldStream(const HeldStream&) = delete;
  HeldStream& operator=(const HeldStream&) = delete;
  void release() { go_.store(true); }

 private:
  static void CUDART_CB spin(void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
  }
  cudaStream_t stream_;
  std::atomic<bool> go_{false};
};

}  // namespace lucid::test
