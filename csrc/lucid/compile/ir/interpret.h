// Reference interpreter for the IR (see interpret.cpp).
#pragma once
#include "lucid/compile/ir/graph.h"

namespace lucid::ir {

// Runs g on the given inputs and states (by slot). Returns the outputs; if new_states is given,
// it receives the states after the graph's assigns (assigned values replace the fed tensor).
TensorList interpret(const Graph& g, const TensorList& inputs, const TensorList& states,
                     TensorList* new_states = nullptr);

}  // namespace lucid::ir
