// The CPU backend's executor (compile/runtime/executor.h): runs a Program with CPU kernel
// pointers over a statically planned arena. Each call takes an arena frame (the arena, one
// tensor per value id, per-instruction input/output lists) from a lock-free hot slot or a small
// pool, so concurrent calls never share one; views of arena values and constants are made once
// per frame (static views), fused elementwise groups run on the block interpreter (fused_ew.h),
// random ops get this call's seed and offset, and the program applies the assigns and collects
// fresh outputs that never alias the arena. A final value the plan puts into its target
// (kTarget) is written by its node straight into the bound tensor, unless that tensor shares
// memory with another fed tensor or is not contiguous (checked per call): then it gets a fresh
// tensor and the end-of-call copy, as any other assign.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "lucid/backends/cpu/compile/fused_ew.h"
#include "lucid/compile/runtime/executor.h"
#include "lucid/core/generator.h"

namespace lucid::cpu {

namespace {

using ir::MemoryPlan;
using ir::ValueKind;
using rt::Instruction;
using rt::Program;

// The arena of one frame. A plan may place zero-byte values (a batch of 0) at offset 0 of an
// arena of 0 bytes; they still need a valid base pointer, as Tensor::empty gives eager's empty
// tensors, so the arena exists whenever any value is planned into it.
std::shared_ptr<Storage> make_arena(const MemoryPlan& plan) {
  bool used = plan.arena_bytes > 0;
  for (int64_t off : plan.offset) used = used || off >= 0;
  return used ? Storage::allocate(static_cast<size_t>(plan.arena_bytes)) : nullptr;
}

// The contiguous tensor of value v at byte offset `off` of an arena.
Tensor arena_slot(const std::shared_ptr<Storage>& arena, int64_t off, const ir::Value& v) {
  auto impl = std::make_shared<TensorImpl>();
  size_t nbytes = static_cast<size_t>(numel_of(v.shape)) * itemsize(v.dtype);
  impl->storage = Storage::wrap(static_cast<char*>(arena->data) + off, nbytes, arena);
  impl->shape = v.shape;
  impl->strides = contiguous_strides(v.shape);
  impl->dtype = v.dtype;
  return Tensor(std::move(impl));
}

class CpuExecutor final : public rt::Executor {
 public:
  explicit CpuExecutor(std::shared_ptr<const Program> program);
  ~CpuExecutor() override { delete hot_.exchange(nullptr); }

  TensorList run(const TensorList& inputs, const TensorList& states) const override;
  size_t pooled_frames() const override;
  void trim() const override;

 private:
  using Kind = Instruction::Kind;
  // The program's instruction with what runs it on the CPU.
  struct Instr : Instruction {
    KernelFn kernel = nullptr;
    ViewFn view = nullptr;
    std::shared_ptr<FusedProgram> fused;
    bool static_view = false;  // a view of arena values or constants: made once per frame, skipped per call
  };
  struct Frame {
    std::shared_ptr<Storage> arena;
    std::vector<Tensor> slots;          // one per value id
    std::vector<TensorList> ins, outs;  // per instruction
    std::vector<int> transient;         // slots refilled per call (inputs, states, fresh, views)
  };
  std::unique_ptr<Frame> make_frame() const;
  std::unique_ptr<Frame> acquire() const;
  void release(std::unique_ptr<Frame> f) const;
  void confirm_static_views();

