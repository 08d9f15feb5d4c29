// FrameExecutor: the device-neutral body of an executor (executor.h), which a backend's executor
// derives from. It runs a Program's instructions with the kernels its device registered, over a
// statically planned arena (Storage::allocate on the program's device, so the device's allocator
// gives it: the CUDA caching allocator on a GPU). Each call takes an arena frame (the arena, one
// tensor per value id, per-instruction input/output lists) from a lock-free hot slot or a small
// pool, so concurrent calls never share one; views of arena values and constants are made once
// per frame (static views), random ops get this call's seed and offset (reserved at once from the
// default generator, so concurrent calls never share a draw), and the program applies the assigns
// and collects fresh outputs that never alias the arena. A final value the plan puts into its
// target (kTarget) is written by its node straight into the bound tensor, unless that tensor
// shares memory with another fed tensor or is not contiguous (checked per call): then it gets a
// fresh tensor and the end-of-call copy, as any other assign.
//
// Host scalars in a device program: as in dispatch, a CPU 0-d tensor (a hyper-parameter input,
// an optimizer's step counter, a Python scalar constant) may feed ops on any device
// (ir::graph_device lets such values join). A node runs on its result's device, with that
// device's kernel: ops over host scalars only run on the CPU, as eagerly. Such host values are
// never placed in the device arena (they get a fresh host tensor per call), and a host scalar
// feeding a device kernel that does not take host scalars (outside the elementwise functor
// table, OpDef::ew_dtypes) is copied to the device first, as dispatch's device_inputs does:
// constants once per executor, other values per call.
//
// The state cache: values computed from bound state and constants only (MemoryPlan::kCached,
// e.g. eval BatchNorm folded into a conv's weights and bias) are kept across calls and frames,
// and recomputed only when a bound tensor they read is no longer the one they were computed
// from: another storage or address or strides, a bumped version, or an external (NumPy/DLPack)
// view that lives or ended since (core/external_views.h). A bound tensor whose version can't be
// trusted makes them be recomputed at every call, as without the cache.
//
// What a backend adds: how its FusedElementwise groups run (a FusedRunner given to the
// constructor: the CPU's block interpreter; a backend without one raises NotImplementedError for
// a program with a group), a Frame subclass for what it keeps per frame (new_frame), the hooks
// around a frame's use (frame_acquired / frame_released: a GPU orders a frame's reuse on another
// stream), how the instruction list of one call runs (execute: the plain loop by default; the
// CUDA executor replays a CUDA graph), and how a host scalar reaches a device kernel outside the
// functor table (upload: a copy by default).
//
// LUCID_COMPILE_PROFILE=<n>: each call prints to stderr the host time of its instructions, final
// assigns and state cache, and its n slowest instructions (at least 8). On a GPU it is the time
// to queue the kernels, not to run them.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "lucid/compile/runtime/executor.h"
#include "lucid/core/external_views.h"

namespace lucid::rt {

// How a backend runs a FusedElementwise node: `build` prepares its body once per executor (the
// CPU's FusedProgram), `run` computes a call's outputs from its inputs with what build returned.
// `context` is what the backend made for the whole program before (the CUDA backend's module of
// generated kernels, one NVRTC program per executable); build gets it, and the executor keeps it
// alive as long as the prepared groups.
struct FusedRunner {
  std::shared_ptr<const void> (*build)(const void* context, const ir::Graph& graph, const ir::Node& node) = nullptr;
  void (*run)(const void* prepared, const TensorList& inputs, const TensorList& outputs) = nullptr;
  std::shared_ptr<const void> context;
};

class FrameExecutor : public Executor {
 public:
  ~FrameExecutor() override;
  TensorList run(const TensorList& inputs, const TensorList& states) const override;
  size_t pooled_frames() const override;
  void trim() const override;
  uint64_t state_cache_fills() const override { return cache_fills_.load(std::memory_order_relaxed); }

