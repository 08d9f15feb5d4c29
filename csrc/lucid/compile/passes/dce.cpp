// Dead code elimination: drops every node none of whose results reach a graph output or an
// assign, and every constant that no remaining node, output or assign reads.
//
// Why it is safe: every IR node is pure. The tracer turned in-place writes into new values plus
// explicit assigns, so the only observable effects of a graph are its outputs and its assigns;
// a node that feeds neither can go. A node is kept or dropped whole (a multi-result node stays
// while any of its results is live). Inputs and states keep their slots even when nothing reads
// them, because the runtime feeds them by slot; constants are internal, so the live ones are
// renumbered in their original order. Only the last assign to each target is kept: the runtime
// applies assigns in order after all nodes ran, so an earlier write to the same target (the
// `v.mul_(b)` before `v.addcmul_(g, g)` in an optimizer step) is overwritten unseen, and the
// value it wrote need not be materialised. Other passes (folding, CSE) leave dead nodes and unused
// constants behind and rely on this pass to remove them.
#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

Graph dead_code_elimination(const Graph& g) {
  const std::vector<Node>& nodes = g.nodes();
  // The last write to each target, in their original order.
  std::vector<Assign> assigns;
  std::vector<bool> written(g.values().size(), false);
  for (auto it = g.assigns().rbegin(); it != g.assigns().rend(); ++it)
    if (!written[it->state]) {
      written[it->state] = true;
      assigns.insert(assigns.begin(), *it);
    }
  // Liveness, from the outputs and those assigns backwards (node order is a topological order).
  std::vector<bool> live(g.values().size(), false);
  for (int o : g.outputs()) live[o] = true;
  for (const Assign& a : assigns) live[a.value] = true;
  std::vector<bool> keep(nodes.size(), false);
  for (size_t n = nodes.size(); n-- > 0;) {
    for (int out : nodes[n].outputs) keep[n] = keep[n] || live[out];
    if (!keep[n]) continue;
    for (int in : nodes[n].inputs)
      if (in >= 0) live[in] = true;
  }

  Graph out;
  std::vector<int> map(g.values().size(), -1);
  auto mapped = [&](const std::vector<int>& ids) {
    std::vector<int> r;
    r.reserve(ids.size());
    for (int id : ids) r.push_back(id < 0 ? -1 : map[id]);
    return r;
  };
  for (int id : g.inputs()) map[id] = out.add_input(g.value(id).meta());
  for (int id : g.states()) map[id] = out.add_state(g.value(id).meta());
  for (int id : g.consts())
    if (live[id]) map[id] = out.add_const(g.const_data(g.value(id).slot));
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!keep[n]) continue;
    const Node& node = nodes[n];
    std::vector<TensorMeta> metas;
    for (int o : node.outputs) metas.push_back(g.value(o).meta());
    std::vector<int> outs = node.body ? out.add_fused(mapped(node.inputs), node.body, metas)
                                      : out.add_node(node.op, mapped(node.inputs), node.attrs, metas);
    for (size_t k = 0; k < outs.size(); ++k) map[node.outputs[k]] = outs[k];
  }
  out.set_outputs(mapped(g.outputs()));
  for (const Assign& a : assigns) out.add_assign(map[a.state], map[a.value]);
  verify(out);
  return out;
}

}  // namespace lucid::ir
