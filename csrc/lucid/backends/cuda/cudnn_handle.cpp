// Per-thread cuDNN handles per device, pooled across threads (cudnn_handle.h).
#include "lucid/backends/cuda/cudnn_handle.h"

#include <mutex>
#include <vector>

#include "lucid/backends/cuda/stream.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

void check_cudnn(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  throw Error(str("cuDNN error in ", what, ": ", cudnnGetErrorString(status), detail[0] ? str(" (", detail, ")") : ""));
}

namespace {

// Handles no thread holds, per device. Never destroyed: a handle outlives every thread that might
// still return one at exit (the driver tears the handles down with the process).
struct HandlePool {
  std::mutex mu;
  std::vector<std::vector<cudnnHandle_t>> free;  // by device index
};

HandlePool& pool() {
  static HandlePool* p = new HandlePool;
  return *p;
}

// The handles this thread holds, by device index; returned to the pool when the thread ends.
struct ThreadHandles {
  std::vector<cudnnHandle_t> by_device;
  ~ThreadHandles() {
    HandlePool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    for (size_t i = 0; i < by_device.size(); ++i) {
      if (!by_device[i]) continue;
      if (p.free.size() <= i) p.free.resize(i + 1);
      p.free[i].push_back(by_device[i]);
    }
  }
};

cudnnHandle_t acquire(int index) {
  {
    HandlePool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    if (static_cast<int>(p.free.size()) > index && !p.free[index].empty()) {
      cudnnHandle_t h = p.free[index].back();
      p.free[index].pop_back();
      return h;
    }
  }
  cudnnHandle_t h = nullptr;
  check_cudnn(cudnnCreate(&h), "cudnnCreate");
  return h;
}

}  // namespace

cudnnHandle_t cudnn_handle(const Device& d) {
  thread_local ThreadHandles mine;
  const int index = static_cast<int>(d.index);
  LUCID_CHECK(index >= 0, Error, "cudnn: invalid device index ", index);
  if (static_cast<int>(mine.by_device.size()) <= index) mine.by_device.resize(index + 1, nullptr);
  cudnnHandle_t& h = mine.by_device[index];
  if (!h) h = acquire(index);
  check_cudnn(cudnnSetStream(h, current_stream(d)), "cudnnSetStream");
  return h;
}

}  // namespace lucid::cuda