 protected:
  using Kind = Instruction::Kind;
  // The program's instruction with what runs it on its node's device.
  struct Instr : Instruction {
    KernelFn kernel = nullptr;
    ViewFn view = nullptr;
    std::shared_ptr<const void> fused;  // FusedRunner::build's result
    Device device;             // where the node runs: its result's device
    bool static_view = false;  // a view of arena values or constants: made once per frame, skipped per call
    std::vector<std::pair<int, Tensor>> uploaded;  // (input position, device copy) of host constants
    std::vector<int> upload;   // input positions of other host scalars, copied to `device` per call
    std::vector<int> host_fresh;  // outputs the plan put in the arena that are host values: fresh per call
  };
  struct Frame {
    virtual ~Frame() = default;
    std::shared_ptr<Storage> arena;
    std::vector<Tensor> slots;          // one per value id
    std::vector<TensorList> ins, outs;  // per instruction
    std::vector<int> transient;         // slots refilled per call (inputs, states, fresh, views)
  };
  // What one call's instructions share: its feeds, which targets it writes in place, its draws.
  struct Call {
    const TensorList& inputs;
    const TensorList& states;
    const std::vector<char>& into_ok;
    uint64_t rng_seed, rng_base;
  };

  explicit FrameExecutor(std::shared_ptr<const Program> program, FusedRunner fused = {});

  // A new, empty frame of the backend's type (make_frame fills it).
  virtual std::unique_ptr<Frame> new_frame() const { return std::make_unique<Frame>(); }
  // Called with a frame before a call uses it, and after the call is done with it (before it
  // goes back to the pool); the current thread's context (device, stream) is the call's.
  virtual void frame_acquired(Frame&) const {}
  virtual void frame_released(Frame&) const {}
  // Runs this call's instructions (all but static views and the state cache): step() in order.
  virtual void execute(Frame& f, const Call& c) const;
  // Host scalar `host` (value id `value`) for a device kernel that does not take host scalars: a
  // copy on `device` (the CUDA executor, while it captures a graph, gives instead a device
  // tensor that each replay rewrites with the call's value).
  virtual Tensor upload(int value, const Tensor& host, const Device& device) const;
  // Instruction k of this call: its inputs from the slots, fresh outputs allocated, outputs
  // planned into a target set to that target (when writable this call), then the kernel, the
  // view or the fused group.
  void step(size_t k, Frame& f, const Call& c) const;

  const std::shared_ptr<const Program>& program() const { return program_; }
  const std::vector<Instr>& instrs() const { return instrs_; }
  const Device& device() const { return device_; }

 private:
  // The bound tensor a cached value was computed from, as it was then.
  struct StateStamp {
    std::weak_ptr<Storage> storage;
    const Storage* raw = nullptr;
    const void* data = nullptr;
    Strides strides;
    uint32_t version = 0;
    ExternalViewCount views;
  };
  bool in_arena(size_t id) const;  // planned into the arena, and on the program's device
  std::shared_ptr<Storage> make_arena() const;
  Tensor arena_slot(const std::shared_ptr<Storage>& arena, size_t id) const;
  void fill_state_cache(Frame& f, const Call& c) const;
  std::unique_ptr<Frame> make_frame() const;
  std::unique_ptr<Frame> acquire() const;
  void release(std::unique_ptr<Frame> f) const;
  void confirm_static_views();

  std::shared_ptr<const Program> program_;
  FusedRunner fused_;
  const ir::Graph& graph_;
  const ir::MemoryPlan& plan_;
  Device device_;
  std::vector<Instr> instrs_;
  std::vector<char> fixed_;  // per value id: the same tensor every call of a frame (arena, constant, static view)
  mutable std::atomic<Frame*> hot_{nullptr};  // one frame ready without locking (the common case)
  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<Frame>> pool_;
  bool has_cache_ = false;  // the program has state-cache instructions
  mutable std::mutex cache_mu_;
  mutable bool cache_valid_ = false;
  mutable std::vector<StateStamp> cache_stamps_;  // per Program::cache_reads()
  mutable std::vector<Tensor> cache_values_;      // per Program::cache_values()
  mutable std::atomic<uint64_t> cache_fills_{0};
};

}  // namespace lucid::rt
