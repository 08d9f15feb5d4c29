// CompiledEntry (compiled_entry.h): construction checks, and the wiring of a grad entry's
// outputs to its CompiledBackward or PrecomputedBackward node.
#include "lucid/compile/runtime/compiled_entry.h"

#include <algorithm>

#include "lucid/compile/runtime/compiled_backward.h"

namespace lucid::rt {

namespace {

void check_states(const Executable& fwd, const TensorList& states) {
  LUCID_CHECK(states.size() == fwd.graph().states().size(), ValueError, "CompiledEntry: the forward reads ",
              fwd.graph().states().size(), " bound tensors, got ", states.size());
}

void check_indices(const std::vector<int>& idx, size_t bound, const char* what) {
  for (int i : idx)
    LUCID_CHECK(i >= 0 && static_cast<size_t>(i) < bound, ValueError, "CompiledEntry: ", what, " index ", i,
                " out of range [0, ", bound, ")");
}

}  // namespace

CompiledEntry::CompiledEntry(std::shared_ptr<const Executable> fwd, TensorList states)
    : fwd_(std::move(fwd)), states_(std::move(states)) {
  LUCID_CHECK(fwd_, ValueError, "CompiledEntry: no forward executable");
  check_states(*fwd_, states_);
}

CompiledEntry::CompiledEntry(std::shared_ptr<const Executable> fwd, std::shared_ptr<const Executable> bwd,
                             TensorList states, GradSpec grad)
    : fwd_(std::move(fwd)),
      bwd_(std::move(bwd)),
      states_(std::move(states)),
      grad_entry_(true),
      grad_(std::move(grad)) {
  LUCID_CHECK(fwd_, ValueError, "CompiledEntry: no forward executable");
  check_states(*fwd_, states_);
  const ir::Graph& g = fwd_->graph();
  const size_t n_results = g.outputs().size();
  LUCID_CHECK(grad_.n_out >= 0 && static_cast<size_t>(grad_.n_out) <= n_results, ValueError, "CompiledEntry: n_out ",
              grad_.n_out, " but the forward returns ", n_results, " results");
  check_indices(grad_.grad_outs, static_cast<size_t>(grad_.n_out), "grad output");
  check_indices(grad_.wrt_inputs, g.inputs().size(), "differentiated input");
  check_indices(grad_.wrt_states, states_.size(), "differentiated state");
  LUCID_CHECK(grad_.wrt_used.size() == grad_.wrt_inputs.size() + grad_.wrt_states.size(), ValueError,
              "CompiledEntry: wrt_used has ", grad_.wrt_used.size(), " flags for ",
              grad_.wrt_inputs.size() + grad_.wrt_states.size(), " differentiated tensors");
  const size_t n_used = static_cast<size_t>(std::count(grad_.wrt_used.begin(), grad_.wrt_used.end(), true));
  const size_t n_extra = n_results - static_cast<size_t>(grad_.n_out);
  if (bwd_) {
    const ir::Graph& b = bwd_->graph();
    LUCID_CHECK(b.inputs().size() == n_extra + grad_.grad_outs.size() && b.outputs().size() == n_used &&
                    b.states().size() == states_.size(),
                ValueError, "CompiledEntry: the backward takes ", b.inputs().size(), " inputs and ", b.states().size(),
                " bound tensors and returns ", b.outputs().size(), " gradients; expected ",
                n_extra + grad_.grad_outs.size(), " (", n_extra, " saved values, ", grad_.grad_outs.size(),
                " gradients), ", states_.size(), " and ", n_used);
  } else {
    LUCID_CHECK(grad_.grad_outs.size() == 1 && n_extra == n_used, ValueError,
                "CompiledEntry: a precomputed backward has one grad output (the loss) and returns a gradient per "
                "used wrt; got ", grad_.grad_outs.size(), " grad outputs and ", n_extra, " extra results for ", n_used,
                " gradients");
  }
  state_rg_.reserve(states_.size());
  for (const Tensor& t : states_) state_rg_.push_back(t.requires_grad());
}

void CompiledEntry::set_states(TensorList states) {
  LUCID_CHECK(states.size() == states_.size(), ValueError, "CompiledEntry: ", states_.size(),
              " bound tensors expected, got ", states.size());
  states_ = std::move(states);
}

// outs: the forward's outputs then its saved values (or gradients). Gives the differentiable
// outputs one node holding the saved values.
void CompiledEntry::attach_backward(const TensorList& flat, const TensorList& outs) const {
  std::shared_ptr<Node> node_base;
  std::shared_ptr<CompiledBackward> cnode;
  if (!bwd_) {
    auto pn = std::make_shared<PrecomputedBackward>();
    pn->grads.assign(outs.begin() + grad_.n_out, outs.end());
    pn->used = grad_.wrt_used;
    node_base = pn;
  } else {
    cnode = std::make_shared<CompiledBackward>();
    cnode->bwd = bwd_;
    cnode->saved.assign(outs.begin() + grad_.n_out, outs.end());
    cnode->states = states_;
    cnode->used = grad_.wrt_used;
    node_base = cnode;
  }
  Node* node = node_base.get();
  node->num_outputs = static_cast<uint32_t>(grad_.grad_outs.size());
  TensorList wrt;  // the inputs and states the compiled backward differentiates (all require grad)
  for (int i : grad_.wrt_inputs) wrt.push_back(flat[i]);
  for (int j : grad_.wrt_states) wrt.push_back(states_[j]);
  connect_inputs(*node, wrt);
  for (size_t k = 0; k < grad_.grad_outs.size(); ++k) {
    const Tensor& y = outs[grad_.grad_outs[k]];
    if (cnode) cnode->out_meta.push_back({y.shape(), y.dtype()});
    attach_output(node_base, y, static_cast<uint32_t>(k));
  }
}

}  // namespace lucid::rt
