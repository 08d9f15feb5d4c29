// Tests of the basic IR passes (dead code elimination, common subexpression elimination,
// constant folding, algebraic simplification): IR text in -> pass -> IR text out, compared with the expected text written
// from each pass's definition, plus a numerical check that the reference interpreter gives the
// same outputs and state updates for the graph before and after the pass on random inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "lucid/compile/ir/interpret.h"
#include "lucid/compile/passes/passes.h"
#include "lucid/ops/creation.h"

using namespace lucid;

namespace {

// A random tensor of a value's type: floats uniform in [-2, 2), integers in [-5, 5), random bools.
Tensor random_like(const ir::Value& v, Generator& gen) {
  if (is_floating(v.dtype)) return cast(add(mul_scalar(rand(v.shape, DType::Float64, &gen), 4.0), scalar_tensor(-2.0)), v.dtype);
  if (v.dtype == DType::Bool) return cast(randint(0, 2, v.shape, DType::Int64, &gen), DType::Bool);
  return randint(-5, 5, v.shape, v.dtype, &gen);
}

// Same dtype, shape and values (NaN equal to NaN).
void expect_same_tensor(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  Tensor x = cast(a, DType::Float64), y = cast(b, DType::Float64);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double p = x.data<double>()[i], q = y.data<double>()[i];
    EXPECT_TRUE(p == q || (std::isnan(p) && std::isnan(q))) << what << " element " << i << ": " << p << " vs " << q;
  }
}

// interpret(after) == interpret(before) on random inputs and states: outputs and new states.
void expect_same_results(const ir::Graph& before, const ir::Graph& after, uint64_t seed = 7) {
  Generator gen(seed);
  TensorList ins, sts;
  for (int id : before.inputs()) ins.push_back(random_like(before.value(id), gen));
  for (int id : before.states()) sts.push_back(random_like(before.value(id), gen));
  TensorList s1, s2;
  TensorList o1 = ir::interpret(before, ins, sts, &s1);
  TensorList o2 = ir::interpret(after, ins, sts, &s2);
  ASSERT_EQ(o1.size(), o2.size());
  for (size_t k = 0; k < o1.size(); ++k) expect_same_tensor(o1[k], o2[k], str("output ", k));
  for (size_t k = 0; k < s1.size(); ++k) expect_same_tensor(s1[k], s2[k], str("state ", k));
}

int count_op(const ir::Graph& g, OpId op) {
  int n = 0;
  for (const ir::Node& node : g.nodes()) n += node.op == op;
  return n;
}

const Tensor& const_of(const ir::Graph& g, int id) { return g.const_data(g.value(id).slot); }

}  // namespace

// ---- dead code elimination -------------------------------------------------------------------

TEST(DeadCodeElimination, KeepsOutputsAssignsAndSlots) {
  // %6, %7: dead chain. %8: feeds the assign. MaxDim: only its indices are used, so the node
  // stays whole. %3 (unused input) and %2 (state read only by dead code) keep their slots;
  // the constant used only by dead code (%4) goes and %5 is renumbered.
  const char* in =
      "graph(%0: float32[2,3] input, %1: float32[3] input, %2: float32[3] state, %3: float32[2,3] input, "
      "%4: float64[] const=2, %5: float64[] const=3) {\n"
      "  %6 = Mul(%0, %4) : float32[2,3]\n"
      "  %7 = Add(%6, %2) : float32[2,3]\n"
      "  %8 = Add(%1, %5) : float32[3]\n"
      "  %9, %10 = MaxDim(%0) {dim=1, keepdim=false} : float32[2], int64[2]\n"
      "  %11 = Exp(%0) : float32[2,3]\n"
      "  %12 = Neg(%11) : float32[2,3]\n"
      "  assign %2 <- %8\n"
      "  return (%10, %11)\n"
      "}\n";
  // The printer lists inputs before states.
  const char* want =
      "graph(%0: float32[2,3] input, %1: float32[3] input, %2: float32[2,3] input, %3: float32[3] state, "
      "%4: float64[] const=3) {\n"
      "  %5 = Add(%1, %4) : float32[3]\n"
      "  %6, %7 = MaxDim(%0) {dim=1, keepdim=false} : float32[2], int64[2]\n"
      "  %8 = Exp(%0) : float32[2,3]\n"
      "  assign %3 <- %5\n"
      "  return (%7, %8)\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  ir::Graph d = ir::dead_code_elimination(g);
  EXPECT_EQ(ir::print(d), want);
  EXPECT_EQ(d.inputs().size(), 3u);
  EXPECT_EQ(d.states().size(), 1u);
  expect_same_results(g, d);
  // Idempotent.
  EXPECT_EQ(ir::print(ir::dead_code_elimination(d)), want);
}

