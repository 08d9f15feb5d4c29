// The CPU backend's layout pass (layout.cpp), run by the shared pipeline through the CPU's
// backend description (backend_passes.cpp) after the epilogue rewrite: activations between
// convolutions stay in oneDNN's channel-blocked layout (ops/blocked_layout.h).
#pragma once
#include "lucid/compile/ir/graph.h"

namespace lucid::cpu {

ir::Graph keep_blocked_layouts(const ir::Graph& g);

}  // namespace lucid::cpu
