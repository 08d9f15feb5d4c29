// FusedElementwise: the compiler's node for a group of elementwise ops (ir::Node::body). It has
// no eager form: the group's ops run eagerly as themselves, and each backend's executor runs the
// body its own way (the CPU's on the block interpreter; its kernel, which only raises, is in
// backends/cpu/compile/fused_op.cpp). Registered so the IR verifier and printer know the op.
#include "lucid/ops/op_def.h"

namespace lucid {

LUCID_REGISTER_OP(FusedElementwise, "", [] {
  OpDef d;
  d.infer = [](const TensorList&, const Attrs&) -> std::vector<TensorMeta> {
    throw NotImplementedError("FusedElementwise: a compiler-internal op; it runs only inside a compiled executable");
  };
  d.differentiable = false;
  d.lowering = Lowering::Kernel;
  return d;
}());

}  // namespace lucid
