#include "lucid/autograd/function_node.h"

#include <algorithm>

namespace lucid {

TensorList FunctionNode::unpack_saved() const {
  LUCID_CHECK(!released, Error, "backward of ", name(),
              ": trying to backward through the graph a second time (or to access saved tensors "
              "after they have been freed); pass retain_graph=True to the first backward");
  TensorList out;
  out.reserve(saved.size());
  for (const SavedTensor& s : saved) out.push_back(s.unpack(name()));
  return out;
}

TensorList FunctionNode::apply(const TensorList& grads) {
  TensorList s = unpack_saved();
  LUCID_CHECK(static_cast<bool>(backward), Error, "backward of ", name(), ": the node has no backward");
  TensorList r = backward(grads, s);
  LUCID_CHECK(r.size() <= next_edges.size(), Error, "backward of ", name(), ": returned ", r.size(),
              " gradients for ", next_edges.size(), " inputs");
  for (size_t i = 0; i < r.size(); ++i)
    if (r[i].defined() && !needs_grad[i]) r[i] = Tensor();  // an input that doesn't require grad
  return r;
}

void FunctionNode::release_saved() {
  saved.clear();
  backward = nullptr;
  Node::release_saved();
}

std::shared_ptr<FunctionNode> make_function_node(std::string name, const TensorList& inputs,
                                                 const TensorList& outputs, const std::vector<bool>& differentiable,
                                                 const TensorList& saved, FunctionNode::Backward backward) {
  auto node = std::make_shared<FunctionNode>();
  node->fn_name = std::move(name);
  node->backward = std::move(backward);
  node->num_outputs = static_cast<uint32_t>(outputs.size());
  connect_inputs(*node, inputs);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& o = outputs[k];
    node->output_meta.push_back(o.defined() ? TensorMeta{o.shape(), o.dtype()} : TensorMeta{});
    if (!o.defined() || !is_floating(o.dtype()) || (k < differentiable.size() && !differentiable[k])) continue;
    attach_output(node, o, static_cast<uint32_t>(k));
  }
  for (const Tensor& t : saved) {
    bool is_output = t.defined() && t.grad_fn() == node;
    node->saved.push_back(t.defined() ? SavedTensor::save(t, is_output) : SavedTensor{});
  }
  return node;
}

}  // namespace lucid
