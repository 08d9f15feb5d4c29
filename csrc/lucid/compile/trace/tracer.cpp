#include "lucid/compile/trace/tracer.h"

#include "lucid/compile/runtime/executor.h"
#include "lucid/core/generator.h"
#include "lucid/core/mem_overlap.h"

namespace lucid {

Tracer::Tracer() {
  const auto& gen = default_generator();
  rng_seed_ = gen->initial_seed();
  rng_start_ = gen->offset();
}

// A random op drew from the default generator at an absolute offset: record it relative to the
// trace's first draw, with the seed left to the runtime (see Graph::rng_draws).
Attrs Tracer::random_attrs(const OpDef& def, const Attrs& attrs) {
  const auto& gen = default_generator();
  uint64_t off = static_cast<uint64_t>(attrs.i("offset"));
  if (static_cast<uint64_t>(attrs.i("seed")) != rng_seed_ || gen->initial_seed() != rng_seed_ || off < rng_start_ ||
      off >= gen->offset()) {
    fallback(str(def.api_name, ": a random op drawing from a generator other than lucid's default one (or the "
                               "default one was reseeded during the trace) is not compiled"));
    return attrs;
  }
  Attrs a = attrs;
  a.set("seed", int64_t{0}).set("offset", static_cast<int64_t>(off - rng_start_));
  return a;
}

void Tracer::note_storage(const Tensor& t) {
  if (t.defined() && !t.impl()->is_view) storage_owner_.emplace(t.impl()->storage.get(), t);
}

// A tensor the trace has not seen may still alias one it has: detach(), or an alias made by C++
// code without dispatch. It must read the traced value (not be frozen as bound state).
int Tracer::alias_value(const Tensor& t) {
  auto so = storage_owner_.find(t.impl()->storage.get());
  if (so == storage_owner_.end()) return -1;
  const Tensor& o = so->second;
  auto ov = ids_.find(o.impl());
  if (ov == ids_.end() || o.dtype() != t.dtype()) return -1;
  if (t.shape() == o.shape() && t.strides() == o.strides() && t.offset() == o.offset()) return ov->second;
  if (!o.is_contiguous()) return -1;
  Attrs a{{"shape", t.shape()}, {"strides", t.strides()}, {"offset", t.offset() - o.offset()}};
  return graph_.add_node(OpId::AsStrided, {ov->second}, std::move(a), {meta_of(t)})[0];
}

// A trace that touches a tensor on a device no backend of this build runs compiled programs on
// (no registered executor) falls back to eager, saying so; the graph's one device is checked
// when it is compiled (ir::graph_device).
static std::string no_executor(const TensorList& ts) {
  for (const Tensor& t : ts)
    if (t.defined() && !rt::executor_factory(t.device().type))
      return str("lucid.compile has no executor for ", t.device().str(), " in this build; the function runs eagerly "
                 "on the device");
  return "";
}

int Tracer::add_input(const Tensor& t) {
  if (std::string why = no_executor({t}); !why.empty()) fallback(why);
  int id = graph_.add_input(meta_of(t));
  ids_[t.impl()] = id;
  note_storage(t);
  input_of_[t.impl()] = id;
  keep_alive_.push_back(t);
  fed_.emplace_back(t, id);
  return id;
}

const TensorImpl* Tracer::root_of(const Tensor& t) {
  return t.impl()->is_view && t.impl()->view_base ? t.impl()->view_base.get() : nullptr;
}

int Tracer::add_view_of_root(const Tensor& t, int root_value) {
  const TensorImpl* root = root_of(t);
  Attrs a{{"shape", t.shape()}, {"strides", t.strides()}, {"offset", t.offset() - root->offset}};
  int id = graph_.add_node(OpId::AsStrided, {root_value}, std::move(a), {meta_of(t)})[0];
  ids_[t.impl()] = id;
  view_src_[t.impl()] = root_value;
  return id;
}

int Tracer::value_of(const Tensor& t) {
  if (!t.defined()) return -1;
  auto it = ids_.find(t.impl());
  const TensorImpl* root = root_of(t);
  if (it != ids_.end()) {
    // A view whose base was written after the view was taken reads the new content.
    if (root) {
      auto vs = view_src_.find(t.impl());
      auto rb = ids_.find(root);
      if (vs != view_src_.end() && rb != ids_.end() && rb->second != vs->second) return add_view_of_root(t, rb->second);
    }
    return it->second;
  }
  keep_alive_.push_back(t);
  if (root && ids_.count(root) && root->dtype == t.dtype()) return add_view_of_root(t, ids_[root]);
  if (!t.impl()->is_wrapped_number) {
    int a = alias_value(t);
    if (a >= 0) {
      ids_[t.impl()] = a;
      return a;
    }
  }
  int id;
  if (t.impl()->is_wrapped_number) {
    id = graph_.add_const(t);
  } else {
    id = graph_.add_state(meta_of(t));
    state_of_[t.impl()] = id;
    state_feeds_.push_back(t);
    fed_.emplace_back(t, id);
    note_storage(t);
  }
  ids_[t.impl()] = id;
  return id;
}

void Tracer::on_op(OpId id, const TensorList& inputs, const Attrs& attrs, const TensorList& outputs) {
  const OpDef& def = op_def(id);
  if (std::string why = no_executor(inputs).empty() ? no_executor(outputs) : no_executor(inputs); !why.empty()) fallback(why);
  if (def.writes_inputs)
    fallback(str(def.api_name, " writes its inputs in place as one multi-tensor step, which a trace cannot record; "
                 "the function runs eagerly"));
  std::vector<int> ins;
  ins.reserve(inputs.size());
  for (const Tensor& t : inputs) ins.push_back(value_of(t));
  std::vector<TensorMeta> metas;
  for (const Tensor& o : outputs) metas.push_back(meta_of(o));
  std::vector<int> outs =
      graph_.add_node(id, std::move(ins), def.lowering == Lowering::Random ? random_attrs(def, attrs) : attrs, metas);
  for (size_t k = 0; k < outputs.size(); ++k) {
    ids_[outputs[k].impl()] = outs[k];
    keep_alive_.push_back(outputs[k]);
    note_storage(outputs[k]);
    // A view remembers which value of its root it was taken from (see value_of).
    if (def.view)
      if (const TensorImpl* root = root_of(outputs[k]))
        if (auto rb = ids_.find(root); rb != ids_.end()) view_src_[outputs[k].impl()] = rb->second;
  }
}

void Tracer::record_write(const TensorImpl* target, int value) {
  ids_[target] = value;
  // A write to bound state or to an argument is a side effect of the graph: one assign per
  // write, in order; the runtime applies them in order, so the last one wins.
  if (auto it = state_of_.find(target); it != state_of_.end()) graph_.add_assign(it->second, value);
  else if (auto in = input_of_.find(target); in != input_of_.end()) graph_.add_assign(in->second, value);
}

void Tracer::on_inplace(OpId id, const TensorList& dsts, const TensorList& inputs, const Attrs& attrs,
                        const Tensor& result) {
  const OpDef& def = op_def(id);
  if (std::string why = no_executor(dsts).empty() ? no_executor(inputs) : no_executor(dsts); !why.empty()) fallback(why);
  std::vector<int> ins;
  for (const Tensor& t : inputs) ins.push_back(value_of(t));
  for (const Tensor& dst : dsts) value_of(dst);  // binds dst (as state) if the trace has not seen it yet
  // The op's own result types; a narrower destination gets an explicit cast, as eager does.
  std::vector<TensorMeta> metas = def.infer(inputs, attrs), outs;
  for (size_t k = 0; k < dsts.size(); ++k) outs.push_back({dsts[k].shape(), metas[k].dtype, dsts[k].device()});
  std::vector<int> rs =
      graph_.add_node(id, std::move(ins), def.lowering == Lowering::Random ? random_attrs(def, attrs) : attrs, outs);
  if (result.defined()) {  // autograd's copy of the result (a saved output of its node) is this value
    ids_[result.impl()] = rs[0];
    keep_alive_.push_back(result);
    note_storage(result);  // saved outputs are detached aliases of it
  }
  for (size_t k = 0; k < dsts.size(); ++k) write_into(def, dsts[k], rs[k], metas[k].dtype);
}

void Tracer::write_into(const OpDef& def, const Tensor& dst, int r, DType rdt) {
  if (rdt != dst.dtype()) r = graph_.add_node(OpId::Copy, {r}, Attrs{{"dtype", dst.dtype()}}, {meta_of(dst)})[0];

  // An argument or bound tensor is written as itself, even when it is a view (of a base the
  // trace may never see): its own memory is what changes. Another fed tensor overlapping it is
  // caught by check_written_aliases.
  const TensorImpl* root = root_of(dst);
  if (!root || input_of_.count(dst.impl()) || state_of_.count(dst.impl())) {
    record_write(dst.impl(), r);
    return;
  }
  // A write through a view: the root's new content is as_strided_scatter(root, r) (PyTorch's
  // CopySlices), and the view reads from the new root.
  auto rb = ids_.find(root);
  if (rb == ids_.end()) {
    fallback(str(def.api_name, "_: in-place write through a view whose base the trace has not seen"));
    ids_[dst.impl()] = r;
    return;
  }
  const ir::Value& rv = graph_.value(rb->second);
  Tensor root_t(dst.impl()->view_base);
  if (!root_t.is_contiguous() || rv.dtype != dst.dtype()) {
    fallback(str(def.api_name, "_: in-place write through a view of a non-contiguous base"));
    ids_[dst.impl()] = r;
    return;
  }
  Attrs a{{"shape", dst.shape()}, {"strides", dst.strides()}, {"offset", dst.offset() - root->offset}};
  int root_new = graph_.add_node(OpId::AsStridedScatter, {rb->second, r}, a, {rv.meta()})[0];
  record_write(root, root_new);
  add_view_of_root(dst, root_new);
}

namespace {
HostReadLocator& host_read_locator() {
  static HostReadLocator f;
  return f;
}
}  // namespace

void set_host_read_locator(HostReadLocator f) { host_read_locator() = std::move(f); }

void Tracer::on_host_read(const Tensor& t, const char* what) {
  // Any tensor's value read on the host during the trace may steer Python control flow, and a
  // bound tensor's value may change between calls: either way the graph would freeze it. Only
  // the first reason is kept, so only the first read is located.
  if (t.impl()->is_wrapped_number || !ok()) return;
  std::string where = host_read_locator() ? host_read_locator()() : std::string();
  fallback(str(what, "() read a tensor's value on the host during the trace (Python control flow may depend on data)",
               where.empty() ? "" : ", at ", where));
}

void Tracer::on_untraced_callback(const std::string& what) {
  // Its side effects (and any effect on values it computed from Python state) would happen once,
  // at the trace, and never on cached calls.
  fallback(str(what, " ran during the trace: Python code an executable can't replay on cached calls"));
}

std::string Tracer::rebind(const Tensor& old, const Tensor& now) {
  if (old.shape() != now.shape() || old.dtype() != now.dtype())
    return str("it replaces a tensor of shape ", shape_str(old.shape()), " and dtype ", dtype_name(old.dtype()),
               " with one of shape ", shape_str(now.shape()), " and dtype ", dtype_name(now.dtype()));
  auto nv = ids_.find(now.impl());
  if (nv == ids_.end() || graph_.value(nv->second).kind != ir::ValueKind::Node)
    return "the new tensor is not computed by the traced ops (an argument, a bound tensor or a constant)";
  for (const auto& [t, id] : fed_)
    if (t.same_storage(now)) return "the new tensor shares memory with an argument or a bound tensor";
  if (input_of_.count(old.impl())) return "the old tensor is an argument of the call";
  auto st = state_of_.find(old.impl());
  if (st == state_of_.end()) {  // not read by the trace: bind it now (its value is never used)
    value_of(old);
    st = state_of_.find(old.impl());
    if (st == state_of_.end()) return "the old tensor is not a tensor the trace can bind";
  }
  graph_.add_assign(st->second, nv->second);
  return "";
}

void Tracer::check_written_aliases() {
  for (const ir::Assign& a : graph_.assigns())
    for (const auto& [t, id] : fed_) {
      if (id != a.state) continue;
      for (const auto& [u, uid] : fed_)
        if (u.impl() != t.impl() && spans_intersect(t, u)) {
          const char* kt = graph_.value(id).kind == ir::ValueKind::Input ? "an argument" : "a bound tensor";
          const char* ku = graph_.value(uid).kind == ir::ValueKind::Input ? "an argument" : "a bound tensor";
          fallback(str("an in-place write to ", kt, " of shape ", shape_str(t.shape()), " whose memory overlaps ", ku,
                       " of shape ", shape_str(u.shape()), " (a view of it): the executable would read stale data"));
          return;
        }
    }
}

void Tracer::set_outputs(const TensorList& outs) {
  check_written_aliases();
  const auto& gen = default_generator();
  if (gen->initial_seed() != rng_seed_ || gen->offset() < rng_start_)
    fallback("the default generator was reseeded during the trace (lucid.manual_seed inside the compiled function)");
  else
    graph_.set_rng_draws(static_cast<int64_t>(gen->offset() - rng_start_));
  std::vector<int> ids;
  for (const Tensor& t : outs) ids.push_back(value_of(t));
  graph_.set_outputs(ids);
}

}  // namespace lucid
