// Reference interpreter: runs a graph node by node through eager dispatch (no planning, no
// fusion). It is the executable semantics written in the plainest way; pass tests check
// interpret(pass(g)) == interpret(g) with it, and the runtime is tested against it.
#include "lucid/compile/ir/interpret.h"

#include "lucid/autograd/grad_mode.h"
#include "lucid/dispatch/dispatch.h"

namespace lucid::ir {

static TensorList run(const Graph& g, const TensorList& inputs, const TensorList& states, TensorList* new_states) {
  LUCID_CHECK(inputs.size() == g.inputs().size() && states.size() == g.states().size(), ValueError,
              "interpret: expected ", g.inputs().size(), " inputs and ", g.states().size(), " states, got ",
              inputs.size(), " and ", states.size());
  std::vector<Tensor> v(g.values().size());
  for (size_t i = 0; i < inputs.size(); ++i) v[g.inputs()[i]] = inputs[i];
  for (size_t i = 0; i < states.size(); ++i) v[g.states()[i]] = states[i];
  for (int id : g.consts()) v[id] = g.const_data(g.value(id).slot);
  for (const Node& n : g.nodes()) {
    TensorList ins;
    for (int in : n.inputs) ins.push_back(in < 0 ? Tensor() : v[in]);
    TensorList outs = n.body ? run(*n.body, ins, {}, nullptr) : dispatch(n.op, ins, n.attrs);
    LUCID_CHECK(outs.size() == n.outputs.size(), Error, "interpret: ", op_name(n.op), " gave ", outs.size(),
                " outputs, the graph expects ", n.outputs.size());
    for (size_t k = 0; k < outs.size(); ++k) v[n.outputs[k]] = outs[k];
  }
  if (new_states) {
    *new_states = states;
    for (const Assign& a : g.assigns()) (*new_states)[g.value(a.state).slot] = v[a.value];
  }
  TensorList r;
  for (int id : g.outputs()) r.push_back(v[id]);
  return r;
}

TensorList interpret(const Graph& g, const TensorList& inputs, const TensorList& states, TensorList* new_states) {
  GradModeGuard ng(false);
  return run(g, inputs, states, new_states);
}

}  // namespace lucid::ir
