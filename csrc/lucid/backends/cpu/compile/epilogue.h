// The CPU backend's own IR rewrites, run by the shared pipeline through the CPU's backend
// description (backend_passes.cpp): absorb_epilogues (epilogue.cpp) moves bias / activation /
// residual tails of Linear and Conv into LinearFused / ConvFused, the oneDNN post-op kernels.
#pragma once
#include "lucid/compile/ir/graph.h"

namespace lucid::cpu {

ir::Graph absorb_epilogues(const ir::Graph& g);

}  // namespace lucid::cpu
