// Executable runtime (see executable.h).
#include "lucid/compile/runtime/executable.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "lucid/compile/runtime/fused_ew.h"
#include "lucid/core/generator.h"
#include "lucid/dispatch/dispatch.h"

namespace lucid::rt {

using ir::MemoryPlan;
using ir::ValueKind;

struct Executable::Frame {
  std::shared_ptr<Storage> arena;
  std::vector<Tensor> slots;   // one per value id
  std::vector<TensorList> ins, outs;  // per instruction
  std::vector<int> transient;  // slots refilled per call (inputs, states, fresh, views)
};

ir::MemoryPlan eager_plan(const ir::Graph& g) {
  MemoryPlan p;
  p.offset.assign(g.values().size(), MemoryPlan::kFresh);
  for (int id : g.inputs()) p.offset[id] = MemoryPlan::kExternal;
  for (int id : g.states()) p.offset[id] = MemoryPlan::kExternal;
  for (int id : g.consts()) p.offset[id] = MemoryPlan::kExternal;
  for (const ir::Node& n : g.nodes())
    if (!n.body && op_def(n.op).view)
      for (int o : n.outputs) p.offset[o] = MemoryPlan::kAlias;
  return p;
}

Executable::Executable(ir::Graph g, ir::MemoryPlan plan) : graph_(std::move(g)), plan_(std::move(plan)) {
  LUCID_CHECK(plan_.offset.size() == graph_.values().size(), Error, "Executable: the memory plan does not match the graph");
  for (const ir::Node& n : graph_.nodes()) {
    Instr in{Kind::Kernel, &n};
    const OpDef& def = op_def(n.op);
    if (n.body) {
      in.kind = Kind::Fused;
      in.fused = std::make_shared<FusedProgram>(*n.body, wrapped_inputs(graph_, n));
    } else if (def.view) {
      in.kind = Kind::View;
      in.view = def.view;
      in.static_view = true;  // a candidate; decided by confirm_static_views
    } else {
      in.kernel = def.kernel(DeviceType::CPU);
      LUCID_CHECK(in.kernel, NotImplementedError, "lucid.compile: ", def.api_name, " has no CPU kernel");
      in.random = def.lowering == Lowering::Random;
    }
    if (in.kind != Kind::View)
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        int64_t off = plan_.offset[n.outputs[k]];
        LUCID_CHECK(off >= 0 || off == MemoryPlan::kFresh || off == MemoryPlan::kTarget, Error, "Executable: ",
                    def.name, " output planned as neither arena, fresh nor into its target");
        if (off == MemoryPlan::kFresh) in.fresh.push_back(static_cast<int>(k));
        if (off == MemoryPlan::kTarget) {
          in.into.push_back({static_cast<int>(k), static_cast<int>(targets_.size())});
          targets_.push_back(plan_.target.at(n.outputs[k]));
        }
      }
    instrs_.push_back(std::move(in));
  }
  confirm_static_views();
  // Only the last write to each target matters (the runtime writes after all nodes ran).
  std::vector<bool> seen(graph_.values().size(), false);
  for (auto it = graph_.assigns().rbegin(); it != graph_.assigns().rend(); ++it)
    if (!seen[it->state]) {
      seen[it->state] = true;
      final_assigns_.insert(final_assigns_.begin(), *it);
    }
  for (int id : graph_.outputs()) {
    int target = -1;
    for (const ir::Assign& a : final_assigns_)
      if (a.value == id) target = a.state;
    output_target_.push_back(target);
  }
}

Executable::~Executable() { delete hot_.exchange(nullptr); }

namespace {
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
}  // namespace

