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
//
// The state cache: values computed from bound state and constants only (MemoryPlan::kCached,
// e.g. eval BatchNorm folded into a conv's weights and bias) are kept by the executor across
// calls and frames, and recomputed only when a bound tensor they read is no longer the one they
// were computed from: another storage or address or strides, a bumped version, or an external
// (NumPy/DLPack) view that lives or ended since (core/external_views.h). A bound tensor whose
// version can't be trusted (not lucid's own buffer, or a NumPy view of it alive) makes them be
// recomputed at every call, as without the cache.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "lucid/backends/cpu/compile/fused_ew.h"
#include "lucid/compile/runtime/executor.h"
#include "lucid/core/external_views.h"
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
  uint64_t state_cache_fills() const override { return cache_fills_.load(std::memory_order_relaxed); }

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
  // What one call's instructions share: its feeds, which targets it writes in place, its draws.
  struct Call {
    const TensorList& inputs;
    const TensorList& states;
    const std::vector<char>& into_ok;
    uint64_t rng_seed, rng_base;
  };
  // The bound tensor a cached value was computed from, as it was then.
  struct StateStamp {
    std::weak_ptr<Storage> storage;
    const Storage* raw = nullptr;
    const void* data = nullptr;
    Strides strides;
    uint32_t version = 0;
    ExternalViewCount views;
  };
  void step(size_t k, Frame& f, const Call& c) const;
  void fill_state_cache(Frame& f, const Call& c) const;
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
  bool has_cache_ = false;  // the program has state-cache instructions
  mutable std::mutex cache_mu_;
  mutable bool cache_valid_ = false;
  mutable std::vector<StateStamp> cache_stamps_;  // per Program::cache_reads()
  mutable std::vector<Tensor> cache_values_;      // per Program::cache_values()
  mutable std::atomic<uint64_t> cache_fills_{0};
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
    has_cache_ = has_cache_ || in.cached;
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
  {
    std::lock_guard<std::mutex> lk(cache_mu_);
    cache_valid_ = false;
    cache_values_.clear();
  }
  std::lock_guard<std::mutex> lk(pool_mu_);
  pool_.clear();
}

size_t CpuExecutor::pooled_frames() const {
  std::lock_guard<std::mutex> lk(pool_mu_);
  return pool_.size() + (hot_.load() != nullptr);
}

// Instruction k of this call: its inputs from the slots, fresh outputs allocated, outputs
// planned into a target set to that target (when writable this call), then the kernel, the view
// or the fused group.
void CpuExecutor::step(size_t k, Frame& f, const Call& c) const {
  const Instr& in = instrs_[k];
  const ir::Node& n = *in.node;
  std::vector<Tensor>& s = f.slots;
  TensorList& ins = f.ins[k];
  for (size_t j = 0; j < n.inputs.size(); ++j) ins[j] = n.inputs[j] < 0 ? Tensor() : s[n.inputs[j]];
  if (in.kind == Kind::View) {
    TensorList r = in.view(ins, n.attrs);
    for (size_t j = 0; j < n.outputs.size(); ++j) s[n.outputs[j]] = std::move(r[j]);
    return;
  }
  TensorList& outs = f.outs[k];
  for (int j : in.fresh) {
    const ir::Value& v = graph_.value(n.outputs[j]);
    outs[j] = s[n.outputs[j]] = Tensor::empty(v.shape, v.dtype);
  }
  for (auto [j, t] : in.into) {
    if (c.into_ok[t]) {
      outs[j] = s[n.outputs[j]] = program_->fed(c.inputs, c.states, program_->targets()[t]);
    } else {
      const ir::Value& v = graph_.value(n.outputs[j]);
      outs[j] = s[n.outputs[j]] = Tensor::empty(v.shape, v.dtype);
    }
  }
  if (in.kind == Kind::Fused) {
    run_fused(*in.fused, ins, outs);
  } else if (in.random) {
    Attrs a = n.attrs;
    a.set("seed", static_cast<int64_t>(c.rng_seed)).set("offset", static_cast<int64_t>(c.rng_base + n.attrs.i("offset")));
    in.kernel(ins, outs, a);
  } else {
    in.kernel(ins, outs, n.attrs);
  }
}

