// The device-neutral executor body: frames, static views, host scalars, the state cache and the
// call (see frame_executor.h).
#include "lucid/compile/runtime/frame_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "lucid/core/generator.h"
#include "lucid/dispatch/dispatch.h"

namespace lucid::rt {

using ir::MemoryPlan;
using ir::ValueKind;

namespace {
// A host scalar's value on `device` (dispatch's device_inputs, for one tensor).
Tensor on_device(const Tensor& t, const Device& device) {
  Tensor d = Tensor::empty(t.shape(), t.dtype(), device);
  copy_values(d, t);
  d.impl()->is_wrapped_number = t.impl()->is_wrapped_number;
  return d;
}
}  // namespace

FrameExecutor::FrameExecutor(std::shared_ptr<const Program> program, FusedRunner fused)
    : program_(std::move(program)), fused_(std::move(fused)), graph_(program_->graph()), plan_(program_->plan()),
      device_(program_->device()) {
  for (const Instruction& pi : program_->instructions()) {
    Instr in;
    static_cast<Instruction&>(in) = pi;
    const ir::Node& n = *in.node;
    const OpDef& def = op_def(n.op);
    in.device = n.outputs.empty() ? device_ : graph_.value(n.outputs[0]).device;
    // A copy between devices runs on the non-CPU side's kernel, which knows both memories (dispatch).
    if (def.device_transfer && in.device.is_cpu() && !n.inputs.empty() && n.inputs[0] >= 0)
      in.device = graph_.value(n.inputs[0]).device;
    if (in.kind == Kind::Fused) {
      LUCID_CHECK(fused_.build, NotImplementedError, "lucid.compile: the ", device_.str(),
                  " executor runs no FusedElementwise groups (its backend registered no grouping rule)");
      in.fused = fused_.build(fused_.context.get(), graph_, n);
    } else if (in.kind == Kind::View) {
      in.view = def.view;
      in.static_view = true;  // a candidate; decided by confirm_static_views
    } else {
      in.kernel = def.kernel(in.device.type);
      LUCID_CHECK(in.kernel, NotImplementedError, "lucid.compile: ", def.api_name, " has no kernel on ", in.device.str());
      // Host scalars feeding a device kernel outside the functor table go to the device first.
      if (!in.device.is_cpu() && def.ew_dtypes == 0 && !def.device_transfer)
        for (size_t j = 0; j < n.inputs.size(); ++j) {
          if (n.inputs[j] < 0 || !graph_.value(n.inputs[j]).device.is_cpu()) continue;
          const ir::Value& v = graph_.value(n.inputs[j]);
          if (v.kind == ValueKind::Const) in.uploaded.push_back({static_cast<int>(j), on_device(graph_.const_data(v.slot), in.device)});
          else in.upload.push_back(static_cast<int>(j));
        }
    }
    if (in.kind != Kind::View)
      for (size_t j = 0; j < n.outputs.size(); ++j)
        if (plan_.offset[n.outputs[j]] >= 0 && !in_arena(n.outputs[j])) in.host_fresh.push_back(static_cast<int>(j));
    has_cache_ = has_cache_ || in.cached;
    instrs_.push_back(std::move(in));
  }
  confirm_static_views();
}

FrameExecutor::~FrameExecutor() { delete hot_.exchange(nullptr); }

bool FrameExecutor::in_arena(size_t id) const {
  return plan_.offset[id] >= 0 && graph_.value(static_cast<int>(id)).device == device_;
}

// A plan may place zero-byte values (a batch of 0) at offset 0 of an arena of 0 bytes; they still
// need a valid base pointer, as Tensor::empty gives eager's empty tensors, so the arena exists
// whenever any value is planned into it.
std::shared_ptr<Storage> FrameExecutor::make_arena() const {
  bool used = plan_.arena_bytes > 0;
  for (size_t id = 0; id < plan_.offset.size(); ++id) used = used || in_arena(id);
  return used ? Storage::allocate(static_cast<size_t>(plan_.arena_bytes), device_) : nullptr;
}

// The contiguous tensor of value id at its planned offset of an arena.
Tensor FrameExecutor::arena_slot(const std::shared_ptr<Storage>& arena, size_t id) const {
  const ir::Value& v = graph_.value(static_cast<int>(id));
  auto impl = std::make_shared<TensorImpl>();
  size_t nbytes = static_cast<size_t>(numel_of(v.shape)) * itemsize(v.dtype);
  impl->storage = Storage::wrap(static_cast<char*>(arena->data) + plan_.offset[id], nbytes, arena);
  impl->storage->device = device_;
  impl->shape = v.shape;
  impl->strides = contiguous_strides(v.shape);
  impl->dtype = v.dtype;
  return Tensor(std::move(impl));
}

// Values that are the same tensor at every call of a frame: arena slots, constants, and views of
// those, made once per frame. But a view function may copy (Reshape of a layout it can't view):
// such a result holds the data of the moment it was made, so it must be made at every call. Runs
// the candidate views once over a scratch arena and keeps static only those whose inputs are
// fixed and whose results alias their base.
void FrameExecutor::confirm_static_views() {
  fixed_.assign(graph_.values().size(), 0);
  std::vector<Tensor> slot(graph_.values().size());
  std::shared_ptr<Storage> arena = make_arena();
  for (size_t id = 0; id < slot.size(); ++id) {
    const ir::Value& v = graph_.value(static_cast<int>(id));
    if (in_arena(id)) {
      slot[id] = arena_slot(arena, id);
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

std::unique_ptr<FrameExecutor::Frame> FrameExecutor::make_frame() const {
  std::unique_ptr<Frame> f = new_frame();
  const auto& vals = graph_.values();
  f->slots.resize(vals.size());
  f->arena = make_arena();
  for (size_t id = 0; id < vals.size(); ++id) {
    const ir::Value& v = vals[id];
    if (in_arena(id)) {
      f->slots[id] = arena_slot(f->arena, id);
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

std::unique_ptr<FrameExecutor::Frame> FrameExecutor::acquire() const {
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

void FrameExecutor::release(std::unique_ptr<Frame> f) const {
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

void FrameExecutor::trim() const {
  delete hot_.exchange(nullptr, std::memory_order_acq_rel);
  {
    std::lock_guard<std::mutex> lk(cache_mu_);
    cache_valid_ = false;
    cache_values_.clear();
  }
  std::lock_guard<std::mutex> lk(pool_mu_);
  pool_.clear();
}

size_t FrameExecutor::pooled_frames() const {
  std::lock_guard<std::mutex> lk(pool_mu_);
  return pool_.size() + (hot_.load() != nullptr);
}

Tensor FrameExecutor::upload(int, const Tensor& host, const Device& device) const { return on_device(host, device); }

void FrameExecutor::step(size_t k, Frame& f, const Call& c) const {
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
  for (const auto& [j, t] : in.uploaded) ins[j] = t;
  for (int j : in.upload) ins[j] = upload(n.inputs[j], ins[j], in.device);
  TensorList& outs = f.outs[k];
  for (int j : in.fresh) {
    const ir::Value& v = graph_.value(n.outputs[j]);
    outs[j] = s[n.outputs[j]] = Tensor::empty(v.shape, v.dtype, v.device);
  }
  for (int j : in.host_fresh) {
    const ir::Value& v = graph_.value(n.outputs[j]);
    outs[j] = s[n.outputs[j]] = Tensor::empty(v.shape, v.dtype, v.device);
  }
  for (auto [j, t] : in.into) {
    if (c.into_ok[t]) {
      outs[j] = s[n.outputs[j]] = program_->fed(c.inputs, c.states, program_->targets()[t]);
    } else {
      const ir::Value& v = graph_.value(n.outputs[j]);
      outs[j] = s[n.outputs[j]] = Tensor::empty(v.shape, v.dtype, v.device);
    }
  }
  if (in.kind == Kind::Fused) {
    fused_.run(in.fused.get(), ins, outs);
  } else if (in.random) {
    Attrs a = n.attrs;
    a.set("seed", static_cast<int64_t>(c.rng_seed)).set("offset", static_cast<int64_t>(c.rng_base + n.attrs.i("offset")));
    in.kernel(ins, outs, a);
  } else {
    in.kernel(ins, outs, n.attrs);
  }
}

void FrameExecutor::execute(Frame& f, const Call& c) const {
  for (size_t k = 0; k < instrs_.size(); ++k)
    if (!instrs_[k].static_view && !instrs_[k].cached) step(k, f, c);  // made with the frame, or by fill_state_cache
}

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
}  // namespace

// Puts the state cache's values into the frame's slots: the kept ones when every bound tensor
// they read is as it was when they were computed, else computes them (one call at a time).
void FrameExecutor::fill_state_cache(Frame& f, const Call& c) const {
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

TensorList FrameExecutor::run(const TensorList& inputs, const TensorList& states) const {
  std::unique_ptr<Frame> f = acquire();
  struct Release {
    const FrameExecutor* ex;
    std::unique_ptr<Frame>& f;
    ~Release() {
      ex->frame_released(*f);
      ex->release(std::move(f));
    }
  } rel{this, f};
  frame_acquired(*f);
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
  static const char* profile = std::getenv("LUCID_COMPILE_PROFILE");
  if (!profile) {
    if (has_cache_) fill_state_cache(*f, call);
    execute(*f, call);
    program_->apply_assigns(s, inputs, states);
    return program_->outputs(s, inputs, states);
  }
  // LUCID_COMPILE_PROFILE: this call's slowest instructions, to stderr (the plain loop, timed).
  auto t = Clock::now();
  if (has_cache_) fill_state_cache(*f, call);
  const double cache_ms = ms_since(t);
  std::vector<std::pair<double, size_t>> prof;
  for (size_t k = 0; k < instrs_.size(); ++k) {
    if (instrs_[k].static_view || instrs_[k].cached) continue;
    t = Clock::now();
    step(k, *f, call);
    prof.push_back({ms_since(t), k});
  }
  t = Clock::now();
  program_->apply_assigns(s, inputs, states);
  const double assign_ms = ms_since(t);
  double total = 0;
  for (const auto& p : prof) total += p.first;
  std::sort(prof.rbegin(), prof.rend());
  std::fprintf(stderr, "[lucid.compile profile] %8.3f ms  %zu instructions, %8.3f ms  %zu final assigns, %8.3f ms  state cache\n",
               total, prof.size(), assign_ms, program_->final_assigns().size(), cache_ms);
  const size_t n_show = static_cast<size_t>(std::max<long>(8, std::atol(profile)));
  for (size_t i = 0; i < std::min(n_show, prof.size()); ++i)
    std::fprintf(stderr, "[lucid.compile profile] %8.3f ms  %s (instruction %zu)\n", prof[i].first,
                 op_name(instrs_[prof[i].second].node->op), prof[i].second);
  return program_->outputs(s, inputs, states);
}

}  // namespace lucid::rt
