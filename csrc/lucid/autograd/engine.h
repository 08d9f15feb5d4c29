// The backward engine: walks the graph from the roots in reverse creation order, accumulates
// gradients per node input, reduces broadcast gradients to each input's shape, and writes leaf
// gradients into .grad (backward) or returns them (grad).
#pragma once
#include "lucid/core/tensor.h"
#include "lucid/ops/op_def.h"

namespace lucid::autograd {

void backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph, bool create_graph);

// Returns d(outputs)/d(inputs); undefined entries for unused inputs when allow_unused.
TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                bool retain_graph, bool create_graph, bool allow_unused);

// Hooks on tensors (leaf: run before accumulation; non-leaf: run on the grad flowing in).
void register_hook(const Tensor& t, TensorHook hook);
void retain_grad(const Tensor& t);

}  // namespace lucid::autograd
