#include "lucid/compile/trace/tracer.h"

namespace lucid {

int Tracer::add_input(const Tensor& t) {
  int id = graph_.add_input(t.shape(), t.dtype());
  ids_[t.impl()] = id;
  keep_alive_.push_back(t);
  return id;
}

int Tracer::value_of(const Tensor& t) {
  if (!t.defined()) return -1;
  if (auto it = ids_.find(t.impl()); it != ids_.end()) return it->second;
  keep_alive_.push_back(t);
  int id;
  if (t.impl()->is_wrapped_number) {
    id = graph_.add_const(t);
  } else {
    id = graph_.add_state(t.shape(), t.dtype());
    state_of_[t.impl()] = id;
    state_feeds_.push_back(t);
  }
  ids_[t.impl()] = id;
  return id;
}

void Tracer::on_op(OpId id, const TensorList& inputs, const Attrs& attrs, const TensorList& outputs) {
  std::vector<int> ins;
  ins.reserve(inputs.size());
  for (const Tensor& t : inputs) ins.push_back(value_of(t));
  std::vector<TensorMeta> metas;
  for (const Tensor& o : outputs) metas.push_back({o.shape(), o.dtype()});
  std::vector<int> outs = graph_.add_node(id, std::move(ins), attrs, metas);
  for (size_t k = 0; k < outputs.size(); ++k) {
    ids_[outputs[k].impl()] = outs[k];
    keep_alive_.push_back(outputs[k]);
  }
}

void Tracer::on_inplace(OpId id, const Tensor& dst, const TensorList& inputs, const Attrs& attrs) {
  if (dst.impl()->is_view && dst.impl()->view_base &&
      (state_of_.count(dst.impl()->view_base.get()) || !ids_.count(dst.impl()->view_base.get()))) {
    fallback(str(op_def(id).api_name, "_: in-place write through a view of bound state is not traced yet"));
  }
  std::vector<int> ins;
  for (const Tensor& t : inputs) ins.push_back(value_of(t));
  value_of(dst);  // binds dst (as state) if the trace has not seen it yet
  std::vector<int> outs = graph_.add_node(id, std::move(ins), attrs, {{dst.shape(), dst.dtype()}});
  // The new content of dst; if dst is bound state, the write is a side effect of the graph.
  ids_[dst.impl()] = outs[0];
  if (auto it = state_of_.find(dst.impl()); it != state_of_.end()) {
    // One assign per write, in order; the runtime applies them in order, so the last one wins.
    graph_.add_assign(it->second, outs[0]);
  }
}

void Tracer::on_host_read(const Tensor& t, const char* what) {
  if (ids_.count(t.impl()) || t.impl()->is_view)
    fallback(str(what, "() read a traced tensor's value on the host: Python control flow may depend on data"));
}

void Tracer::set_outputs(const TensorList& outs) {
  std::vector<int> ids;
  for (const Tensor& t : outs) ids.push_back(value_of(t));
  graph_.set_outputs(ids);
}

}  // namespace lucid
