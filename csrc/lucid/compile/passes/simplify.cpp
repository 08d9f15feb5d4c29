// Algebraic simplification: nodes that return their operand unchanged are replaced by it.
//   x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1   (the other operand a constant, every element equal
//                                              to 1 or 0, of any shape or dtype)
//   -(-x)
//   Reshape / View / Expand to the shape x already has
// A rewrite applies only when the node's result has exactly x's shape and dtype, so a constant
// that broadcasts x or promotes its dtype (int * 1.0 is float) keeps the node. Traced code is
// full of these (scale factors of 1, zero biases, flatten of an already flat tensor, the
// neg-of-neg from subtraction rewrites), and each costs a pass over memory at run time.
//
// Exactness: x * 1, x - 0 and x / 1 are exact in IEEE arithmetic (NaN, inf and -0.0 included);
// x + 0 is exact except that -0.0 + 0.0 is +0.0, so the rewrite can keep a -0.0 where eager
// mode gives +0.0 (XLA and Inductor make the same trade). Reshapes change no value.
//
// A result the caller sees (observable_values: outputs, assigns and the bases of their views)
// is never replaced: eager mode gives it its own tensor, and x may be an input or another
// output. The replaced nodes are not copied; the operands they leave unused go with DCE.
#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

namespace {

// The operand (an id of g) that node n with inputs `ins` (ids of g) returns unchanged, or -1.
int identity_operand(const Graph& g, const Node& n, const std::vector<int>& ins) {
  if (n.body || n.outputs.size() != 1) return -1;
  switch (n.op) {
    case OpId::Reshape:
    case OpId::View:
    case OpId::Expand: return ins[0];
    case OpId::Neg: {
      const Value& v = g.value(ins[0]);
      if (v.kind != ValueKind::Node || g.nodes()[v.producer].op != OpId::Neg) return -1;
      return g.nodes()[v.producer].inputs[0];
    }
    default: break;
  }
  if (!n.attrs.items().empty() || ins.size() != 2 || ins[0] < 0 || ins[1] < 0) return -1;
  switch (n.op) {
    case OpId::Mul:
      if (constant_equal_to(g, ins[1], 1)) return ins[0];
      return constant_equal_to(g, ins[0], 1) ? ins[1] : -1;
    case OpId::Add:
      if (constant_equal_to(g, ins[1], 0)) return ins[0];
      return constant_equal_to(g, ins[0], 0) ? ins[1] : -1;
    case OpId::Sub: return constant_equal_to(g, ins[1], 0) ? ins[0] : -1;
    case OpId::Div: return constant_equal_to(g, ins[1], 1) ? ins[0] : -1;
    default: return -1;
  }
}

}  // namespace

Graph algebraic_simplification(const Graph& g) {
  Rewriter r(g);
  const Graph& out = r.out();
  std::vector<bool> observable = observable_values(g);
  for (const Node& n : g.nodes()) {
    // Matched on the new graph, so rewrites compose: x * 1 * 1 -> x, -(-(x * 1)) -> x.
    int x = -1;
    if (n.outputs.size() == 1 && !observable[n.outputs[0]]) {
      x = identity_operand(out, n, r.map(n.inputs));
      const Value& y = g.value(n.outputs[0]);
      if (x >= 0 && (out.value(x).shape != y.shape || out.value(x).dtype != y.dtype)) x = -1;
    }
    if (x >= 0) {
      r.set(n.outputs[0], x);
      continue;
    }
    r.copy(n);
  }
  return r.finish();
}

}  // namespace lucid::ir