TEST(DeadCodeElimination, AssignedValuesKeepTheirWholeChain) {
  // No outputs at all: everything feeding the last assign to each target stays, in order. The
  // earlier write to %1 is overwritten unseen, so its assign goes; %4 stays because %6 reads it.
  const char* in =
      "graph(%0: float32[4] input, %1: float32[4] state, %2: float64[] const=0.5) {\n"
      "  %3 = Mul(%0, %2) : float32[4]\n"
      "  %4 = Add(%1, %3) : float32[4]\n"
      "  %5 = Neg(%4) : float32[4]\n"
      "  %6 = Sub(%4, %0) : float32[4]\n"
      "  assign %1 <- %4\n"
      "  assign %1 <- %6\n"
      "  return ()\n"
      "}\n";
  const char* want =
      "graph(%0: float32[4] input, %1: float32[4] state, %2: float64[] const=0.5) {\n"
      "  %3 = Mul(%0, %2) : float32[4]\n"
      "  %4 = Add(%1, %3) : float32[4]\n"
      "  %5 = Sub(%4, %0) : float32[4]\n"
      "  assign %1 <- %5\n"
      "  return ()\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  ir::Graph d = ir::dead_code_elimination(g);
  EXPECT_EQ(ir::print(d), want);
  expect_same_results(g, d);
}

TEST(DeadCodeElimination, SupersededAssignsGoWithTheirChains) {
  // Two states each written twice (an optimizer's `v.mul_(b)` then `v.addcmul_(g, g)`): only
  // the last write to each stays, in the original order of those last writes, and the value
  // only the superseded write read (%5) goes with it.
  const char* in =
      "graph(%0: float32[4] input, %1: float32[4] state, %2: float32[4] state) {\n"
      "  %3 = Mul(%1, %0) : float32[4]\n"
      "  %4 = Add(%2, %0) : float32[4]\n"
      "  %5 = Exp(%0) : float32[4]\n"
      "  %6 = Neg(%0) : float32[4]\n"
      "  assign %1 <- %5\n"
      "  assign %2 <- %4\n"
      "  assign %1 <- %3\n"
      "  assign %2 <- %6\n"
      "  return ()\n"
      "}\n";
  const char* want =
      "graph(%0: float32[4] input, %1: float32[4] state, %2: float32[4] state) {\n"
      "  %3 = Mul(%1, %0) : float32[4]\n"
      "  %4 = Neg(%0) : float32[4]\n"
      "  assign %1 <- %3\n"
      "  assign %2 <- %4\n"
      "  return ()\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  ir::Graph d = ir::dead_code_elimination(g);
  EXPECT_EQ(ir::print(d), want);
  expect_same_results(g, d);
}

TEST(DeadCodeElimination, DropsUnusedRandomDraws) {
  // Random ops are pure too (seed and offset are attributes): an unused draw goes.
  const char* in =
      "graph(%0: float32[2] input) {\n"
      "  %1 = Uniform() {shape=[2], dtype=float32, seed=3, offset=0, low=0.0, high=1.0} : float32[2]\n"
      "  %2 = Neg(%0) : float32[2]\n"
      "  return (%2)\n"
      "}\n";
  EXPECT_EQ(ir::print(ir::dead_code_elimination(ir::parse(in))),
            "graph(%0: float32[2] input) {\n"
            "  %1 = Neg(%0) : float32[2]\n"
            "  return (%1)\n"
            "}\n");
}

// ---- common subexpression elimination --------------------------------------------------------

static const char* kCseIn =
    "graph(%0: float32[2,3] input, %1: float32[2,3] input, %2: float64[] const=2, %3: float64[] const=2, "
    "%4: int64[] const=2) {\n"
    "  %5 = Mul(%0, %2) : float32[2,3]\n"
    "  %6 = Mul(%0, %3) : float32[2,3]\n"   // same as %5 once the equal constants merge
    "  %7 = Mul(%0, %4) : float32[2,3]\n"   // int64 constant: another value, kept
    "  %8 = Add(%5, %1) : float32[2,3]\n"
    "  %9 = Add(%6, %1) : float32[2,3]\n"   // same as %8 through %6 == %5
    "  %10 = Add(%1, %5) : float32[2,3]\n"  // operands swapped: not the same node
    "  %11 = Sum(%8) {dims=[1], keepdim=false} : float32[2]\n"
    "  %12 = Sum(%9) {dims=[0], keepdim=false} : float32[3]\n"  // other attributes: kept
    "  %13 = Uniform() {shape=[2,3], dtype=float32, seed=5, offset=0, low=0.0, high=1.0} : float32[2,3]\n"
    "  %14 = Uniform() {shape=[2,3], dtype=float32, seed=5, offset=0, low=0.0, high=1.0} : float32[2,3]\n"
    "  %15 = Fill() {value=0.0, shape=[2,3], dtype=float32} : float32[2,3]\n"
    "  %16 = Fill() {value=-0.0, shape=[2,3], dtype=float32} : float32[2,3]\n"  // -0.0 is not 0.0
    "  %17 = Fill() {value=0.0, shape=[2,3], dtype=float32} : float32[2,3]\n"
    "  %18 = Div(%0, %16) : float32[2,3]\n"
    "  %19 = Div(%0, %17) : float32[2,3]\n"
    "  %20 = Add(%13, %14) : float32[2,3]\n"
    "  %21 = Add(%18, %19) : float32[2,3]\n"  // x/-0 + x/0 = NaN; merged wrongly it would be +-inf
    "  %22 = Add(%7, %10) : float32[2,3]\n"
    "  %23 = Add(%20, %22) : float32[2,3]\n"
    "  return (%11, %12, %23, %21, %15)\n"
    "}\n";

