// Elementwise grouping: chains and DAGs of elementwise nodes become one FusedElementwise node whose
// body holds them, so the runtime runs the group over 1024-element blocks with its intermediates
// in registers instead of full-size tensors (memory traffic is what elementwise ops cost).
//
// A node joins a group when its op lowers as Elementwise (with or without attributes: the body's
// node keeps them), the backend's fused-elementwise runtime
// can run it for its dtypes (BackendPasses::fused_elementwise_dtype; on the CPU, ew_block_dtype:
// the op is defined for them and its recorded dtype is the one eager would give) and its output
// has the group's shape, the iteration shape; inputs from outside may broadcast to it. Walking
// nodes in order, a node merges with the groups of its producers that have its shape, one at a
// time, each merge kept only if it closes no cycle: a path from the group through nodes
// outside it (other groups counted as one node) back into the group, which would leave no order
// to run them in. A value
// read outside its group, a graph output or an assigned value becomes a group output; groups of
// one node stay as they are. The new graph lists nodes and groups in a topological order that
// keeps the original one where it can (each group placed by its first member). Copy (a dtype
// cast) joins groups too; integer floor_divide and remainder don't (they raise on a zero
// divisor). 0-d nodes that depend only on inputs, states, constants and each other
// form one group of their own however unrelated they are (see Grouping). A group's nodes have
// their results on one device: in a device graph, host scalar math (an optimizer's bias
// corrections on the CPU) never shares a group with device nodes, so the CUDA executor can run
// the host groups before a graph replay and the device ones inside it.
#include <algorithm>
#include <map>
#include <queue>

#include "lucid/compile/passes/passes.h"
#include "lucid/compile/passes/backend_passes.h"

namespace lucid::ir {

namespace {

bool fusable(const Graph& g, const Node& n, const BackendPasses& backend) {
  if (n.body || n.outputs.size() != 1) return false;
  if (n.op == OpId::Copy)  // a cast: the block interpreter converts with the eager kernel's rules
    return n.inputs.size() == 1 && n.inputs[0] >= 0 && g.value(n.inputs[0]).shape == g.value(n.outputs[0]).shape;
  if (op_def(n.op).lowering != Lowering::Elementwise) return false;
  // Integer // and % raise on a zero divisor (eager's kernel checks first); a block has no
  // error path, so these stay kernel instructions, which raise as eager does.
  if ((n.op == OpId::FloorDivide || n.op == OpId::Remainder) && is_integral(g.value(n.outputs[0]).dtype)) return false;
  TensorList ins;
  for (int in : n.inputs) {
    if (in < 0) return false;
    const Value& v = g.value(in);
    ins.push_back(v.kind == ValueKind::Const ? g.const_data(v.slot) : ew_stand_in(v, false));
  }
  return backend.fused_elementwise_dtype &&
         backend.fused_elementwise_dtype(n.op, ins, n.attrs, g.value(n.outputs[0]).dtype).has_value();
}

class Grouping {
 public:
  Grouping(const Graph& g, const BackendPasses& backend)
      : g_(g), users_(value_users(g)), group_(g.nodes().size(), -1), mark_(g.nodes().size(), 0),
        member_(g.nodes().size(), 0) {
    const auto& nodes = g.nodes();
    // Scalar leaves: 0-d fusable nodes computed from inputs, states, constants and each other
    // only (an optimizer's step counts and bias corrections, one chain per parameter). They
    // share one group however unrelated: nothing outside reaches into it, so it runs first as a
    // single instruction instead of a few tiny ones per parameter.
    std::vector<char> leaf(nodes.size(), 0);
    std::vector<int> leaves;
    for (int n = 0; n < static_cast<int>(nodes.size()); ++n) {
      if (!fusable(g, nodes[n], backend) || !g.value(nodes[n].outputs[0]).shape.empty()) continue;
      bool ok = true;
      for (int in : nodes[n].inputs) {
        const Value& v = g.value(in);
        ok = ok && (v.kind != ValueKind::Node || leaf[v.producer]);
      }
      if (ok) {
        leaf[n] = 1;
        leaves.push_back(n);
      }
    }
    std::vector<std::pair<Device, std::vector<int>>> by_device;  // the leaves, one group per device
    for (int x : leaves) {
      const Device& d = g.value(nodes[x].outputs[0]).device;
      auto it = std::find_if(by_device.begin(), by_device.end(), [&](const auto& e) { return e.first == d; });
      if (it == by_device.end()) it = by_device.insert(by_device.end(), {d, {}});
      it->second.push_back(x);
    }
    for (auto& [d, xs] : by_device) {
      if (xs.size() < 2) continue;
      for (int x : xs) group_[x] = static_cast<int>(members_.size());
      members_.push_back(std::move(xs));
    }
    for (int n = 0; n < static_cast<int>(nodes.size()); ++n) {
      if (!fusable(g, nodes[n], backend) || leaf[n]) continue;
      const Value& out = g.value(nodes[n].outputs[0]);
      std::vector<int> cand;  // producers' groups of the same shape and device, in input order
      for (int in : nodes[n].inputs) {
        const Value& v = g.value(in);
        if (v.kind != ValueKind::Node) continue;
        int gp = group_[v.producer];
        if (gp >= 0 && !leaf[v.producer] && v.shape == out.shape && v.device == out.device &&
            std::find(cand.begin(), cand.end(), gp) == cand.end())
          cand.push_back(gp);
      }
      std::vector<int> m = {n};
      for (int gp : cand) {
        std::vector<int> trial = m;
        trial.insert(trial.end(), members_[gp].begin(), members_[gp].end());
        if (closes_cycle(trial, n)) continue;
        m = std::move(trial);
        members_[gp].clear();
      }
      std::sort(m.begin(), m.end());
      for (int x : m) group_[x] = static_cast<int>(members_.size());
      members_.push_back(std::move(m));
    }
  }

