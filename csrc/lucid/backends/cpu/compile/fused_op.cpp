// The CPU kernel of FusedElementwise (compile/runtime/fused_op.cpp): the op has no eager form, so
// called eagerly it raises; inside a compiled program the CPU executor runs the node's body on
// the block interpreter (fused_ew.h) and never calls this.
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {
void fused_elementwise_kernel(const TensorList&, const TensorList&, const Attrs&) {
  throw NotImplementedError("FusedElementwise: a compiler-internal op; it runs only inside a compiled executable");
}
}  // namespace

LUCID_REGISTER_KERNEL(FusedElementwise, CPU, fused_elementwise_kernel);

}  // namespace lucid::cpu
