// The autograd nodes of compiled calls. A compiled call under grad mode gives its
// differentiable outputs one node (not one per op, as eager would), with an edge per
// differentiated argument or bound tensor, so the engine walks it like any other node:
//   CompiledBackward    a compiled forward's node: its backward runs the compiled backward
//                       executable on the values the forward saved and the incoming gradients.
//   PrecomputedBackward make_step's node: the step's one executable already computed the
//                       gradients for a unit grad output; backward only scales them.
// CompiledEntry (compiled_entry.h) makes and wires them; nothing here needs Python.
#pragma once
#include <memory>
#include <vector>

#include "lucid/autograd/node.h"
#include "lucid/compile/runtime/executable.h"

namespace lucid::rt {

struct CompiledBackward : Node {
  std::shared_ptr<const Executable> bwd;
  TensorList saved, states;          // the forward's saved values; the bound state (fed to bwd)
  std::vector<TensorMeta> out_meta;  // per grad output: its shape and dtype (a missing gradient is zeros)
  std::vector<bool> used;            // per edge: the backward graph returns its gradient

  const char* name() const override { return "CompiledFunction"; }
  TensorList apply(const TensorList& grads) override;
  void release_saved() override;
};

// The backward is linear in the incoming gradient, so d(loss)/d(wrt) for grad output 1 times
// the incoming scalar is the gradient; the engine accumulates it into .grad.
struct PrecomputedBackward : Node {
  TensorList grads;        // one per used edge, for grad output 1
  std::vector<bool> used;  // per edge
  const char* name() const override { return "CompiledStep"; }
  TensorList apply(const TensorList& g) override;
  void release_saved() override;
};

}  // namespace lucid::rt