  // Members of node n's group (sorted), or empty when n is not in a group of two or more.
  const std::vector<int>* group_of(int n) const {
    int gp = group_[n];
    return gp >= 0 && members_[gp].size() > 1 ? &members_[gp] : nullptr;
  }
  const std::vector<std::vector<int>>& users() const { return users_; }

 private:
  // Whether merging the node set m (whole groups plus node n, the latest) closes a cycle. Only
  // nodes before n can lie on one: later nodes are not grouped yet, so paths through them only
  // go forward.
  bool closes_cycle(const std::vector<int>& m, int n) {
    ++stamp_;
    for (int x : m) member_[x] = stamp_;
    std::vector<int> stack;
    auto reach = [&](int u) {
      if (u >= n || mark_[u] == stamp_) return;
      mark_[u] = stamp_;
      stack.push_back(u);
    };
    auto push_users = [&](int x) {
      for (int out : g_.nodes()[x].outputs)
        for (int u : users_[out])
          if (member_[u] != stamp_) reach(u);
    };
    for (int x : m) push_users(x);
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      for (int out : g_.nodes()[u].outputs)
        for (int w : users_[out])
          if (member_[w] == stamp_) return true;
      push_users(u);
      if (group_[u] >= 0)  // another group runs as one node: all its members are reached
        for (int h : members_[group_[u]]) reach(h);
    }
    return false;
  }

  const Graph& g_;
  std::vector<std::vector<int>> users_;
  std::vector<int> group_;                  // group id per node, -1 if not fusable
  std::vector<std::vector<int>> members_;   // per group id; emptied when merged into another
  std::vector<int> mark_, member_;          // stamps for closes_cycle
  int stamp_ = 0;
};

// Adds group m (sorted members) to r as one FusedElementwise node and maps its outputs.
void emit_group(Rewriter& r, const std::vector<int>& m, const std::vector<std::vector<int>>& users,
                const std::vector<bool>& escaping) {
  const Graph& g = r.src();
  std::vector<char> in_group(g.nodes().size(), 0);
  for (int x : m) in_group[x] = 1;
  Graph body;
  std::map<int, int> to_body;
  std::vector<int> ins, outs;
  std::vector<TensorMeta> out_metas;
  for (int x : m) {
    const Node& n = g.nodes()[x];
    std::vector<int> bin;
    for (int in : n.inputs) {
      auto it = to_body.find(in);
      if (it == to_body.end()) {
        it = to_body.emplace(in, body.add_input(g.value(in).meta())).first;
        ins.push_back(in);
      }
      bin.push_back(it->second);
    }
    const Value& ov = g.value(n.outputs[0]);
    to_body[n.outputs[0]] = body.add_node(n.op, bin, n.attrs, {ov.meta()})[0];
    bool used_outside = escaping[n.outputs[0]];
    for (int u : users[n.outputs[0]]) used_outside = used_outside || !in_group[u];
    if (used_outside) {
      outs.push_back(n.outputs[0]);
      out_metas.push_back(ov.meta());
    }
  }
  std::vector<int> body_outs;
  for (int o : outs) body_outs.push_back(to_body.at(o));
  body.set_outputs(body_outs);
  std::vector<int> fused = r.out().add_fused(r.map(ins), std::make_shared<const Graph>(std::move(body)), out_metas);
  for (size_t k = 0; k < outs.size(); ++k) r.set(outs[k], fused[k]);
}

}  // namespace

Graph group_elementwise(const Graph& g) { return group_elementwise(g, backend_passes(graph_device(g).type)); }

Graph group_elementwise(const Graph& g, const BackendPasses& backend) {
  Grouping grouping(g, backend);
  const auto& nodes = g.nodes();
  const int nn = static_cast<int>(nodes.size());
  // Units: a group of two or more (named by its first member) or a single node.
  std::vector<int> unit(nn);
  for (int n = 0; n < nn; ++n) unit[n] = grouping.group_of(n) ? grouping.group_of(n)->front() : n;
  std::vector<std::vector<int>> dependents(nn);
  std::vector<int> pending(nn, 0);
  for (int n = 0; n < nn; ++n) {
    for (int in : nodes[n].inputs) {
      if (in < 0 || g.value(in).kind != ValueKind::Node) continue;
      int from = unit[g.value(in).producer], to = unit[n];
      if (from == to || std::find(dependents[from].begin(), dependents[from].end(), to) != dependents[from].end())
        continue;
      dependents[from].push_back(to);
      ++pending[to];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int n = 0; n < nn; ++n)
    if (unit[n] == n && pending[n] == 0) ready.push(n);
  Rewriter r(g);
  std::vector<bool> escaping = escaping_values(g);
  int emitted = 0;
  while (!ready.empty()) {
    int u = ready.top();
    ready.pop();
    ++emitted;
    if (const std::vector<int>* m = grouping.group_of(u)) emit_group(r, *m, grouping.users(), escaping);
    else r.copy(nodes[u]);
    for (int d : dependents[u])
      if (--pending[d] == 0) ready.push(d);
  }
  int units = 0;
  for (int n = 0; n < nn; ++n) units += unit[n] == n;
  LUCID_CHECK(emitted == units, Error, "group_elementwise: internal error: the groups leave a cycle");
  return r.finish();
}

}  // namespace lucid::ir
