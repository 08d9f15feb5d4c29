// FunctionNode: an autograd node whose backward is a callback instead of an op's VJP. It serves
// `lucid.autograd.Function` (the bindings adapt the Python `backward` into the callback; the
// node itself knows nothing of Python) and the engine's own nodes that are not ops (an in-place
// write that replaces a tensor's value: the old value gets a zero gradient). It keeps tensors
// saved for backward with their versions, so an in-place write to one of them after the
// forward raises at backward, exactly as for the built-in ops' saved tensors.
#pragma once
#include <functional>
#include <string>

#include "lucid/autograd/node.h"

namespace lucid {

struct FunctionNode : Node {
  // grads: one per output (undefined: no gradient reached it); saved: the saved tensors,
  // version-checked and unpacked. Returns one gradient per input (undefined: none).
  using Backward = std::function<TensorList(const TensorList& grads, const TensorList& saved)>;

  std::string fn_name;  // e.g. "MyFunctionBackward"
  Backward backward;
  std::vector<SavedTensor> saved;
  std::vector<TensorMeta> output_meta;  // one per output (materialising undefined grads)

  const char* name() const override { return fn_name.c_str(); }
  TensorList apply(const TensorList& grads) override;
  void release_saved() override;  // also drops the callback (and what it holds)
  TensorList unpack_saved() const;
};

// Makes a FunctionNode with one edge per entry of `inputs` (an undefined entry, or one that
// does not require grad, gets no edge) and makes it the grad_fn of every floating-point tensor
// of `outputs` whose `differentiable` flag is set (output_nr = its index in `outputs`).
// `saved` are stored after the outputs are wired, so saving an output keeps a weak reference.
std::shared_ptr<FunctionNode> make_function_node(std::string name, const TensorList& inputs,
                                                 const TensorList& outputs, const std::vector<bool>& differentiable,
                                                 const TensorList& saved, FunctionNode::Backward backward);

}  // namespace lucid