TEST(CommonSubexpressionElimination, MergesEqualNodesAndConstants) {
  // %3 is merged into %2 but keeps its slot until DCE; %6, %9 and %17 merge away. %17 merges
  // into %15 although %15 is a graph output: %17 itself is not one.
  const char* want =
      "graph(%0: float32[2,3] input, %1: float32[2,3] input, %2: float64[] const=2, %3: float64[] const=2, "
      "%4: int64[] const=2) {\n"
      "  %5 = Mul(%0, %2) : float32[2,3]\n"
      "  %6 = Mul(%0, %4) : float32[2,3]\n"
      "  %7 = Add(%5, %1) : float32[2,3]\n"
      "  %8 = Add(%1, %5) : float32[2,3]\n"
      "  %9 = Sum(%7) {dims=[1], keepdim=false} : float32[2]\n"
      "  %10 = Sum(%7) {dims=[0], keepdim=false} : float32[3]\n"
      "  %11 = Uniform() {shape=[2,3], dtype=float32, seed=5, offset=0, low=0.0, high=1.0} : float32[2,3]\n"
      "  %12 = Uniform() {shape=[2,3], dtype=float32, seed=5, offset=0, low=0.0, high=1.0} : float32[2,3]\n"
      "  %13 = Fill() {value=0.0, shape=[2,3], dtype=float32} : float32[2,3]\n"
      "  %14 = Fill() {value=-0.0, shape=[2,3], dtype=float32} : float32[2,3]\n"
      "  %15 = Div(%0, %14) : float32[2,3]\n"
      "  %16 = Div(%0, %13) : float32[2,3]\n"
      "  %17 = Add(%11, %12) : float32[2,3]\n"
      "  %18 = Add(%15, %16) : float32[2,3]\n"
      "  %19 = Add(%6, %8) : float32[2,3]\n"
      "  %20 = Add(%17, %19) : float32[2,3]\n"
      "  return (%9, %10, %20, %18, %13)\n"
      "}\n";
  ir::Graph g = ir::parse(kCseIn);
  ir::Graph c = ir::common_subexpression_elimination(g);
  EXPECT_EQ(ir::print(c), want);
  expect_same_results(g, c);
  // DCE then drops the merged-away constant.
  ir::Graph cd = ir::dead_code_elimination(c);
  EXPECT_EQ(ir::print(cd),
            "graph(%0: float32[2,3] input, %1: float32[2,3] input, %2: float64[] const=2, %3: int64[] const=2) {\n"
            "  %4 = Mul(%0, %2) : float32[2,3]\n"
            "  %5 = Mul(%0, %3) : float32[2,3]\n"
            "  %6 = Add(%4, %1) : float32[2,3]\n"
            "  %7 = Add(%1, %4) : float32[2,3]\n"
            "  %8 = Sum(%6) {dims=[1], keepdim=false} : float32[2]\n"
            "  %9 = Sum(%6) {dims=[0], keepdim=false} : float32[3]\n"
            "  %10 = Uniform() {shape=[2,3], dtype=float32, seed=5, offset=0, low=0.0, high=1.0} : float32[2,3]\n"
            "  %11 = Uniform() {shape=[2,3], dtype=float32, seed=5, offset=0, low=0.0, high=1.0} : float32[2,3]\n"
            "  %12 = Fill() {value=0.0, shape=[2,3], dtype=float32} : float32[2,3]\n"
            "  %13 = Fill() {value=-0.0, shape=[2,3], dtype=float32} : float32[2,3]\n"
            "  %14 = Div(%0, %13) : float32[2,3]\n"
            "  %15 = Div(%0, %12) : float32[2,3]\n"
            "  %16 = Add(%10, %11) : float32[2,3]\n"
            "  %17 = Add(%14, %15) : float32[2,3]\n"
            "  %18 = Add(%5, %7) : float32[2,3]\n"
            "  %19 = Add(%16, %18) : float32[2,3]\n"
            "  return (%8, %9, %19, %17, %12)\n"
            "}\n");
  expect_same_results(g, cd);
}

