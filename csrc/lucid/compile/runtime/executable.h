// Executable: what a compiled signature runs. Built once from an optimised graph and its memory
// plan, then immutable and shared (shared_ptr) by every CompiledModule entry whose graph hashes
// the same. A call binds the inputs and bound state by slot, runs a flat instruction list
// (kernel pointer + slots; view functions for aliases; the block interpreter for fused
// elementwise groups) over a statically planned arena, applies the graph's assigns (writes to
// state or arguments) in order, and returns fresh outputs that never alias the arena. A final
// value the plan puts into its target (kTarget) is written by its node straight into the bound
// tensor, unless that tensor shares memory with another fed tensor or is not contiguous (checked
// per call): then it gets a fresh tensor and the end-of-call copy, as any other assign.
// Concurrent calls each take an arena frame from a small pool, so run() is thread-safe and
// needs no Python (callers release the GIL around it).
#pragma once
#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "lucid/compile/ir/graph.h"
#include "lucid/compile/passes/passes.h"

namespace lucid {
struct FusedProgram;  // fused_ew.h
}

namespace lucid::rt {

class Executable {
 public:
  Executable(ir::Graph g, ir::MemoryPlan plan);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // inputs and states by slot; shapes and dtypes must match the graph (checked by the caller's
  // signature; run() re-checks cheaply and raises rather than reading out of bounds).
  TensorList run(const TensorList& inputs, const TensorList& states) const;

  const ir::Graph& graph() const { return graph_; }
  const ir::MemoryPlan& plan() const { return plan_; }
  int64_t arena_bytes() const { return plan_.arena_bytes; }
  size_t num_instructions() const { return instrs_.size(); }
  size_t pooled_frames() const;
  // Frees the pooled frames (and their arenas): for an executable nothing runs any more but the
  // process-wide cache still holds. A later run makes a new frame.
  void trim() const;

 private:
  enum class Kind : uint8_t { Kernel, View, Fused };
  struct Instr {
    Kind kind;
    const ir::Node* node;
    KernelFn kernel = nullptr;
    ViewFn view = nullptr;
    std::shared_ptr<FusedProgram> fused;
    std::vector<int> fresh;  // outputs allocated per call (positions in node->outputs)
    std::vector<std::pair<int, int>> into;  // (output position, index in targets_): written into a target
    bool random = false;     // Lowering::Random: seed and offset filled in per call
    bool static_view = false;  // a view of arena values or constants: made once per frame, skipped per call
  };
  struct Frame;
  std::unique_ptr<Frame> make_frame() const;
  std::unique_ptr<Frame> acquire() const;
  void release(std::unique_ptr<Frame> f) const;
  void check_feeds(const TensorList& inputs, const TensorList& states) const;
  void confirm_static_views();

  ir::Graph graph_;
  ir::MemoryPlan plan_;
  std::vector<Instr> instrs_;
  std::vector<ir::Assign> final_assigns_;  // the last write to each target, in order
  std::vector<int> output_target_;         // per output: the target whose final value it is, or -1
  std::vector<int> targets_;               // value ids of the states/inputs written in place (plan kTarget)
  std::vector<char> fixed_;                // per value id: the same tensor every call of a frame (arena, constant, static view)
  mutable std::atomic<Frame*> hot_{nullptr};  // one frame ready without locking (the common case)
  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<Frame>> pool_;
};

// The plan the runtime uses when the memory planner is switched off: every node value is
// allocated per call (views alias), exactly as eager would.
ir::MemoryPlan eager_plan(const ir::Graph& g);

}  // namespace lucid::rt