// Puts the state cache's values into the frame's slots: the kept ones when every bound tensor
// they read is as it was when they were computed, else computes them (one call at a time).
void CpuExecutor::fill_state_cache(Frame& f, const Call& c) const {
  const std::vector<int>& reads = program_->cache_reads();
  const std::vector<int>& values = program_->cache_values();
  std::lock_guard<std::mutex> lk(cache_mu_);
  bool valid = cache_valid_;
  for (size_t i = 0; valid && i < reads.size(); ++i) {
    const Tensor& t = program_->fed(c.inputs, c.states, reads[i]);
    const Storage& st = *t.impl()->storage;
    const StateStamp& was = cache_stamps_[i];
    valid = was.raw == &st && !was.storage.expired() && was.data == t.data_ptr() && was.strides == t.strides() &&
            was.version == st.version.load(std::memory_order_acquire) && was.views == external_views(&st) &&
            version_tracks_contents(st);
  }
  if (valid) {
    for (size_t j = 0; j < values.size(); ++j) f.slots[values[j]] = cache_values_[j];
    return;
  }
  // Stamped before computing: a write racing the computation shows as a changed version next call.
  bool trusted = true;
  cache_stamps_.resize(reads.size());
  for (size_t i = 0; i < reads.size(); ++i) {
    const Tensor& t = program_->fed(c.inputs, c.states, reads[i]);
    const std::shared_ptr<Storage>& st = t.impl()->storage;
    cache_stamps_[i] = {st, st.get(), t.data_ptr(), t.strides(), st->version.load(std::memory_order_acquire),
                        external_views(st.get())};
    trusted = trusted && version_tracks_contents(*st);
  }
  cache_valid_ = false;
  cache_fills_.fetch_add(1, std::memory_order_relaxed);
  for (size_t k = 0; k < instrs_.size(); ++k)
    if (instrs_[k].cached && !instrs_[k].static_view) step(k, f, c);
  cache_values_.resize(values.size());
  for (size_t j = 0; j < values.size(); ++j) cache_values_[j] = f.slots[values[j]];
  cache_valid_ = trusted;
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
  thread_local std::vector<char> into_ok;  // targets written in place this call
  program_->writable_targets(inputs, states, into_ok);
  const Call call{inputs, states, into_ok, rng_seed, rng_base};
  std::vector<Tensor>& s = f->slots;
  for (size_t i = 0; i < inputs.size(); ++i) s[graph_.inputs()[i]] = inputs[i];
  for (size_t i = 0; i < states.size(); ++i) s[graph_.states()[i]] = states[i];
  static const bool profile = std::getenv("LUCID_COMPILE_PROFILE") != nullptr;
  std::vector<std::pair<double, size_t>> prof;
  auto t_cache = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  if (has_cache_) fill_state_cache(*f, call);
  const double cache_ms =
      profile ? std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_cache).count() : 0.0;
  for (size_t k = 0; k < instrs_.size(); ++k) {
    const Instr& in = instrs_[k];
    if (in.static_view || in.cached) continue;  // made with the frame, or by fill_state_cache
    auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    step(k, *f, call);
    if (profile) prof.push_back({std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), k});
  }
  auto t_assign = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  program_->apply_assigns(s, inputs, states);
  if (profile) {  // LUCID_COMPILE_PROFILE: the slowest instructions of this call, to stderr
    double total = 0;
    for (const auto& p : prof) total += p.first;
    const double assign_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_assign).count();
    std::sort(prof.rbegin(), prof.rend());
    std::fprintf(stderr, "[lucid.compile profile] %8.3f ms  %zu instructions, %8.3f ms  %zu final assigns, %8.3f ms  state cache\n",
                 total, prof.size(), assign_ms, program_->final_assigns().size(), cache_ms);
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