TEST(CommonSubexpressionElimination, DistinctOutputsStayDistinct) {
  // Two equal nodes that are both graph outputs stay two nodes (eager gives two tensors);
  // a third equal node that is not an output merges into the first.
  const char* in =
      "graph(%0: float32[3] input) {\n"
      "  %1 = Neg(%0) : float32[3]\n"
      "  %2 = Neg(%0) : float32[3]\n"
      "  %3 = Neg(%0) : float32[3]\n"
      "  %4 = Exp(%3) : float32[3]\n"
      "  return (%1, %2, %4)\n"
      "}\n";
  const char* want =
      "graph(%0: float32[3] input) {\n"
      "  %1 = Neg(%0) : float32[3]\n"
      "  %2 = Neg(%0) : float32[3]\n"
      "  %3 = Exp(%1) : float32[3]\n"
      "  return (%1, %2, %3)\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  EXPECT_EQ(ir::print(ir::common_subexpression_elimination(g)), want);
  expect_same_results(g, ir::common_subexpression_elimination(g));
}

TEST(CommonSubexpressionElimination, RandomDrawsWithConstantInputsNeverMerge) {
  const char* in =
      "graph(%0: float64[] const=0.5) {\n"
      "  %1 = Bernoulli(%0) {shape=[4], dtype=float32, seed=1, offset=0} : float32[4]\n"
      "  %2 = Bernoulli(%0) {shape=[4], dtype=float32, seed=1, offset=0} : float32[4]\n"
      "  %3 = Add(%1, %2) : float32[4]\n"
      "  return (%3)\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  EXPECT_EQ(ir::print(ir::common_subexpression_elimination(g)), in);
}

TEST(CommonSubexpressionElimination, ConstantsMergeOnlyWithEqualBytesAndPromotion) {
  ir::Graph g;
  int x = g.add_input({3}, DType::Float32);
  Tensor data = rand({3}, DType::Float32);
  int a = g.add_const(data);
  int b = g.add_const(cast(data, DType::Float32));  // another tensor, same bytes: merges with a
  Tensor other = cast(data, DType::Float32);
  other.data<float>()[2] += 1.0f;
  int c = g.add_const(other);                      // one element differs: kept
  int w = g.add_const(scalar_tensor(2.0));         // a wrapped Python scalar...
  int p = g.add_const(full({}, 2.0, DType::Float64));  // ...and a plain 0-d tensor: promote differently
  int ya = g.add_node(OpId::Add, {x, a}, {}, {{{3}, DType::Float32}})[0];
  int yb = g.add_node(OpId::Add, {x, b}, {}, {{{3}, DType::Float32}})[0];
  int yc = g.add_node(OpId::Add, {x, c}, {}, {{{3}, DType::Float32}})[0];
  int yw = g.add_node(OpId::Mul, {ya, w}, {}, {{{3}, DType::Float32}})[0];
  int yp = g.add_node(OpId::Mul, {yb, p}, {}, {{{3}, DType::Float32}})[0];
  int s = g.add_node(OpId::Add, {yc, yw}, {}, {{{3}, DType::Float32}})[0];
  g.set_outputs({g.add_node(OpId::Add, {s, yp}, {}, {{{3}, DType::Float32}})[0]});
  ir::verify(g);
  ir::Graph d = ir::dead_code_elimination(ir::common_subexpression_elimination(g));
  EXPECT_EQ(ir::print(d),
            "graph(%0: float32[3] input, %1: float32[3] const, %2: float32[3] const, %3: float64[] scalar=2, "
            "%4: float64[] const=2) {\n"
            "  %5 = Add(%0, %1) : float32[3]\n"
            "  %6 = Add(%0, %2) : float32[3]\n"
            "  %7 = Mul(%5, %3) : float32[3]\n"
            "  %8 = Mul(%5, %4) : float32[3]\n"
            "  %9 = Add(%6, %7) : float32[3]\n"
            "  %10 = Add(%9, %8) : float32[3]\n"
            "  return (%10)\n"
            "}\n");
  EXPECT_TRUE(const_of(d, d.consts()[1]) == other);
  EXPECT_TRUE(const_of(d, d.consts()[2]).impl()->is_wrapped_number);
  EXPECT_FALSE(const_of(d, d.consts()[3]).impl()->is_wrapped_number);
  expect_same_results(g, d);
}