  std::shared_ptr<const Program> program_;
  const ir::Graph& graph_;
  const MemoryPlan& plan_;
  std::vector<Instr> instrs_;
  std::vector<char> fixed_;  // per value id: the same tensor every call of a frame (arena, constant, static view)
  mutable std::atomic<Frame*> hot_{nullptr};  // one frame ready without locking (the common case)
  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<Frame>> pool_;
};

CpuExecutor::CpuExecutor(std::shared_ptr<const Program> program)
    : program_(std::move(program)), graph_(program_->graph()), plan_(program_->plan()) {
  for (const Instruction& pi : program_->instructions()) {
    Instr in;
    static_cast<Instruction&>(in) = pi;
    const ir::Node& n = *in.node;
    const OpDef& def = op_def(n.op);
    if (in.kind == Kind::Fused) {
      in.fused = std::make_shared<FusedProgram>(*n.body, wrapped_inputs(graph_, n));
    } else if (in.kind == Kind::View) {
      in.view = def.view;
      in.static_view = true;  // a candidate; decided by confirm_static_views
    } else {
      in.kernel = def.kernel(DeviceType::CPU);
      LUCID_CHECK(in.kernel, NotImplementedError, "lucid.compile: ", def.api_name, " has no CPU kernel");
    }
    instrs_.push_back(std::move(in));
  }
  confirm_static_views();
}

// Values that are the same tensor at every call of a frame: arena slots, constants, and views of
// those, made once per frame. But a view function may copy (Reshape of a layout it can't view):
// such a result holds the data of the moment it was made, so it must be made at every call. Runs
// the candidate views once over a scratch arena and keeps static only those whose inputs are
// fixed and whose results alias their base.
void CpuExecutor::confirm_static_views() {
  fixed_.assign(graph_.values().size(), 0);
  std::vector<Tensor> slot(graph_.values().size());
  std::shared_ptr<Storage> arena = make_arena(plan_);
  for (size_t id = 0; id < slot.size(); ++id) {
    const ir::Value& v = graph_.value(static_cast<int>(id));
    if (plan_.offset[id] >= 0) {
      slot[id] = arena_slot(arena, plan_.offset[id], v);
      fixed_[id] = 1;
    } else if (v.kind == ValueKind::Const) {
      slot[id] = graph_.const_data(v.slot);
      fixed_[id] = 1;
    }
  }
  for (Instr& in : instrs_) {
    if (!in.static_view) continue;
    const ir::Node& n = *in.node;
    bool ok = true;
    TensorList ins;
    for (int i : n.inputs) {
      ok = ok && (i < 0 || fixed_[i]);
      ins.push_back(i < 0 ? Tensor() : slot[i]);
    }
    if (ok) {
      TensorList r = in.view(ins, n.attrs);
      for (const Tensor& t : r) ok = ok && t.impl()->storage == ins.at(0).impl()->storage;
      for (size_t j = 0; ok && j < n.outputs.size(); ++j) slot[n.outputs[j]] = r[j];
    }
    in.static_view = ok;
    for (int o : n.outputs) fixed_[o] = ok;
  }
}

std::unique_ptr<CpuExecutor::Frame> CpuExecutor::make_frame() const {
  auto f = std::make_unique<Frame>();
  const auto& vals = graph_.values();
  f->slots.resize(vals.size());
  f->arena = make_arena(plan_);
  for (size_t id = 0; id < vals.size(); ++id) {
    int64_t off = plan_.offset[id];
    const ir::Value& v = vals[id];
    if (off >= 0) {
      f->slots[id] = arena_slot(f->arena, off, v);
    } else if (v.kind == ValueKind::Const) {
      f->slots[id] = graph_.const_data(v.slot);
    } else if (!fixed_[id]) {
      f->transient.push_back(static_cast<int>(id));
    }
  }
  for (const Instr& in : instrs_) {  // static views, in order (a view of a view needs its base first)
    if (!in.static_view) continue;
    TensorList ins;
    for (int i : in.node->inputs) ins.push_back(i < 0 ? Tensor() : f->slots[i]);
    TensorList r = in.view(ins, in.node->attrs);
    for (size_t j = 0; j < in.node->outputs.size(); ++j) f->slots[in.node->outputs[j]] = std::move(r[j]);
  }
  for (const Instr& in : instrs_) {
    f->ins.emplace_back(in.node->inputs.size());
    TensorList outs;
    for (int o : in.node->outputs) outs.push_back(f->slots[o]);
    f->outs.push_back(std::move(outs));
  }
  return f;
}

std::unique_ptr<CpuExecutor::Frame> CpuExecutor::acquire() const {
  if (Frame* f = hot_.exchange(nullptr, std::memory_order_acquire)) return std::unique_ptr<Frame>(f);
  {
    std::lock_guard<std::mutex> lk(pool_mu_);
    if (!pool_.empty()) {
      auto f = std::move(pool_.back());
      pool_.pop_back();
      return f;
    }
  }
  return make_frame();
}

void CpuExecutor::release(std::unique_ptr<Frame> f) const {
  for (int id : f->transient) f->slots[id] = Tensor();
  for (size_t k = 0; k < instrs_.size(); ++k) {
    for (Tensor& t : f->ins[k]) t = Tensor();
    for (int j : instrs_[k].fresh) f->outs[k][j] = Tensor();
    for (auto [j, t] : instrs_[k].into) f->outs[k][j] = Tensor();
  }
  Frame* expected = nullptr;
  if (hot_.compare_exchange_strong(expected, f.get(), std::memory_order_release)) {
    f.release();
    return;
  }
  std::lock_guard<std::mutex> lk(pool_mu_);
  if (pool_.size() < 8) pool_.push_back(std::move(f));
}

void CpuExecutor::trim() const {
  delete hot_.exchange(nullptr, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lk(pool_mu_);
  pool_.clear();
}

size_t CpuExecutor::pooled_frames() const {
  std::lock_guard<std::mutex> lk(pool_mu_);
  return pool_.size() + (hot_.load() != nullptr);
}

TensorList CpuExecutor::run(const TensorList& inputs, const TensorList& states) const {
  std::unique_ptr<Frame> f = acquire();
  struct Release {
    const CpuExecutor* ex;
    std::unique_ptr<Frame>& f;
    ~Release() { ex->release(std::move(f)); }
  } rel{this, f};
  // This call's random draws, reserved at once so concurrent calls never share a draw.
  uint64_t rng_seed = 0, rng_base = 0;
  if (graph_.rng_draws() > 0) {
    const auto& gen = default_generator();
    rng_seed = gen->initial_seed();
    rng_base = gen->reserve(static_cast<uint64_t>(graph_.rng_draws()));
  }
  const std::vector<int>& targets = program_->targets();
  thread_local std::vector<char> into_ok;  // targets written in place this call
  program_->writable_targets(inputs, states, into_ok);
  std::vector<Tensor>& s = f->slots;
  for (size_t i = 0; i < inputs.size(); ++i) s[graph_.inputs()[i]] = inputs[i];
  for (size_t i = 0; i < states.size(); ++i) s[graph_.states()[i]] = states[i];
  static const bool profile = std::getenv("LUCID_COMPILE_PROFILE") != nullptr;
  std::vector<std::pair<double, size_t>> prof;
  for (size_t k = 0; k < instrs_.size(); ++k) {
    const Instr& in = instrs_[k];
    if (in.static_view) continue;  // made with the frame
    const ir::Node& n = *in.node;
    TensorList& ins = f->ins[k];
    auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    struct ProfileEnd {
      bool on;
      std::vector<std::pair<double, size_t>>& v;
      size_t k;
      std::chrono::steady_clock::time_point t0;
      ~ProfileEnd() {
        if (on) v.push_back({std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), k});
      }
    } prof_end{profile, prof, k, t0};
    for (size_t j = 0; j < n.inputs.size(); ++j) ins[j] = n.inputs[j] < 0 ? Tensor() : s[n.inputs[j]];
    if (in.kind == Kind::View) {
      TensorList r = in.view(ins, n.attrs);
      for (size_t j = 0; j < n.outputs.size(); ++j) s[n.outputs[j]] = std::move(r[j]);
      continue;
    }
    TensorList& outs = f->outs[k];
    for (int j : in.fresh) {
      const ir::Value& v = graph_.value(n.outputs[j]);
      outs[j] = s[n.outputs[j]] = Tensor::empty(v.shape, v.dtype);
    }
    for (auto [j, t] : in.into) {
      if (into_ok[t]) {
        outs[j] = s[n.outputs[j]] = program_->fed(inputs, states, targets[t]);
      } else {
        const ir::Value& v = graph_.value(n.outputs[j]);
        outs[j] = s[n.outputs[j]] = Tensor::empty(v.shape, v.dtype);
      }
    }
    if (in.kind == Kind::Fused) {
      run_fused(*in.fused, ins, outs);
    } else if (in.random) {
      Attrs a = n.attrs;
      a.set("seed", static_cast<int64_t>(rng_seed)).set("offset", static_cast<int64_t>(rng_base + n.attrs.i("offset")));
      in.kernel(ins, outs, a);
    } else {
      in.kernel(ins, outs, n.attrs);
    }
  }
  auto t_assign = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  program_->apply_assigns(s, inputs, states);
  if (profile) {  // LUCID_COMPILE_PROFILE: the slowest instructions of this call, to stderr
    double total = 0;
    for (const auto& p : prof) total += p.first;
    const double assign_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_assign).count();
    std::sort(prof.rbegin(), prof.rend());
    std::fprintf(stderr, "[lucid.compile profile] %8.3f ms  %zu instructions, %8.3f ms  %zu final assigns\n", total,
                 prof.size(), assign_ms, program_->final_assigns().size());
    static const size_t n_show = std::max<long>(8, std::atol(std::getenv("LUCID_COMPILE_PROFILE")));
    for (size_t i = 0; i < std::min<size_t>(n_show, prof.size()); ++i)
      std::fprintf(stderr, "[lucid.compile profile] %8.3f ms  %s (instruction %zu)\n", prof[i].first,
                   op_name(instrs_[prof[i].second].node->op), prof[i].second);
  }
  return program_->outputs(s, inputs, states);
}

std::unique_ptr<rt::Executor> make_cpu_executor(std::shared_ptr<const Program> program) {
  return std::make_unique<CpuExecutor>(std::move(program));
}

}  // namespace

LUCID_REGISTER_EXECUTOR(CPU, make_cpu_executor);

}  // namespace lucid::cpu