// Values that are the same tensor at every call of a frame: arena slots, constants, and views of
// those, made once per frame. But a view function may copy (Reshape of a layout it can't view):
// such a result holds the data of the moment it was made, so it must be made at every call. Runs
// the candidate views once over a scratch arena and keeps static only those whose inputs are
// fixed and whose results alias their base.
void Executable::confirm_static_views() {
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

std::unique_ptr<Executable::Frame> Executable::make_frame() const {
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

std::unique_ptr<Executable::Frame> Executable::acquire() const {
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

void Executable::release(std::unique_ptr<Frame> f) const {
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

void Executable::trim() const {
  delete hot_.exchange(nullptr, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lk(pool_mu_);
  pool_.clear();
}

size_t Executable::pooled_frames() const {
  std::lock_guard<std::mutex> lk(pool_mu_);
  return pool_.size() + (hot_.load() != nullptr);
}

void Executable::check_feeds(const TensorList& inputs, const TensorList& states) const {
  LUCID_CHECK(inputs.size() == graph_.inputs().size() && states.size() == graph_.states().size(), ValueError,
              "lucid.compile: executable expects ", graph_.inputs().size(), " tensor inputs and ",
              graph_.states().size(), " bound tensors, got ", inputs.size(), " and ", states.size());
  auto check = [](const Tensor& t, const ir::Value& v, const char* what, size_t i) {
    LUCID_CHECK(t.defined() && t.shape() == v.shape && t.dtype() == v.dtype && t.device() == v.device, ValueError,
                "lucid.compile: ", what, " ", i, " expected ", dtype_name(v.dtype), shape_str(v.shape), " on ",
                v.device.str(), ", got ",
                t.defined() ? str(dtype_name(t.dtype()), shape_str(t.shape()), " on ", t.device().str()) : std::string("None"));
  };
  for (size_t i = 0; i < inputs.size(); ++i) check(inputs[i], graph_.value(graph_.inputs()[i]), "input", i);
  for (size_t i = 0; i < states.size(); ++i) check(states[i], graph_.value(graph_.states()[i]), "bound tensor", i);
}

TensorList Executable::run(const TensorList& inputs, const TensorList& states) const {
  check_feeds(inputs, states);
  std::unique_ptr<Frame> f = acquire();
  struct Release {
    const Executable* ex;
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
  // Targets written in place this call: contiguous, and sharing memory with no other fed tensor
  // (two fed tensors over one buffer would see each other's writes mid-call).
  thread_local std::vector<char> into_ok;
  into_ok.assign(targets_.size(), 0);
  if (!targets_.empty()) {
    thread_local std::vector<std::pair<const char*, const char*>> spans;  // fed storages' byte ranges
    spans.clear();
    for (const TensorList* feeds : {&inputs, &states})
      for (const Tensor& t : *feeds) {
        const char* lo = static_cast<const char*>(t.impl()->storage->data);
        spans.push_back({lo, lo + std::max<size_t>(t.impl()->storage->nbytes, 1)});
      }
    std::sort(spans.begin(), spans.end());
    auto shared = [&](const Tensor& t) {
      const char* lo = static_cast<const char*>(t.impl()->storage->data);
      auto it = std::lower_bound(spans.begin(), spans.end(), std::make_pair(lo, lo));
      // t's own span sits at `it` (its end is at least lo + 1); a neighbour overlapping it shares memory.
      const char* hi = it->second;
      bool prev = it != spans.begin() && std::prev(it)->second > lo;
      bool next = std::next(it) != spans.end() && std::next(it)->first < hi;
      return prev || next;
    };
    for (size_t i = 0; i < targets_.size(); ++i) {
      const ir::Value& tv = graph_.value(targets_[i]);
      const Tensor& t = tv.kind == ValueKind::State ? states[tv.slot] : inputs[tv.slot];
      into_ok[i] = t.is_contiguous() && !shared(t);
    }
  }
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
      const ir::Value& tv = graph_.value(targets_[t]);
      if (into_ok[t]) {
        outs[j] = s[n.outputs[j]] = tv.kind == ValueKind::State ? states[tv.slot] : inputs[tv.slot];
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
  for (const ir::Assign& a : final_assigns_) {
    const ir::Value& tv = graph_.value(a.state);
    const Tensor& dst = tv.kind == ValueKind::State ? states[tv.slot] : inputs[tv.slot];
    Tensor src = s[a.value];
    if (src.impl() == dst.impl()) {  // unchanged, or written in place by its node
      if (plan_.offset[a.value] == MemoryPlan::kTarget) dst.bump_version();
      continue;
    }
    if (src.impl()->storage == dst.impl()->storage) {  // overlapping: copy out first
      Tensor c = Tensor::empty(src.shape(), src.dtype());
      copy_values(c, src);
      src = c;
    }
    copy_values(dst, src);
    dst.bump_version();
  }
  if (profile) {  // LUCID_COMPILE_PROFILE: the slowest instructions of this call, to stderr
    double total = 0;
    for (const auto& p : prof) total += p.first;
    const double assign_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_assign).count();
    std::sort(prof.rbegin(), prof.rend());
    std::fprintf(stderr, "[lucid.compile profile] %8.3f ms  %zu instructions, %8.3f ms  %zu final assigns\n", total,
                 prof.size(), assign_ms, final_assigns_.size());
    static const size_t n_show = std::max<long>(8, std::atol(std::getenv("LUCID_COMPILE_PROFILE")));
    for (size_t i = 0; i < std::min<size_t>(n_show, prof.size()); ++i)
      std::fprintf(stderr, "[lucid.compile profile] %8.3f ms  %s (instruction %zu)\n", prof[i].first,
                   op_name(instrs_[prof[i].second].node->op), prof[i].second);
  }
  TensorList out;
  out.reserve(graph_.outputs().size());
  for (size_t k = 0; k < graph_.outputs().size(); ++k) {
    // An output that is the final value written into an argument or bound tensor is that tensor
    // itself (as eager returns it), not a copy of its new content.
    const int id = graph_.outputs()[k];
    const Tensor* target = nullptr;
    if (int tid = output_target_[k]; tid >= 0) {
      const ir::Value& tv = graph_.value(tid);
      target = tv.kind == ValueKind::State ? &states[tv.slot] : &inputs[tv.slot];
    }
    const Tensor& t = target ? *target : s[id];
    if (!target && graph_.value(id).kind == ValueKind::Const) {  // never hand out the graph's own constant
      Tensor c = Tensor::empty(t.shape(), t.dtype());
      copy_values(c, t);
      out.push_back(std::move(c));
    } else {
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace lucid::rt