TEST(CommonSubexpressionElimination, FusedNodesMergeOnlyWithEqualBodies) {
  // Bodies built separately but equal merge; a body with another op does not.
  auto body = [](OpId op) {
    auto b = std::make_shared<ir::Graph>();
    int in = b->add_input({2, 3}, DType::Float32);
    int e = b->add_node(op, {in}, {}, {{{2, 3}, DType::Float32}})[0];
    b->set_outputs({b->add_node(OpId::Mul, {e, in}, {}, {{{2, 3}, DType::Float32}})[0]});
    return std::shared_ptr<const ir::Graph>(b);
  };
  ir::Graph g;
  int x = g.add_input({2, 3}, DType::Float32);
  int f1 = g.add_fused({x}, body(OpId::Exp), {{{2, 3}, DType::Float32}})[0];
  int f2 = g.add_fused({x}, body(OpId::Exp), {{{2, 3}, DType::Float32}})[0];
  int f3 = g.add_fused({x}, body(OpId::Neg), {{{2, 3}, DType::Float32}})[0];
  int s = g.add_node(OpId::Add, {f1, f2}, {}, {{{2, 3}, DType::Float32}})[0];
  g.set_outputs({g.add_node(OpId::Add, {s, f3}, {}, {{{2, 3}, DType::Float32}})[0]});
  ir::Graph c = ir::common_subexpression_elimination(g);
  EXPECT_EQ(ir::print(c),
            "graph(%0: float32[2,3] input) {\n"
            "  %1 = FusedElementwise(%0) : float32[2,3] {\n"
            "    graph(%0: float32[2,3] input) {\n"
            "      %1 = Exp(%0) : float32[2,3]\n"
            "      %2 = Mul(%1, %0) : float32[2,3]\n"
            "      return (%2)\n"
            "    }\n"
            "  }\n"
            "  %2 = FusedElementwise(%0) : float32[2,3] {\n"
            "    graph(%0: float32[2,3] input) {\n"
            "      %1 = Neg(%0) : float32[2,3]\n"
            "      %2 = Mul(%1, %0) : float32[2,3]\n"
            "      return (%2)\n"
            "    }\n"
            "  }\n"
            "  %3 = Add(%1, %1) : float32[2,3]\n"
            "  %4 = Add(%3, %2) : float32[2,3]\n"
            "  return (%4)\n"
            "}\n");
  EXPECT_EQ(c.nodes()[1].body->nodes()[0].op, OpId::Neg);
  expect_same_results(g, c);
}

// ---- constant folding ------------------------------------------------------------------------

TEST(ConstantFolding, FoldsScalarExpressionsAndCreationOps) {
  // Parsed constants are plain 0-d tensors, so float64 + float64 stays float64.
  const char* in =
      "graph(%0: float32[2,3] input, %1: float32[3] state, %2: float64[] const=0.5, %3: float64[] const=4.5) {\n"
      "  %4 = Add(%2, %3) : float64[]\n"
      "  %5 = Mul(%4, %4) : float64[]\n"
      "  %6 = Fill() {value=1.5, shape=[], dtype=float32} : float32[]\n"
      "  %7 = Mul(%0, %5) : float32[2,3]\n"
      "  %8 = Add(%7, %6) : float32[2,3]\n"
      "  %9 = Neg(%1) : float32[3]\n"              // reads a state: not a constant
      "  %10 = Add(%8, %9) : float32[2,3]\n"
      "  %11 = Uniform() {shape=[], dtype=float32, seed=9, offset=4, low=0.0, high=1.0} : float32[]\n"
      "  %12 = Neg(%11) : float32[]\n"             // a random draw is not a constant
      "  %13 = Bernoulli(%2) {shape=[3], dtype=float32, seed=1, offset=0} : float32[3]\n"
      "  %14 = Add(%10, %12) : float32[2,3]\n"
      "  %15 = Add(%14, %13) : float32[2,3]\n"
      "  return (%15)\n"
      "}\n";
  const char* want =
      "graph(%0: float32[2,3] input, %1: float32[3] state, %2: float64[] const=0.5, %3: float64[] const=4.5, "
      "%4: float64[] const=5, %5: float64[] const=25, %6: float32[] const=1.5) {\n"
      "  %7 = Mul(%0, %5) : float32[2,3]\n"
      "  %8 = Add(%7, %6) : float32[2,3]\n"
      "  %9 = Neg(%1) : float32[3]\n"
      "  %10 = Add(%8, %9) : float32[2,3]\n"
      "  %11 = Uniform() {shape=[], dtype=float32, seed=9, offset=4, low=0.0, high=1.0} : float32[]\n"
      "  %12 = Neg(%11) : float32[]\n"
      "  %13 = Bernoulli(%2) {shape=[3], dtype=float32, seed=1, offset=0} : float32[3]\n"
      "  %14 = Add(%10, %12) : float32[2,3]\n"
      "  %15 = Add(%14, %13) : float32[2,3]\n"
      "  return (%15)\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  ir::Graph f = ir::constant_folding(g);
  EXPECT_EQ(ir::print(f), want);
  expect_same_results(g, f);
  // Folding is done; DCE drops the inputs of the folded nodes (4.5 and 5) but keeps 0.5, which
  // the Bernoulli draw reads.
  ir::Graph fd = ir::dead_code_elimination(f);
  EXPECT_EQ(ir::print(fd),
            "graph(%0: float32[2,3] input, %1: float32[3] state, %2: float64[] const=0.5, %3: float64[] const=25, "
            "%4: float32[] const=1.5) {\n"
            "  %5 = Mul(%0, %3) : float32[2,3]\n"
            "  %6 = Add(%5, %4) : float32[2,3]\n"
            "  %7 = Neg(%1) : float32[3]\n"
            "  %8 = Add(%6, %7) : float32[2,3]\n"
            "  %9 = Uniform() {shape=[], dtype=float32, seed=9, offset=4, low=0.0, high=1.0} : float32[]\n"
            "  %10 = Neg(%9) : float32[]\n"
            "  %11 = Bernoulli(%2) {shape=[3], dtype=float32, seed=1, offset=0} : float32[3]\n"
            "  %12 = Add(%8, %10) : float32[2,3]\n"
            "  %13 = Add(%12, %11) : float32[2,3]\n"
            "  return (%13)\n"
            "}\n");
  expect_same_results(g, fd);
}

