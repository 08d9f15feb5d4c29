// Fused one-pass activation backwards: relu, sigmoid, tanh, silu and gelu's gradient from
// (grad, saved input or result) in one elementwise op, rows of the functor table
// (ops/list/elementwise_functors.def). Their activations' VJPs use them when no higher-order graph
// is being built; with create_graph the VJPs use differentiable op compositions, so these are
// non-differentiable.
#include "lucid/ops/elementwise_util.h"

namespace lucid {

#define EW_BACKWARD(Name)                   \
  LUCID_REGISTER_OP(Name, "", [] {          \
    OpDef d = elementwise_op<OpId::Name>(); \
    d.differentiable = false;               \
    return d;                               \
  }())

EW_BACKWARD(ReluBackward);
EW_BACKWARD(SigmoidBackward);
EW_BACKWARD(TanhBackward);
EW_BACKWARD(SiluBackward);

LUCID_REGISTER_OP(GeluBackward, "approximate:str", [] {
  OpDef d = elementwise_op<OpId::GeluBackward>();
  d.differentiable = false;
  return d;
}());

}  // namespace lucid
