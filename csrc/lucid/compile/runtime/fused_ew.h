// Block interpreter for FusedElementwise groups (placeholder until the block interpreter lands:
// runs the body op by op through the reference interpreter).
#pragma once
#include <memory>

#include "lucid/compile/ir/graph.h"

namespace lucid::rt {

struct FusedProgram {
  std::shared_ptr<const ir::Graph> body;
};
std::shared_ptr<FusedProgram> compile_fused(const ir::Graph& body);
void run_fused(const FusedProgram& p, const TensorList& inputs, const TensorList& outputs);

}  // namespace lucid::rt