TEST(ConstantFolding, TensorConstantsViewsAndLimits) {
  // Built in C++: the text form does not carry multi-element payloads.
  ir::Graph g;
  int x = g.add_input({2, 3}, DType::Float32);
  int w = g.add_state({2, 3}, DType::Float32);
  Tensor a_data = rand({2, 3}, DType::Float32);
  int a = g.add_const(a_data);
  int s = g.add_const(scalar_tensor(2.0));  // a wrapped Python scalar, as the tracer records it
  const std::vector<TensorMeta> f23{{{2, 3}, DType::Float32}}, f32{{{3, 2}, DType::Float32}}, f3{{{3}, DType::Float32}};
  int m = g.add_node(OpId::Mul, {a, s}, {}, f23)[0];                        // folds
  int t = g.add_node(OpId::Permute, {m}, {{"dims", IntList{1, 0}}}, f32)[0];  // view of a constant: folds
  int u = g.add_node(OpId::Permute, {t}, {{"dims", IntList{1, 0}}}, f23)[0];  // folds to a contiguous copy
  int ar = g.add_node(OpId::Arange, {}, {{"start", 0.0}, {"end", 3.0}, {"step", 1.0}, {"dtype", DType::Float32}}, f3)[0];
  int e = g.add_node(OpId::Expand, {ar}, {{"shape", IntList{2, 3}}}, f23)[0];  // a growing view: stays
  int ws = g.add_node(OpId::Mul, {w, s}, {}, f23)[0];                          // state: stays
  int o = g.add_node(OpId::Neg, {a}, {}, f23)[0];                              // graph output: stays
  int y = g.add_node(OpId::Add, {x, u}, {}, f23)[0];
  y = g.add_node(OpId::Add, {y, e}, {}, f23)[0];
  y = g.add_node(OpId::Add, {y, ws}, {}, f23)[0];
  g.set_outputs({y, o});
  ir::verify(g);

  ir::Graph f = ir::constant_folding(g);
  EXPECT_EQ(ir::print(f),
            "graph(%0: float32[2,3] input, %1: float32[2,3] state, %2: float32[2,3] const, %3: float64[] scalar=2, "
            "%4: float32[2,3] const, %5: float32[3,2] const, %6: float32[2,3] const, %7: float32[3] const) {\n"
            "  %8 = Expand(%7) {shape=[2,3]} : float32[2,3]\n"
            "  %9 = Mul(%1, %3) : float32[2,3]\n"
            "  %10 = Neg(%2) : float32[2,3]\n"
            "  %11 = Add(%0, %6) : float32[2,3]\n"
            "  %12 = Add(%11, %8) : float32[2,3]\n"
            "  %13 = Add(%12, %9) : float32[2,3]\n"
            "  return (%13, %10)\n"
            "}\n");
  // Payloads against eager ops: a * 2 (float32, the scalar is a wrapped number) and arange.
  Tensor want = mul(a_data, scalar_tensor(2.0));
  expect_same_tensor(const_of(f, f.consts()[2]), want, "folded Mul");
  expect_same_tensor(const_of(f, f.consts()[3]), permute(want, {1, 0}), "folded Permute");
  expect_same_tensor(const_of(f, f.consts()[4]), want, "folded Permute of Permute");
  expect_same_tensor(const_of(f, f.consts()[5]), arange(0, 3, 1, DType::Float32), "folded Arange");
  for (int k = 3; k <= 4; ++k) {
    const Tensor& c = const_of(f, f.consts()[k]);
    EXPECT_FALSE(c.impl()->is_view) << k;
    EXPECT_TRUE(c.is_contiguous()) << k;
    EXPECT_FALSE(c.same_storage(const_of(f, f.consts()[2]))) << k;
  }
  expect_same_results(g, f);

  // DCE drops the intermediate constants (%4, %5) but keeps the one the output reads.
  ir::Graph fd = ir::dead_code_elimination(f);
  EXPECT_EQ(ir::print(fd),
            "graph(%0: float32[2,3] input, %1: float32[2,3] state, %2: float32[2,3] const, %3: float64[] scalar=2, "
            "%4: float32[2,3] const, %5: float32[3] const) {\n"
            "  %6 = Expand(%5) {shape=[2,3]} : float32[2,3]\n"
            "  %7 = Mul(%1, %3) : float32[2,3]\n"
            "  %8 = Neg(%2) : float32[2,3]\n"
            "  %9 = Add(%0, %4) : float32[2,3]\n"
            "  %10 = Add(%9, %6) : float32[2,3]\n"
            "  %11 = Add(%10, %7) : float32[2,3]\n"
            "  return (%11, %8)\n"
            "}\n");
  expect_same_results(g, fd);
}

