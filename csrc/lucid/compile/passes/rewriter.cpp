// Rewriter and use-def helpers shared by the passes (see passes.h).
#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

Rewriter::Rewriter(const Graph& src) : src_(src), map_(src.values().size(), -1) {
  for (int id : src.inputs()) map_[id] = out_.add_input(src.value(id).meta());
  for (int id : src.states()) map_[id] = out_.add_state(src.value(id).meta());
  for (int id : src.consts()) map_[id] = out_.add_const(src.const_data(src.value(id).slot));
}

std::vector<int> Rewriter::map(const std::vector<int>& old) const {
  std::vector<int> r;
  r.reserve(old.size());
  for (int v : old) r.push_back(map(v));
  return r;
}

std::vector<int> Rewriter::copy(const Node& n) {
  std::vector<TensorMeta> metas;
  for (int o : n.outputs) metas.push_back(src_.value(o).meta());
  std::vector<int> outs = n.body ? out_.add_fused(map(n.inputs), n.body, metas)
                                 : out_.add_node(n.op, map(n.inputs), n.attrs, metas);
  for (size_t k = 0; k < outs.size(); ++k) map_[n.outputs[k]] = outs[k];
  return outs;
}

std::vector<int> Rewriter::add(OpId op, std::vector<int> inputs, Attrs attrs, const std::vector<TensorMeta>& outs) {
  return out_.add_node(op, std::move(inputs), std::move(attrs), outs);
}

Graph Rewriter::finish() {
  out_.set_outputs(map(src_.outputs()));
  for (const Assign& a : src_.assigns()) out_.add_assign(map(a.state), map(a.value));
  verify(out_);
  return std::move(out_);
}

std::vector<std::vector<int>> value_users(const Graph& g) {
  std::vector<std::vector<int>> users(g.values().size());
  for (size_t n = 0; n < g.nodes().size(); ++n)
    for (int in : g.nodes()[n].inputs)
      if (in >= 0 && (users[in].empty() || users[in].back() != static_cast<int>(n))) users[in].push_back(static_cast<int>(n));
  return users;
}

std::vector<bool> escaping_values(const Graph& g) {
  std::vector<bool> e(g.values().size(), false);
  for (int id : g.outputs()) e[id] = true;
  for (const Assign& a : g.assigns()) e[a.value] = true;
  return e;
}

std::vector<bool> observable_values(const Graph& g) {
  std::vector<bool> obs = escaping_values(g);
  for (size_t n = g.nodes().size(); n-- > 0;) {
    const Node& node = g.nodes()[n];
    if (node.body || !op_def(node.op).view || node.inputs.empty() || node.inputs[0] < 0) continue;
    for (int out : node.outputs)
      if (obs[out]) obs[node.inputs[0]] = true;
  }
  return obs;
}

bool constant_equal_to(const Graph& g, int id, double v) {
  if (id < 0 || g.value(id).kind != ValueKind::Const) return false;
  Tensor c = g.const_data(g.value(id).slot).contiguous_data();
  bool all = true;
  LUCID_DISPATCH_ALL(c.dtype(), "constant_equal_to", [&] {
    const scalar_t* p = c.data<scalar_t>();
    for (int64_t i = 0; i < c.numel() && all; ++i) all = static_cast<double>(static_cast<compute_t<scalar_t>>(p[i])) == v;
  });
  return all;
}

}  // namespace lucid::ir
