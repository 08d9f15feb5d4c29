#include "lucid/autograd/node.h"

#include <algorithm>
#include <atomic>

namespace lucid {

uint64_t next_sequence_nr() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

void connect_inputs(Node& node, const TensorList& inputs, const std::vector<int>& nondiff) {
  node.sequence_nr = next_sequence_nr();
  size_t n = inputs.size();
  node.next_edges.resize(n);
  node.input_meta.resize(n);
  node.needs_grad.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) continue;
    node.input_meta[i] = {t.shape(), t.dtype(), t.device()};
    if (!t.requires_grad() || std::find(nondiff.begin(), nondiff.end(), static_cast<int>(i)) != nondiff.end())
      continue;
    node.needs_grad[i] = true;
    if (t.grad_fn()) {
      node.next_edges[i].fn = t.grad_fn();
      node.next_edges[i].input_nr = t.impl()->autograd->output_nr;
    } else {
      node.next_edges[i].leaf = t.impl_ptr();
    }
  }
}

void attach_output(const std::shared_ptr<Node>& node, const Tensor& o, uint32_t k) {
  AutogradMeta& m = o.impl()->meta();
  m.requires_grad = true;
  m.grad_fn = node;
  m.output_nr = k;
}

SavedTensor SavedTensor::save(const Tensor& t, bool is_output) {
  SavedTensor s;
  s.version = t.version();
  s.is_output = is_output;
  if (is_output) {
    s.data = t.detach();
    s.grad_fn = t.grad_fn();
    s.output_nr = t.impl()->autograd ? t.impl()->autograd->output_nr : 0;
  } else {
    s.data = t;
  }
  return s;
}

Tensor SavedTensor::unpack(const char* op) const {
  if (!data.defined()) return data;
  LUCID_CHECK(data.version() == version, Error, "backward of ", op,
              ": one of the tensors needed for gradient computation has been modified by an "
              "in-place operation (saved at version ", version, ", now at version ", data.version(),
              "); clone it before modifying it");
  if (!is_output) return data;
  std::shared_ptr<Node> fn = grad_fn.lock();
  if (!fn) return data;
  Tensor t = data.detach();
  AutogradMeta& m = t.impl()->meta();
  m.requires_grad = true;
  m.grad_fn = fn;
  m.output_nr = output_nr;
  return t;
}

const char* Node::name() const { return op_name(op); }

TensorList Node::apply(const TensorList& grads) {
  LUCID_CHECK(!released, Error, "backward of ", name(),
              ": trying to backward through the graph a second time (or to access saved tensors "
              "after they have been freed); pass retain_graph=True to the first backward");
  const OpDef& def = op_def(op);
  TensorList ins, outs;
  ins.reserve(saved_inputs.size());
  for (const SavedTensor& s : saved_inputs) ins.push_back(s.unpack(name()));
  for (const SavedTensor& s : saved_outputs) outs.push_back(s.unpack(name()));
  VjpContext ctx{ins, outs, grads, attrs, input_meta, needs_grad};
  return def.vjp(ctx);
}

void Node::release_saved() {
  saved_inputs.clear();
  saved_outputs.clear();
  released = true;
}

}  // namespace lucid