TEST(ConstantFolding, ObservableValuesStayFreshPerCall) {
  // %1 is an output's view base (through Reshape) and %3 is assigned: neither folds, so every
  // call gets fresh tensors. %4 only feeds an output through a non-view op: it folds.
  const char* in =
      "graph(%0: float32[2,3] state) {\n"
      "  %1 = Arange() {start=0.0, end=6.0, step=1.0, dtype=float32} : float32[6]\n"
      "  %2 = Reshape(%1) {shape=[2,3]} : float32[2,3]\n"
      "  %3 = Fill() {value=1.0, shape=[2,3], dtype=float32} : float32[2,3]\n"
      "  %4 = Fill() {value=2.0, shape=[2,3], dtype=float32} : float32[2,3]\n"
      "  %5 = Neg(%4) : float32[2,3]\n"
      "  assign %0 <- %3\n"
      "  return (%2, %5)\n"
      "}\n";
  const char* want =
      "graph(%0: float32[2,3] state, %1: float32[2,3] const) {\n"
      "  %2 = Arange() {start=0.0, end=6.0, step=1.0, dtype=float32} : float32[6]\n"
      "  %3 = Reshape(%2) {shape=[2,3]} : float32[2,3]\n"
      "  %4 = Fill() {value=1.0, shape=[2,3], dtype=float32} : float32[2,3]\n"
      "  %5 = Neg(%1) : float32[2,3]\n"
      "  assign %0 <- %4\n"
      "  return (%3, %5)\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  ir::Graph f = ir::constant_folding(g);
  EXPECT_EQ(ir::print(f), want);
  expect_same_results(g, f);
}

TEST(ConstantFolding, SizeCapEmptyAndFailingNodes) {
  // 1<<20 elements fold; one row more does not. Empty has no value to fold. A node whose
  // evaluation raises (step=0) is kept for the runtime to raise at call time.
  const char* in =
      "graph() {\n"
      "  %0 = Fill() {value=1.0, shape=[1024,1024], dtype=float32} : float32[1024,1024]\n"
      "  %1 = Fill() {value=1.0, shape=[1025,1024], dtype=float32} : float32[1025,1024]\n"
      "  %2 = Empty() {shape=[2], dtype=float32} : float32[2]\n"
      "  %3 = Arange() {start=0.0, end=3.0, step=0.0, dtype=float32} : float32[3]\n"
      "  %4 = Neg(%0) : float32[1024,1024]\n"
      "  %5 = Neg(%1) : float32[1025,1024]\n"
      "  %6 = Neg(%2) : float32[2]\n"
      "  %7 = Neg(%3) : float32[3]\n"
      "  return (%4, %5, %6, %7)\n"
      "}\n";
  const char* want =
      "graph(%0: float32[1024,1024] const) {\n"
      "  %1 = Fill() {value=1.0, shape=[1025,1024], dtype=float32} : float32[1025,1024]\n"
      "  %2 = Empty() {shape=[2], dtype=float32} : float32[2]\n"
      "  %3 = Arange() {start=0.0, end=3.0, step=0.0, dtype=float32} : float32[3]\n"
      "  %4 = Neg(%0) : float32[1024,1024]\n"
      "  %5 = Neg(%1) : float32[1025,1024]\n"
      "  %6 = Neg(%2) : float32[2]\n"
      "  %7 = Neg(%3) : float32[3]\n"
      "  return (%4, %5, %6, %7)\n"
      "}\n";
  EXPECT_EQ(ir::print(ir::constant_folding(ir::parse(in))), want);
}

TEST(ConstantFolding, FusedNodeOverConstantsFolds) {
  auto body = std::make_shared<ir::Graph>();
  int bi = body->add_input({3}, DType::Float32);
  int be = body->add_node(OpId::Exp, {bi}, {}, {{{3}, DType::Float32}})[0];
  body->set_outputs({body->add_node(OpId::Neg, {be}, {}, {{{3}, DType::Float32}})[0]});
  ir::Graph g;
  int x = g.add_input({3}, DType::Float32);
  Tensor c_data = rand({3}, DType::Float32);
  int c = g.add_const(c_data);
  int fu = g.add_fused({c}, body, {{{3}, DType::Float32}})[0];
  g.set_outputs({g.add_node(OpId::Add, {x, fu}, {}, {{{3}, DType::Float32}})[0]});
  ir::Graph f = ir::constant_folding(g);
  EXPECT_EQ(count_op(f, OpId::FusedElementwise), 0);
  expect_same_tensor(const_of(f, f.consts()[1]), neg(dispatch1(OpId::Exp, {c_data})), "folded body");
  expect_same_results(g, f);
}

// ---- algebraic simplification ----------------------------------------------------------------

