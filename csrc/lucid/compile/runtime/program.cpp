// The device-neutral program of a compiled signature (see program.h).
#include "lucid/compile/runtime/program.h"

#include "lucid/dispatch/dispatch.h"

#include <algorithm>


namespace lucid::rt {

using ir::MemoryPlan;
using ir::ValueKind;

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

Program::Program(ir::Graph g, ir::MemoryPlan plan) : graph_(std::move(g)), plan_(std::move(plan)) {
  LUCID_CHECK(plan_.offset.size() == graph_.values().size(), Error, "Executable: the memory plan does not match the graph");
  device_ = ir::graph_device(graph_);
  for (const ir::Node& n : graph_.nodes()) {
    Instruction in{Instruction::Kind::Kernel, &n};
    const OpDef& def = op_def(n.op);
    if (n.body) {
      in.kind = Instruction::Kind::Fused;
    } else if (def.view) {
      in.kind = Instruction::Kind::View;
    } else {
      in.random = def.lowering == Lowering::Random;
    }
    if (in.kind != Instruction::Kind::View)
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        int64_t off = plan_.offset[n.outputs[k]];
        LUCID_CHECK(off >= 0 || off == MemoryPlan::kFresh || off == MemoryPlan::kTarget || off == MemoryPlan::kCached,
                    Error, "Executable: ", def.name, " output planned as neither arena, fresh, cached nor into its target");
        in.cached = off == MemoryPlan::kCached;
        if (off == MemoryPlan::kFresh || off == MemoryPlan::kCached) in.fresh.push_back(static_cast<int>(k));
        if (off == MemoryPlan::kTarget) {
          in.into.push_back({static_cast<int>(k), static_cast<int>(targets_.size())});
          targets_.push_back(plan_.target.at(n.outputs[k]));
        }
      }
    instrs_.push_back(std::move(in));
  }
  // The state cache: its kernels are the kCached nodes, its views those of state_computed_nodes
  // (a view of a state or of a cached value that a cached kernel or the rest of the program reads).
  std::vector<char> cached_value(graph_.values().size(), 0);
  if (std::any_of(plan_.offset.begin(), plan_.offset.end(), [](int64_t o) { return o == MemoryPlan::kCached; })) {
    std::vector<char> sc = ir::state_computed_nodes(graph_);
    for (size_t k = 0; k < instrs_.size(); ++k) {
      Instruction& in = instrs_[k];
      if (in.kind == Instruction::Kind::View) in.cached = sc[k];
      if (in.cached)
        for (int o : in.node->outputs) cached_value[o] = 1;
    }
  }
  std::vector<char> listed(graph_.values().size(), 0);
  for (const Instruction& in : instrs_)
    for (int i : in.node->inputs) {
      if (i < 0 || listed[i]) continue;
      if (in.cached && graph_.value(i).kind == ValueKind::State) cache_reads_.push_back(i), listed[i] = 1;
      if (!in.cached && cached_value[i]) cache_values_.push_back(i), listed[i] = 1;
    }
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

void Program::check_feeds(const TensorList& inputs, const TensorList& states) const {
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

void Program::writable_targets(const TensorList& inputs, const TensorList& states, std::vector<char>& into_ok) const {
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
      const Tensor& t = fed(inputs, states, targets_[i]);
      into_ok[i] = t.is_contiguous() && !shared(t);
    }
  }
}

void Program::apply_assigns(const std::vector<Tensor>& s, const TensorList& inputs, const TensorList& states) const {
  for (const ir::Assign& a : final_assigns_) {
    const Tensor& dst = fed(inputs, states, a.state);
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
}

TensorList Program::outputs(const std::vector<Tensor>& s, const TensorList& inputs, const TensorList& states) const {
  TensorList out;
  out.reserve(graph_.outputs().size());
  for (size_t k = 0; k < graph_.outputs().size(); ++k) {
    // An output that is the final value written into an argument or bound tensor is that tensor
    // itself (as eager returns it), not a copy of its new content.
    const int id = graph_.outputs()[k];
    const Tensor* target = nullptr;
    if (int tid = output_target_[k]; tid >= 0) target = &fed(inputs, states, tid);
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
