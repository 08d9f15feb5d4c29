// The CUDA backend's executor (compile/runtime/executor.h): runs a Program with the CUDA kernels
// on the calling thread's current stream of the program's device, over a statically planned
// arena from the CUDA caching allocator. Everything device-neutral (frames per concurrent call,
// static views, host scalars, fresh outputs, assigns into bound state, random ops' seed and
// offset, the state cache) is compile/runtime/frame_executor.h's, shared with every backend; what
// is the GPU's is here:
//   - the program's device is made current for the call (DeviceGuard), and every kernel, arena
//     and fresh output is ordered on its current stream;
//   - a frame is reused in stream order: each call records an event on its stream when done with
//     the frame, and a later call on another stream waits for it before touching the arena (the
//     kernels of the last call may still be running); the arena is also marked as used on that
//     stream (record_stream), so freeing the frame (trim) never hands the block out early.
// The state cache's values are computed on the stream of the call that filled it; calls on other
// streams read them unordered, so the cache is for one stream at a time (the common case).
#include <cuda_runtime_api.h>

#include "lucid/backends/cuda/cuda_allocator.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/compile/runtime/frame_executor.h"

namespace lucid::cuda {

namespace {

class CudaExecutor final : public rt::FrameExecutor {
 public:
  explicit CudaExecutor(std::shared_ptr<const rt::Program> program) : FrameExecutor(std::move(program)) {}

  TensorList run(const TensorList& inputs, const TensorList& states) const override {
    DeviceGuard guard(device());
    return FrameExecutor::run(inputs, states);
  }

 private:
  struct CudaFrame : Frame {
    ~CudaFrame() override {
      if (done) cudaEventDestroy(done);  // an event still pending is released when it completes
    }
    bool used = false;
    cudaStream_t alloc_stream = nullptr;  // the stream its arena was allocated on
    cudaStream_t stream = nullptr;        // the stream of its last call
    cudaEvent_t done = nullptr;           // recorded on `stream` at the end of that call
  };

  std::unique_ptr<Frame> new_frame() const override { return std::make_unique<CudaFrame>(); }

  void frame_acquired(Frame& frame) const override {
    auto& f = static_cast<CudaFrame&>(frame);
    cudaStream_t s = current_stream(device());
    if (!f.used) {
      f.alloc_stream = s;
    } else if (f.stream != s) {
      check_cuda(cudaStreamWaitEvent(s, f.done, 0), "lucid.compile: cudaStreamWaitEvent (frame reuse)");
    }
  }

  void frame_released(Frame& frame) const override {
    auto& f = static_cast<CudaFrame&>(frame);
    cudaStream_t s = current_stream(device());
    if (!f.done) check_cuda(cudaEventCreateWithFlags(&f.done, cudaEventDisableTiming), "lucid.compile: cudaEventCreate");
    check_cuda(cudaEventRecord(f.done, s), "lucid.compile: cudaEventRecord (frame release)");
    if (s != f.alloc_stream && f.arena)
      record_stream(f.arena->data, static_cast<int>(device().index), reinterpret_cast<uintptr_t>(s));
    f.stream = s;
    f.used = true;
  }
};

std::unique_ptr<rt::Executor> make_cuda_executor(std::shared_ptr<const rt::Program> program) {
  return std::make_unique<CudaExecutor>(std::move(program));
}

}  // namespace

LUCID_REGISTER_EXECUTOR(CUDA, make_cuda_executor);

}  // namespace lucid::cuda
