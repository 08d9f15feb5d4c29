// partition_joint: splits a joint forward+backward trace into a forward graph and a backward
// graph (what torch.compile's AOTAutograd calls the min-cut partitioner, here in its simplest
// form). The joint graph's inputs are the forward's inputs followed by one grad-output input per
// differentiable forward output; its outputs are the forward's outputs followed by the
// gradients. A node belongs to the backward iff it (transitively) reads a grad-output input;
// everything else is forward. The forward additionally returns the "saved" values: forward node
// results and forward inputs that a backward node reads (or that are a gradient as is). The
// backward's inputs are the saved values, then the grad outputs; states and constants are shared
// (both graphs keep every state in its slot, so the runtime feeds the same bound tensors).
// Assigns and random draws belong to the forward.
#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

JointPartition partition_joint(const Graph& joint, int n_fwd_inputs, int n_fwd_outputs) {
  const auto& vals = joint.values();
  const int nv = static_cast<int>(vals.size());
  const int n_in = static_cast<int>(joint.inputs().size());
  const int n_out = static_cast<int>(joint.outputs().size());
  LUCID_CHECK(n_fwd_inputs <= n_in && n_fwd_outputs <= n_out, Error, "partition_joint: bad split");
  std::vector<bool> bwd(nv, false);  // depends on a grad-output input
  for (int k = n_fwd_inputs; k < n_in; ++k) bwd[joint.inputs()[k]] = true;
  std::vector<bool> bwd_node(joint.nodes().size(), false);
  for (size_t n = 0; n < joint.nodes().size(); ++n) {
    const Node& node = joint.nodes()[n];
    bool b = false;
    for (int in : node.inputs) b |= in >= 0 && bwd[in];
    bwd_node[n] = b;
    for (int o : node.outputs) bwd[o] = b;
  }
  for (int k = 0; k < n_fwd_outputs; ++k)
    LUCID_CHECK(!bwd[joint.outputs()[k]], Error, "partition_joint: forward output ", k, " depends on a grad output");
  for (const Assign& a : joint.assigns())
    LUCID_CHECK(!bwd[a.value], Error, "partition_joint: the backward writes to bound state");

  // Saved: forward node results / forward inputs read by the backward, or returned as gradients.
  std::vector<int> saved;
  std::vector<bool> is_saved(nv, false);
  auto save = [&](int v) {
    if (v < 0 || bwd[v] || is_saved[v]) return;
    ValueKind k = vals[v].kind;
    if (k == ValueKind::State || k == ValueKind::Const) return;
    is_saved[v] = true;
    saved.push_back(v);
  };
  for (size_t n = 0; n < joint.nodes().size(); ++n)
    if (bwd_node[n])
      for (int in : joint.nodes()[n].inputs) save(in);
  for (int k = n_fwd_outputs; k < n_out; ++k) save(joint.outputs()[k]);

  auto copy_header = [&](Graph& g, std::vector<int>& map) {
    for (int id : joint.states()) map[id] = g.add_state(vals[id].meta());
    for (int id : joint.consts()) map[id] = g.add_const(joint.const_data(vals[id].slot));
  };
  auto copy_node = [&](Graph& g, std::vector<int>& map, const Node& node) {
    std::vector<int> ins;
    for (int in : node.inputs) ins.push_back(in < 0 ? -1 : map[in]);
    std::vector<TensorMeta> metas;
    for (int o : node.outputs) metas.push_back(vals[o].meta());
    std::vector<int> outs = node.body ? g.add_fused(ins, node.body, metas) : g.add_node(node.op, ins, node.attrs, metas);
    for (size_t k = 0; k < outs.size(); ++k) map[node.outputs[k]] = outs[k];
  };

  JointPartition p;
  {
    Graph& f = p.forward;
    std::vector<int> map(nv, -1);
    for (int k = 0; k < n_fwd_inputs; ++k) {
      int id = joint.inputs()[k];
      map[id] = f.add_input(vals[id].meta());
    }
    copy_header(f, map);
    for (size_t n = 0; n < joint.nodes().size(); ++n)
      if (!bwd_node[n]) copy_node(f, map, joint.nodes()[n]);
    std::vector<int> outs;
    for (int k = 0; k < n_fwd_outputs; ++k) outs.push_back(map[joint.outputs()[k]]);
    for (int v : saved) outs.push_back(map[v]);
    f.set_outputs(outs);
    for (const Assign& a : joint.assigns()) f.add_assign(map[a.state], map[a.value]);
    f.set_rng_draws(joint.rng_draws());
    verify(f);
  }
  {
    Graph& b = p.backward;
    std::vector<int> map(nv, -1);
    for (int v : saved) map[v] = b.add_input(vals[v].meta());
    for (int k = n_fwd_inputs; k < n_in; ++k) {
      int id = joint.inputs()[k];
      map[id] = b.add_input(vals[id].meta());
    }
    copy_header(b, map);
    for (size_t n = 0; n < joint.nodes().size(); ++n)
      if (bwd_node[n]) copy_node(b, map, joint.nodes()[n]);
    std::vector<int> outs;
    for (int k = n_fwd_outputs; k < n_out; ++k) outs.push_back(map[joint.outputs()[k]]);
    b.set_outputs(outs);
    verify(b);
  }
  p.num_saved = static_cast<int>(saved.size());
  return p;
}

}  // namespace lucid::ir