TEST(AlgebraicSimplification, IdentityOperationsBecomeTheirOperand) {
  // Replaced: %7..%11 (-> %0), %14 (-> %1), %18 (-> %17), %20 (-> %0, an all-ones tensor).
  // Kept: 0 - x (%12), int * 1.0 (%13, promotes to float), int / 1 (%15, float), the view base
  // of an output (%17), a real reshape (%19), a broadcasting multiply (%21), an output (%26).
  const char* in =
      "graph(%0: float32[2,3] input, %1: int32[2,3] input, %2: float32[3] input, %3: float64[] const=1, "
      "%4: float64[] const=0, %5: int64[] const=1, %6: float32[2,3] const=1) {\n"
      "  %7 = Mul(%0, %3) : float32[2,3]\n"
      "  %8 = Mul(%3, %7) : float32[2,3]\n"
      "  %9 = Add(%8, %4) : float32[2,3]\n"
      "  %10 = Sub(%9, %4) : float32[2,3]\n"
      "  %11 = Div(%10, %3) : float32[2,3]\n"
      "  %12 = Sub(%4, %11) : float32[2,3]\n"
      "  %13 = Mul(%1, %3) : float32[2,3]\n"
      "  %14 = Mul(%1, %5) : int32[2,3]\n"
      "  %15 = Div(%14, %5) : float32[2,3]\n"
      "  %16 = Neg(%12) : float32[2,3]\n"
      "  %17 = Neg(%16) : float32[2,3]\n"
      "  %18 = Reshape(%17) {shape=[2,3]} : float32[2,3]\n"
      "  %19 = Reshape(%17) {shape=[3,2]} : float32[3,2]\n"
      "  %20 = Mul(%0, %6) : float32[2,3]\n"
      "  %21 = Mul(%2, %6) : float32[2,3]\n"
      "  %22 = Add(%18, %20) : float32[2,3]\n"
      "  %23 = Add(%22, %13) : float32[2,3]\n"
      "  %24 = Add(%23, %15) : float32[2,3]\n"
      "  %25 = Add(%24, %21) : float32[2,3]\n"
      "  %26 = Mul(%25, %3) : float32[2,3]\n"
      "  return (%26, %19)\n"
      "}\n";
  const char* want =
      "graph(%0: float32[2,3] input, %1: int32[2,3] input, %2: float32[3] input, %3: float64[] const=1, "
      "%4: float64[] const=0, %5: int64[] const=1, %6: float32[2,3] const) {\n"
      "  %7 = Sub(%4, %0) : float32[2,3]\n"
      "  %8 = Mul(%1, %3) : float32[2,3]\n"
      "  %9 = Div(%1, %5) : float32[2,3]\n"
      "  %10 = Neg(%7) : float32[2,3]\n"
      "  %11 = Neg(%10) : float32[2,3]\n"
      "  %12 = Reshape(%11) {shape=[3,2]} : float32[3,2]\n"
      "  %13 = Mul(%2, %6) : float32[2,3]\n"
      "  %14 = Add(%11, %0) : float32[2,3]\n"
      "  %15 = Add(%14, %8) : float32[2,3]\n"
      "  %16 = Add(%15, %9) : float32[2,3]\n"
      "  %17 = Add(%16, %13) : float32[2,3]\n"
      "  %18 = Mul(%17, %3) : float32[2,3]\n"
      "  return (%18, %12)\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  ir::Graph s = ir::algebraic_simplification(g);
  EXPECT_EQ(ir::print(s), want);
  expect_same_results(g, s);
}

TEST(AlgebraicSimplification, DoubleNegationAndNonIdentityConstants) {
  // -(-x) -> x (the inner Neg is left for DCE); x * 2, x + 1, x * [1, 2] stay.
  const char* in =
      "graph(%0: float32[2] input, %1: float64[] const=2, %2: float64[] const=1) {\n"
      "  %3 = Neg(%0) : float32[2]\n"
      "  %4 = Neg(%3) : float32[2]\n"
      "  %5 = Mul(%4, %1) : float32[2]\n"
      "  %6 = Add(%5, %2) : float32[2]\n"
      "  %7 = Exp(%6) : float32[2]\n"
      "  return (%7)\n"
      "}\n";
  const char* want =
      "graph(%0: float32[2] input, %1: float64[] const=2, %2: float64[] const=1) {\n"
      "  %3 = Mul(%0, %1) : float32[2]\n"
      "  %4 = Add(%3, %2) : float32[2]\n"
      "  %5 = Exp(%4) : float32[2]\n"
      "  return (%5)\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  ir::Graph s = ir::dead_code_elimination(ir::algebraic_simplification(g));
  EXPECT_EQ(ir::print(s), want);
  expect_same_results(g, s);

  ir::Graph h;
  int x = h.add_input({2}, DType::Float32);
  Tensor one_two = full({2}, 1.0, DType::Float32);
  one_two.data<float>()[1] = 2.0f;
  int c = h.add_const(one_two);
  int m = h.add_node(OpId::Mul, {x, c}, {}, {{{2}, DType::Float32}})[0];
  h.set_outputs({h.add_node(OpId::Exp, {m}, {}, {{{2}, DType::Float32}})[0]});
  EXPECT_EQ(ir::print(ir::algebraic_simplification(h)), ir::print(h));
}
