// Executable: what a compiled signature runs, the handle every caller holds (the executable
// cache, CompiledEntry, compiled backward nodes, artifacts, the Python binding). Built once from
// an optimised graph and its memory plan, then immutable and shared (shared_ptr) by every
// CompiledModule entry whose graph hashes the same. It is two halves:
//   - the Program (program.h): device-neutral instructions over value slots, the memory plan,
//     the assigns; what save_compiled stores and any backend can run;
//   - the Executor (executor.h) of the program's device, registered by its backend: kernel
//     pointers, arena frames from a small pool, static views and the state cache
//     (runtime/frame_executor.h, shared), and the backend's own parts: the CPU's fused-elementwise
//     block interpreter (backends/cpu/compile/executor.cpp), the GPU's CUDA-graph replay
//     (backends/cuda/compile/executor.cpp).
// run() checks the feeds against the program and makes one virtual call into the executor; it is
// thread-safe and needs no Python (callers release the GIL around it).
#pragma once
#include <cstdint>
#include <memory>

#include "lucid/compile/runtime/executor.h"
#include "lucid/compile/runtime/program.h"

namespace lucid::rt {

class Executable {
 public:
  // Raises NotImplementedError when no backend registered an executor for the graph's device.
  Executable(ir::Graph g, ir::MemoryPlan plan);
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // inputs and states by slot; shapes and dtypes must match the graph (checked by the caller's
  // signature; run() re-checks cheaply and raises rather than reading out of bounds).
  TensorList run(const TensorList& inputs, const TensorList& states) const {
    program_->check_feeds(inputs, states);
    return executor_->run(inputs, states);
  }

  const std::shared_ptr<const Program>& program() const { return program_; }
  const ir::Graph& graph() const { return program_->graph(); }
  const ir::MemoryPlan& plan() const { return program_->plan(); }
  int64_t arena_bytes() const { return program_->plan().arena_bytes; }
  size_t num_instructions() const { return program_->instructions().size(); }
  size_t pooled_frames() const { return executor_->pooled_frames(); }
  uint64_t state_cache_fills() const { return executor_->state_cache_fills(); }
  uint64_t graph_replays() const { return executor_->graph_replays(); }
  std::string graph_fallback() const { return executor_->graph_fallback(); }
  FusedKernelStats fused_kernels() const { return executor_->fused_kernels(); }
  // Frees the pooled frames (and their arenas): for an executable nothing runs any more but the
  // process-wide cache still holds. A later run makes a new frame.
  void trim() const { executor_->trim(); }

 private:
  std::shared_ptr<const Program> program_;
  std::unique_ptr<const Executor> executor_;
};

}  // namespace lucid::rt
