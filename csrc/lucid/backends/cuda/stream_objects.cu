// The CUDA build's streams and events (stream_objects.h): the per-device pools of created streams
// and the Event's calls into the CUDA runtime.
#include <cuda_runtime_api.h>

#include <array>
#include <mutex>
#include <vector>

#include "lucid/backends/cuda/deferred_check.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/backends/cuda/stream_objects.h"
#include "lucid/core/device.h"
#include "lucid/core/error.h"

namespace lucid::cuda {

namespace {

constexpr int kStreamsPerPool = 32;
constexpr int kMaxPriorities = 16;  // more levels than any GPU has (6 on sm_90)

cudaStream_t as_stream(uintptr_t h) { return reinterpret_cast<cudaStream_t>(h); }
cudaEvent_t as_event(uintptr_t h) { return reinterpret_cast<cudaEvent_t>(h); }

int checked_device(int device) {
  check_available(Device{DeviceType::CUDA, static_cast<int16_t>(device)});
  return device;
}

// One device's pools, one per priority level, filled on first use.
struct DevicePools {
  std::mutex mu;
  int least = 0, greatest = 0;
  std::array<std::vector<cudaStream_t>, kMaxPriorities> streams;
  std::array<unsigned, kMaxPriorities> next{};
};

DevicePools& pools(int device) {
  static std::mutex mu;
  static std::vector<DevicePools*>* all = new std::vector<DevicePools*>;  // never destroyed
  std::lock_guard<std::mutex> lk(mu);
  if (all->size() <= static_cast<size_t>(device)) all->resize(device + 1, nullptr);
  DevicePools*& p = (*all)[device];
  if (!p) {
    auto* fresh = new DevicePools;
    DeviceGuard g(device);
    check_cuda(cudaDeviceGetStreamPriorityRange(&fresh->least, &fresh->greatest), "cudaDeviceGetStreamPriorityRange");
    p = fresh;
  }
  return *p;
}

}  // namespace

std::pair<int, int> stream_priority_range(int device) {
  DevicePools& p = pools(checked_device(device));
  return {p.least, p.greatest};
}

StreamRef pooled_stream(int device, int priority) {
  DevicePools& p = pools(checked_device(device));
  if (priority > p.least) priority = p.least;
  if (priority < p.greatest) priority = p.greatest;
  const int level = p.least - priority;  // 0: the lowest priority
  LUCID_CHECK(level < kMaxPriorities, Error, "cuda Stream: too many priority levels (", p.least - p.greatest + 1, ")");
  std::lock_guard<std::mutex> lk(p.mu);
  std::vector<cudaStream_t>& v = p.streams[level];
  const unsigned i = p.next[level]++ % kStreamsPerPool;
  if (v.size() <= i) {  // created in order, so i == v.size()
    DeviceGuard g(device);
    cudaStream_t s = nullptr;
    check_cuda(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority), "cudaStreamCreateWithPriority");
    v.push_back(s);
  }
  return {device, reinterpret_cast<uintptr_t>(v[i])};
}

int stream_priority(const StreamRef& s) {
  DeviceGuard g(checked_device(s.device));
  int prio = 0;
  check_cuda(cudaStreamGetPriority(as_stream(s.handle), &prio), "cudaStreamGetPriority");
  return prio;
}

StreamRef current_stream_ref(int device) {
  return {checked_device(device), reinterpret_cast<uintptr_t>(current_stream(device))};
}

void set_current_stream_ref(const StreamRef& s) { set_current_stream(checked_device(s.device), as_stream(s.handle)); }

bool stream_query(const StreamRef& s) {
  DeviceGuard g(checked_device(s.device));
  cudaError_t st = cudaStreamQuery(as_stream(s.handle));
  if (st == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  check_cuda(st, "cudaStreamQuery");
  return true;
}

void stream_synchronize(const StreamRef& s) {
  DeviceGuard g(checked_device(s.device));
  check_cuda(cudaStreamSynchronize(as_stream(s.handle)), "cudaStreamSynchronize");
  raise_deferred_errors(false);
}

void stream_wait_stream(const StreamRef& waiter, const StreamRef& producer) {
  if (waiter.device == producer.device && waiter.handle == producer.handle) return;
  DeviceGuard g(checked_device(producer.device));
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  cudaError_t st = cudaEventRecord(e, as_stream(producer.handle));
  if (st == cudaSuccess) st = cudaStreamWaitEvent(as_stream(waiter.handle), e, 0);
  cudaEventDestroy(e);  // released once the wait has been satisfied; the wait stays queued
  check_cuda(st, "cudaStreamWaitEvent");
}

Event::Event(bool enable_timing, bool blocking) : timing_(enable_timing), blocking_(blocking) {}

Event::~Event() {  // never throws: a failure here (the runtime shutting down) is ignored
  if (!handle_) return;
  int cur = -1;
  if (cudaGetDevice(&cur) == cudaSuccess && cur != device_) cudaSetDevice(device_);
  cudaEventDestroy(as_event(handle_));
  if (cur >= 0 && cur != device_) cudaSetDevice(cur);
  cudaGetLastError();
}

void Event::record(const StreamRef& s) {
  checked_device(s.device);
  LUCID_CHECK(!handle_ || device_ == s.device, Error, "cuda Event.record: the event was recorded on cuda:", device_,
              " and cannot be recorded on a stream of cuda:", s.device);
  DeviceGuard g(s.device);
  if (!handle_) {
    unsigned flags = (timing_ ? cudaEventDefault : cudaEventDisableTiming) | (blocking_ ? cudaEventBlockingSync : 0u);
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreateWithFlags(&e, flags), "cudaEventCreateWithFlags");
    handle_ = reinterpret_cast<uintptr_t>(e);
    device_ = s.device;
  }
  check_cuda(cudaEventRecord(as_event(handle_), as_stream(s.handle)), "cudaEventRecord");
}

void Event::wait(const StreamRef& s) const {
  if (!handle_) return;
  DeviceGuard g(checked_device(s.device));
  check_cuda(cudaStreamWaitEvent(as_stream(s.handle), as_event(handle_), 0), "cudaStreamWaitEvent");
}

bool Event::query() const {
  if (!handle_) return true;
  DeviceGuard g(device_);
  cudaError_t st = cudaEventQuery(as_event(handle_));
  if (st == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  check_cuda(st, "cudaEventQuery");
  return true;
}

void Event::synchronize() const {
  if (!handle_) return;
  DeviceGuard g(device_);
  check_cuda(cudaEventSynchronize(as_event(handle_)), "cudaEventSynchronize");
  raise_deferred_errors(false);
}

float Event::elapsed_time(const Event& end) const {
  LUCID_CHECK(timing_ && end.timing_, Error,
              "cuda Event.elapsed_time: both events must be created with enable_timing=True");
  LUCID_CHECK(handle_ && end.handle_, Error,
              "cuda Event.elapsed_time: both events must be recorded before calculating elapsed time");
  DeviceGuard g(device_);
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, as_event(handle_), as_event(end.handle_)), "cudaEventElapsedTime");
  return ms;
}

}  // namespace lucid::cuda
