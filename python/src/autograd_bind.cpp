// Bindings of FunctionNode for lucid.autograd.Function (python/lucid/autograd/function.py): the
// glue only adapts the Python `backward(grads, saved)` callable into the node's C++ callback
// (GIL, None <-> undefined tensors); what the node does lives in csrc/lucid/autograd.
#include "bind.h"
#include "lucid/autograd/function_node.h"
#include "lucid/compile/trace/trace_hook.h"

namespace lucid::py {

static TensorList tensors_of(const std::vector<std::optional<Tensor>>& v) {
  TensorList out;
  out.reserve(v.size());
  for (const auto& o : v) out.push_back(o ? *o : Tensor());
  return out;
}

static nb::list list_of(const TensorList& v) {
  nb::list out;
  for (const Tensor& t : v) out.append(t.defined() ? nb::cast(t) : nb::none());
  return out;
}

LUCID_BINDER(autograd) {
  // A Python callback (a tensor hook) ran: a trace in progress can't replay it, so it falls back.
  m.def("_note_untraced_callback", [](const std::string& what) {
    if (TraceHook* h = current_trace_hook()) h->on_untraced_callback(what);
  });

  // _function_node(name, inputs, outputs, differentiable, saved, backward): the node of one
  // Function.apply call; backward(grads: list, saved: list) returns one Tensor or None per input.
  m.def("_function_node", [](std::string name, const std::vector<std::optional<Tensor>>& inputs,
                             const std::vector<std::optional<Tensor>>& outputs, const std::vector<bool>& differentiable,
                             const std::vector<std::optional<Tensor>>& saved, nb::callable backward) {
    auto* holder = new nb::object(backward);
    std::shared_ptr<nb::object> keep(holder, [](nb::object* p) { nb::gil_scoped_acquire g; delete p; });
    FunctionNode::Backward cb = [keep](const TensorList& grads, const TensorList& s) {
      nb::gil_scoped_acquire gil;
      nb::object r = (*keep)(list_of(grads), list_of(s));
      TensorList out;
      for (nb::handle h : r) out.push_back(h.is_none() ? Tensor() : nb::cast<Tensor>(h));
      return out;
    };
    std::shared_ptr<Node> node = make_function_node(std::move(name), tensors_of(inputs), tensors_of(outputs),
                                                    differentiable, tensors_of(saved), std::move(cb));
    return node;
  });
}

}  // namespace lucid::py
