// Elementwise fusion: the grouping pass as IR text (what groups, what must not: different shapes,
// a cycle), the FusedElementwise body's text round trip, hash and verifier, and the block
// interpreter (run_fused) against the reference interpreter running the unfused graph op by op
// through eager dispatch: bit-exact for float32, float64, float16, int and bool ops, ops with
// attributes (gelu, clamp, masked_fill...), with broadcast and strided inputs, wrapped scalar
// constants, multi-output groups and in-place outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "lucid/compile/ir/interpret.h"
#include "lucid/compile/passes/passes.h"
#include "lucid/backends/cpu/compile/fused_ew.h"
#include "lucid/compile/trace/tracer.h"
#include "lucid/dispatch/dispatch.h"
#include "lucid/ops/creation.h"
#include "lucid/ops/elementwise.h"

using namespace lucid;

namespace {

Tensor random_tensor(const Shape& shape, DType dt) {
  if (is_floating(dt)) return cast(randn(shape, DType::Float64), dt);
  if (dt == DType::Bool) return gt(randn(shape, DType::Float32), scalar_tensor(0.0));
  return randint(-6, 7, shape, dt);
}

// Byte-equal tensors (same shape and dtype); names the first differing element.
void expect_bit_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  Tensor a = got.contiguous_data(), b = want.contiguous_data();
  size_t isz = itemsize(a.dtype());
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(static_cast<char*>(a.data_ptr()) + i * isz, static_cast<char*>(b.data_ptr()) + i * isz, isz) == 0)
      continue;
    Tensor ga = cast(a, DType::Float64), wb = cast(b, DType::Float64);
    FAIL() << what << ": element " << i << " is " << ga.data<double>()[i] << ", expected " << wb.data<double>()[i];
  }
}

// Runs g with FusedElementwise nodes on run_fused and every other node through dispatch: the
// shape of the executable the runtime will build, in a dozen lines.
TensorList run_with_block_interpreter(const ir::Graph& g, const TensorList& inputs, const TensorList& states) {
  std::vector<Tensor> v(g.values().size());
  for (size_t i = 0; i < inputs.size(); ++i) v[g.inputs()[i]] = inputs[i];
  for (size_t i = 0; i < states.size(); ++i) v[g.states()[i]] = states[i];
  for (int id : g.consts()) v[id] = g.const_data(g.value(id).slot);
  for (const ir::Node& n : g.nodes()) {
    TensorList ins, outs;
    for (int in : n.inputs) ins.push_back(in < 0 ? Tensor() : v[in]);
    if (n.body) {
      for (int o : n.outputs) outs.push_back(Tensor::empty(g.value(o).shape, g.value(o).dtype));
      run_fused(FusedProgram(*n.body, wrapped_inputs(g, n)), ins, outs);
    } else {
      outs = dispatch(n.op, ins, n.attrs);
    }
    for (size_t k = 0; k < outs.size(); ++k) v[n.outputs[k]] = outs[k];
  }
  TensorList r;
  for (int id : g.outputs()) r.push_back(v[id]);
  return r;
}

int count_fused(const ir::Graph& g) {
  int n = 0;
  for (const ir::Node& node : g.nodes()) n += node.body != nullptr;
  return n;
}

// The pass on IR text: the expected text, and the grouped graph computes what the original does
// (reference interpreter on both, and the block interpreter on the grouped one).
void check_pass(const std::string& in, const std::string& expected) {
  ir::Graph g = ir::parse(in);
  ir::Graph p = ir::group_elementwise(g);
  ir::verify(p);
  EXPECT_EQ(ir::print(p), expected);
  EXPECT_EQ(ir::print(ir::parse(ir::print(p))), ir::print(p));
  TensorList inputs, states, s_ref, s_grouped;
  for (int id : g.inputs()) inputs.push_back(random_tensor(g.value(id).shape, g.value(id).dtype));
  for (int id : g.states()) states.push_back(random_tensor(g.value(id).shape, g.value(id).dtype));
  TensorList ref = ir::interpret(g, inputs, states, &s_ref);
  TensorList grouped = ir::interpret(p, inputs, states, &s_grouped);
  TensorList block = run_with_block_interpreter(p, inputs, states);
  for (size_t k = 0; k < ref.size(); ++k) {
    expect_bit_equal(grouped[k], ref[k], str("interpret(grouped) output ", k));
    expect_bit_equal(block[k], ref[k], str("block interpreter output ", k));
  }
  for (size_t k = 0; k < s_ref.size(); ++k) expect_bit_equal(s_grouped[k], s_ref[k], str("state ", k));
}

}  // namespace

// ---- the grouping pass, as IR text ---------------------------------------------------------------

TEST(EwGroup, ChainWithBroadcastInputAndScalarConstant) {
  check_pass(
      "graph(%0: float32[2,3] input, %1: float32[3] input, %2: float64[] const=0.5) {\n"
      "  %3 = Add(%0, %1) : float32[2,3]\n"
      "  %4 = Mul(%3, %2) : float32[2,3]\n"
      "  %5 = Exp(%4) : float32[2,3]\n"
      "  return (%5)\n"
      "}\n",
      "graph(%0: float32[2,3] input, %1: float32[3] input, %2: float64[] const=0.5) {\n"
      "  %3 = FusedElementwise(%0, %1, %2) : float32[2,3] {\n"
      "    graph(%0: float32[2,3] input, %1: float32[3] input, %2: float64[] input) {\n"
      "      %3 = Add(%0, %1) : float32[2,3]\n"
      "      %4 = Mul(%3, %2) : float32[2,3]\n"
      "      %5 = Exp(%4) : float32[2,3]\n"
      "      return (%5)\n"
      "    }\n"
      "  }\n"
      "  return (%3)\n"
      "}\n");
}

TEST(EwGroup, ValuesUsedOutsideBecomeOutputsAndUsersMoveAfterTheGroup) {
  // %2 feeds Softmax (outside), %4 and %5 are graph outputs. Softmax came before Mul; it now
  // follows the group, which must run first.
  check_pass(
      "graph(%0: float32[4,5] input, %1: float32[4,5] input) {\n"
      "  %2 = Exp(%0) : float32[4,5]\n"
      "  %3 = Softmax(%2) {dim=1} : float32[4,5]\n"
      "  %4 = Mul(%2, %1) : float32[4,5]\n"
      "  %5 = Add(%4, %2) : float32[4,5]\n"
      "  %6 = Sub(%3, %0) : float32[4,5]\n"
      "  return (%4, %5, %6)\n"
      "}\n",
      "graph(%0: float32[4,5] input, %1: float32[4,5] input) {\n"
      "  %2, %3, %4 = FusedElementwise(%0, %1) : float32[4,5], float32[4,5], float32[4,5] {\n"
      "    graph(%0: float32[4,5] input, %1: float32[4,5] input) {\n"
      "      %2 = Exp(%0) : float32[4,5]\n"
      "      %3 = Mul(%2, %1) : float32[4,5]\n"
      "      %4 = Add(%3, %2) : float32[4,5]\n"
      "      return (%2, %3, %4)\n"
      "    }\n"
      "  }\n"
      "  %5 = Softmax(%2) {dim=1} : float32[4,5]\n"
      "  %6 = Sub(%5, %0) : float32[4,5]\n"
      "  return (%3, %4, %6)\n"
      "}\n");
}

TEST(EwGroup, TwoChainsJoinInOneGroup) {
  check_pass(
      "graph(%0: float64[4,5] input, %1: float64[4,5] input) {\n"
      "  %2 = Exp(%0) : float64[4,5]\n"
      "  %3 = Sigmoid(%1) : float64[4,5]\n"
      "  %4 = Add(%2, %3) : float64[4,5]\n"
      "  return (%4)\n"
      "}\n",
      "graph(%0: float64[4,5] input, %1: float64[4,5] input) {\n"
      "  %2 = FusedElementwise(%0, %1) : float64[4,5] {\n"
      "    graph(%0: float64[4,5] input, %1: float64[4,5] input) {\n"
      "      %2 = Exp(%0) : float64[4,5]\n"
      "      %3 = Sigmoid(%1) : float64[4,5]\n"
      "      %4 = Add(%2, %3) : float64[4,5]\n"
      "      return (%4)\n"
      "    }\n"
      "  }\n"
      "  return (%2)\n"
      "}\n");
}

TEST(EwGroup, AssignedValueIsAGroupOutput) {
  check_pass(
      "graph(%0: float32[3] input, %1: float32[3] state) {\n"
      "  %2 = Mul(%1, %0) : float32[3]\n"
      "  %3 = Add(%2, %0) : float32[3]\n"
      "  assign %1 <- %2\n"
      "  return (%3)\n"
      "}\n",
      "graph(%0: float32[3] input, %1: float32[3] state) {\n"
      "  %2, %3 = FusedElementwise(%1, %0) : float32[3], float32[3] {\n"
      "    graph(%0: float32[3] input, %1: float32[3] input) {\n"
      "      %2 = Mul(%0, %1) : float32[3]\n"
      "      %3 = Add(%2, %1) : float32[3]\n"
      "      return (%2, %3)\n"
      "    }\n"
      "  }\n"
      "  assign %1 <- %2\n"
      "  return (%3)\n"
      "}\n");
}

TEST(EwGroup, ScalarLeavesShareOneGroupAndCastsJoin) {
  // Two optimizer-like step counts (state + 1, cast to float64, beta^step), unrelated but both
  // computed from inputs, states and constants only: one group of their own, with the casts in
  // it. The 0-d Mul also reads the Sum, so it is not a leaf and stays out.
  check_pass(
      "graph(%0: float32[4] input, %1: float64[] input, %2: float32[] state, %3: float32[] state, %4: int64[] scalar=1) {\n"
      "  %5 = Add(%2, %4) : float32[]\n"
      "  %6 = Copy(%5) {dtype=float64} : float64[]\n"
      "  %7 = Pow(%1, %6) : float64[]\n"
      "  %8 = Sum(%0) {dims=[0], keepdim=false} : float32[]\n"
      "  %9 = Add(%3, %4) : float32[]\n"
      "  %10 = Copy(%9) {dtype=float64} : float64[]\n"
      "  %11 = Pow(%1, %10) : float64[]\n"
      "  %12 = Mul(%8, %7) : float64[]\n"
      "  %13 = Mul(%0, %11) : float32[4]\n"
      "  assign %2 <- %5\n"
      "  assign %3 <- %9\n"
      "  return (%12, %13)\n"
      "}\n",
      "graph(%0: float32[4] input, %1: float64[] input, %2: float32[] state, %3: float32[] state, %4: int64[] scalar=1) {\n"
      "  %5, %6, %7, %8 = FusedElementwise(%2, %4, %1, %3) : float32[], float64[], float32[], float64[] {\n"
      "    graph(%0: float32[] input, %1: int64[] input, %2: float64[] input, %3: float32[] input) {\n"
      "      %4 = Add(%0, %1) : float32[]\n"
      "      %5 = Copy(%4) {dtype=float64} : float64[]\n"
      "      %6 = Pow(%2, %5) : float64[]\n"
      "      %7 = Add(%3, %1) : float32[]\n"
      "      %8 = Copy(%7) {dtype=float64} : float64[]\n"
      "      %9 = Pow(%2, %8) : float64[]\n"
      "      return (%4, %6, %7, %9)\n"
      "    }\n"
      "  }\n"
      "  %9 = Sum(%0) {dims=[0], keepdim=false} : float32[]\n"
      "  %10 = Mul(%9, %6) : float64[]\n"
      "  %11 = Mul(%0, %8) : float32[4]\n"
      "  assign %2 <- %5\n"
      "  assign %3 <- %7\n"
      "  return (%10, %11)\n"
      "}\n");
}

TEST(EwGroup, DifferentShapesDoNotGroup) {
  const char* g =
      "graph(%0: float32[3] input, %1: float32[2,3] input) {\n"
      "  %2 = Exp(%0) : float32[3]\n"
      "  %3 = Mul(%2, %1) : float32[2,3]\n"
      "  return (%3)\n"
      "}\n";
  check_pass(g, g);
}

TEST(EwGroup, ACycleThroughAnOutsideNodeDoesNotGroup) {
  // Mul reads Exp directly and through Softmax: one group {Exp, Mul} would have to run both
  // before and after Softmax.
  const char* g =
      "graph(%0: float32[4,5] input) {\n"
      "  %1 = Exp(%0) : float32[4,5]\n"
      "  %2 = Softmax(%1) {dim=1} : float32[4,5]\n"
      "  %3 = Mul(%1, %2) : float32[4,5]\n"
      "  return (%3)\n"
      "}\n";
  check_pass(g, g);
}

TEST(EwGroup, JoinsTheProducerGroupThatClosesNoCycle) {
  // Add could join Exp (a cycle through Softmax and Log) or Log (none): it joins Log.
  check_pass(
      "graph(%0: float32[4,5] input) {\n"
      "  %1 = Exp(%0) : float32[4,5]\n"
      "  %2 = Softmax(%1) {dim=1} : float32[4,5]\n"
      "  %3 = Log(%2) : float32[4,5]\n"
      "  %4 = Add(%1, %3) : float32[4,5]\n"
      "  return (%4)\n"
      "}\n",
      "graph(%0: float32[4,5] input) {\n"
      "  %1 = Exp(%0) : float32[4,5]\n"
      "  %2 = Softmax(%1) {dim=1} : float32[4,5]\n"
      "  %3 = FusedElementwise(%2, %1) : float32[4,5] {\n"
      "    graph(%0: float32[4,5] input, %1: float32[4,5] input) {\n"
      "      %2 = Log(%0) : float32[4,5]\n"
      "      %3 = Add(%1, %2) : float32[4,5]\n"
      "      return (%3)\n"
      "    }\n"
      "  }\n"
      "  return (%3)\n"
      "}\n");
}

TEST(EwGroup, AnotherGroupCountsAsOneNodeInTheCycleCheck) {
  // Mul could join Exp's group or {Neg, Log, Add}. Joining Exp closes a cycle only through the
  // other group run as one node (Exp -> Softmax -> Neg ~ Log -> Mul: Neg and Log are not connected
  // by a path, but the fused node needs Softmax's result before it gives Log's), so Mul joins
  // {Neg, Log, Add}.
  check_pass(
      "graph(%0: float32[4,5] input) {\n"
      "  %1 = Exp(%0) : float32[4,5]\n"
      "  %2 = Softmax(%1) {dim=1} : float32[4,5]\n"
      "  %3 = Neg(%2) : float32[4,5]\n"
      "  %4 = Log(%0) : float32[4,5]\n"
      "  %5 = Add(%3, %4) : float32[4,5]\n"
      "  %6 = Mul(%1, %4) : float32[4,5]\n"
      "  return (%5, %6)\n"
      "}\n",
      "graph(%0: float32[4,5] input) {\n"
      "  %1 = Exp(%0) : float32[4,5]\n"
      "  %2 = Softmax(%1) {dim=1} : float32[4,5]\n"
      "  %3, %4 = FusedElementwise(%2, %0, %1) : float32[4,5], float32[4,5] {\n"
      "    graph(%0: float32[4,5] input, %1: float32[4,5] input, %2: float32[4,5] input) {\n"
      "      %3 = Neg(%0) : float32[4,5]\n"
      "      %4 = Log(%1) : float32[4,5]\n"
      "      %5 = Add(%3, %4) : float32[4,5]\n"
      "      %6 = Mul(%2, %4) : float32[4,5]\n"
      "      return (%5, %6)\n"
      "    }\n"
      "  }\n"
      "  return (%3, %4)\n"
      "}\n");
}

TEST(EwGroup, RecordedDtypeEagerWouldNotGiveIsNotGrouped) {
  // An in-place add into a float32 tensor: eager computes float64 and casts on the write; the
  // block interpreter has no such cast, so the node stays as it is.
  const char* g =
      "graph(%0: float32[3] input, %1: float64[3] input) {\n"
      "  %2 = Add(%0, %1) : float32[3]\n"
      "  %3 = Exp(%2) : float32[3]\n"
      "  return (%3)\n"
      "}\n";
  EXPECT_EQ(ir::print(ir::group_elementwise(ir::parse(g))), g);
}

// ---- the body in IR text: round trip, hash, verifier ---------------------------------------------

static const char* kFused =
    "graph(%0: float32[2,3] input, %1: float64[] const=2) {\n"
    "  %2 = Neg(%0) : float32[2,3]\n"
    "  %3, %4 = FusedElementwise(%2, %1) : float32[2,3], bool[2,3] {\n"
    "    graph(%0: float32[2,3] input, %1: float64[] input) {\n"
    "      %2 = Mul(%0, %1) : float32[2,3]\n"
    "      %3 = Gt(%2, %1) : bool[2,3]\n"
    "      return (%2, %3)\n"
    "    }\n"
    "  }\n"
    "  %5 = Sum(%3) {dims=[1], keepdim=false} : float32[2]\n"
    "  return (%5, %4)\n"
    "}\n";

TEST(FusedText, PrintParseRoundTrip) {
  ir::Graph g = ir::parse(kFused);
  EXPECT_EQ(ir::print(g), kFused);
  ASSERT_TRUE(g.nodes()[1].body);
  EXPECT_EQ(g.nodes()[1].body->nodes().size(), 2u);
  EXPECT_EQ(ir::canonical_hash(ir::parse(ir::print(g))), ir::canonical_hash(g));
}

TEST(FusedText, HashSeesTheBody) {
  std::string t = kFused;
  t.replace(t.find("Gt("), 3, "Lt(");
  EXPECT_NE(ir::canonical_hash(ir::parse(t)), ir::canonical_hash(ir::parse(kFused)));
}

TEST(FusedText, VerifierChecksTheBody) {
  // Body input type differs from the node's input.
  const std::string header = "graph(%0: float32[2,3] input, %1: float64[] input)";
  std::string t = kFused;
  t.replace(t.find(header), header.size(), "graph(%0: float32[3,2] input, %1: float64[] input)");
  EXPECT_THROW(ir::parse(t), Error);
  // A body reading an undefined value.
  std::string u = kFused;
  u.replace(u.find("Mul(%0, %1)"), 11, "Mul(%0, %9)");
  EXPECT_THROW(ir::parse(u), ValueError);
  // FusedElementwise without a body, and a body on another op.
  EXPECT_THROW(ir::parse("graph(%0: float32[2] input) {\n  %1 = FusedElementwise(%0) : float32[2]\n  return (%1)\n}\n"),
               Error);
  EXPECT_THROW(ir::parse("graph(%0: float32[2] input) {\n  %1 = Exp(%0) : float32[2] {\n"
                         "    graph(%0: float32[2] input) {\n      return (%0)\n    }\n  }\n  return (%1)\n}\n"),
               ValueError);
}

// ---- the block interpreter against op-by-op execution ------------------------------------------

namespace {

// Traces f over `inputs` (any strides), groups the graph, checks it became `groups` fused nodes,
// and compares the block interpreter with the reference interpreter on the unfused graph and
// with the eager results of the trace itself, bit for bit.
template <class F>
void check_block_interpreter(const TensorList& inputs, F f, int groups = 1) {
  Tracer tr;
  TensorList eager;
  {
    TraceGuard guard(&tr);
    for (const Tensor& t : inputs) tr.add_input(t);
    eager = f(inputs);
    tr.set_outputs(eager);
  }
  ASSERT_TRUE(tr.ok()) << tr.fallback_reason();
  const ir::Graph& g = tr.graph();
  ir::Graph p = ir::group_elementwise(g);
  ASSERT_EQ(count_fused(p), groups) << ir::print(p);
  TensorList ref = ir::interpret(g, inputs, tr.state_feeds());
  TensorList got = run_with_block_interpreter(p, inputs, tr.state_feeds());
  ASSERT_EQ(got.size(), ref.size());
  for (size_t k = 0; k < ref.size(); ++k) {
    expect_bit_equal(got[k], ref[k], str("output ", k, " vs interpret"));
    expect_bit_equal(got[k], eager[k], str("output ", k, " vs eager"));
  }
}

Tensor transposed(const Tensor& base) {  // [a, b] contiguous -> [b, a] view
  return Tensor::make_view(base, {base.shape()[1], base.shape()[0]}, {1, base.shape()[1]}, 0);
}

}  // namespace

TEST(BlockInterpreter, Float32BroadcastScalarsMultiOutputParallel) {
  // 64 x 1000: 63 blocks, the last partial, above the parallel grain; a row and a column broadcast.
  TensorList in = {random_tensor({64, 1000}, DType::Float32), random_tensor({1000}, DType::Float32),
                   random_tensor({64, 1}, DType::Float32)};
  check_block_interpreter(in, [](const TensorList& x) {
    Tensor y = tanh(add(mul(x[0], x[1]), x[2]));
    Tensor z = mul(sigmoid(y), scalar_tensor(0.5));
    Tensor w = exp(sub(z, y));
    return TensorList{y, w, sqrt(abs(add(w, scalar_tensor(int64_t{3}))))};
  });
}

TEST(BlockInterpreter, Float32StridedInputs) {
  Tensor base = random_tensor({300, 70}, DType::Float32);
  Tensor wide = random_tensor({70, 600}, DType::Float32);
  Tensor t = transposed(base);                                              // [70, 300], strides [1, 70]
  Tensor every_other = Tensor::make_view(wide, {70, 300}, {600, 2}, 1);     // [70, 300], strides [600, 2]
  Tensor row = Tensor::make_view(random_tensor({900}, DType::Float32), {70, 300}, {0, 3}, 2);  // broadcast view
  check_block_interpreter({t, every_other, row}, [](const TensorList& x) {
    Tensor a = mul(x[0], x[1]);
    return TensorList{add(erf(a), x[2]), maximum(log1p(abs(a)), x[2])};
  });
}

TEST(BlockInterpreter, Float64) {
  TensorList in = {random_tensor({33, 129}, DType::Float64), random_tensor({129}, DType::Float64),
                   transposed(random_tensor({129, 33}, DType::Float64))};
  check_block_interpreter(in, [](const TensorList& x) {
    Tensor a = div(x[0], add(abs(x[1]), scalar_tensor(0.25)));
    Tensor b = pow(abs(a), scalar_tensor(1.5));
    Tensor c = where(gt(x[2], scalar_tensor(0.0)), b, mul(x[2], scalar_tensor(2.0)));
    return TensorList{lerp(a, c, scalar_tensor(0.3)), sin(c)};
  }, /*groups=*/2);  // abs and add over x[1]'s shape [129] are a group of their own
}

TEST(BlockInterpreter, Float16RoundsAfterEveryOp) {
  TensorList in = {random_tensor({40, 50}, DType::Float16), random_tensor({50}, DType::Float16)};
  check_block_interpreter(in, [](const TensorList& x) {
    Tensor a = add(mul(exp(x[0]), x[1]), scalar_tensor(1.0));
    return TensorList{tanh(a), relu(sub(a, x[0]))};
  });
}

TEST(BlockInterpreter, IntAndBoolWithPromotionAndCasts) {
  Tensor d = add(abs(random_tensor({41}, DType::Int32)), scalar_tensor(int64_t{1}));  // positive divisors
  TensorList in = {random_tensor({37, 41}, DType::Int32), random_tensor({41}, DType::Int64), d,
                   random_tensor({37, 41}, DType::Bool), random_tensor({37, 1}, DType::Float32),
                   reshape(arange(16777000, 16777000 + 37 * 41, 1, DType::Int32), {37, 41})};
  check_block_interpreter(in, [](const TensorList& x) {
    Tensor a = mul(x[0], scalar_tensor(int64_t{3}));  // int32 (a wrapped int keeps the dtype)
    Tensor b = add(a, x[1]);                           // int64
    Tensor q = floor_divide(b, x[2]);
    Tensor r = remainder(b, x[2]);
    Tensor m = gt(b, scalar_tensor(2.5));              // compares in float32 (wrapped float)
    Tensor n = logical_xor(logical_and(m, x[3]), lt(x[0], x[4]));  // int32 vs float32: compares in float32
    // A wrapped float: compares in float32, where 2^24 + 1 rounds to 2^24 (in float64 it would not).
    n = logical_or(n, eq(x[5], scalar_tensor(16777217.0)));
    Tensor s = where(n, q, r);
    Tensor bits = bitwise_xor(bitwise_and(x[0], x[2]), bitwise_not(a));
    Tensor f = add(div(a, x[2]), x[4]);                // integer division gives float32
    return TensorList{s, bits, n, f, logical_not(m)};
  });
}

TEST(BlockInterpreter, ZeroDimAndEmpty) {
  check_block_interpreter({random_tensor({}, DType::Float32), random_tensor({}, DType::Float64)},
                          [](const TensorList& x) { return TensorList{exp(mul(x[0], x[1])), neg(x[1])}; });
  check_block_interpreter({random_tensor({0, 3}, DType::Float32), random_tensor({3}, DType::Float32)},
                          [](const TensorList& x) { return TensorList{exp(add(x[0], x[1]))}; });
}

TEST(BlockInterpreter, EmptyInAnyDim) {
  // An empty output of shape [3, 0] used to fail run_fused's "contiguous output" check:
  // Tensor::is_contiguous called an empty tensor with strides from contiguous_strides non-contiguous.
  for (const Shape& s : {Shape{3, 0}, Shape{0, 3}, Shape{2, 0, 3}, Shape{0}})
    check_block_interpreter({random_tensor(s, DType::Float32), random_tensor({s.back()}, DType::Float32)},
                            [](const TensorList& x) { return TensorList{relu(add(mul(x[0], x[1]), x[1])), exp(x[0])}; });
}

namespace {

// Float values of every class an op can treat specially: NaN, infinities, signed zeros, both
// sides of the select ops' thresholds (0, +-0.5, +-1, 6) and ordinary numbers.
Tensor special_values(const Shape& shape, DType dt) {
  static const double kv[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.5, -0.5, 1.0, -1.0, 6.0, 7.5, -3.0, 0.3, -0.3};
  Tensor t = Tensor::empty(shape, DType::Float64);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = kv[(i * 5 + i / 14) % 14];
  return cast(t, dt);
}

}  // namespace

TEST(BlockInterpreter, NanInfAndSignedZerosThroughSelectOps) {
  // The ops that select rather than compute (where NaN and -0.0 are easiest to lose) give eager's
  // bits: the block interpreter runs the same BlockFns on the same dtypes.
  for (DType dt : {DType::Float32, DType::Float64}) {
    TensorList in = {special_values({14, 15}, dt), special_values({15}, dt)};
    check_block_interpreter(in, [](const TensorList& x) {
      Tensor a = mul(x[0], scalar_tensor(2.0));
      return TensorList{relu(a), relu6(a), hardtanh(a), leaky_relu(a, 0.1), clamp(a, 0.0, 1.0),
                        maximum(a, x[1]), minimum(a, x[1]), where(gt(a, x[1]), a, x[1]),
                        logical_or(logical_or(eq(a, x[1]), ne(a, x[1])), logical_or(lt(a, x[1]), ge(a, x[1]))),
                        threshold(a, 0.5, -2.0), hardshrink(a, 0.5), softshrink(a, 0.5), elu(a)};
    });
  }
}

TEST(BlockInterpreter, OpsWithAttributesBuildTheirFunctorFromTheBodysAttrs) {
  // Each op with parameters joins the group and runs its eager kernel's row loop with the functor
  // made from its node's Attrs: eager's bits in every float dtype, 16-bit included, and integer
  // clamp promoting to float for a float bound, as eager.
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    TensorList in = {special_values({14, 15}, dt), special_values({15}, dt),
                     gt(random_tensor({14, 15}, DType::Float32), scalar_tensor(0.0))};
    check_block_interpreter(in, [](const TensorList& x) {
      Tensor a = mul(x[0], scalar_tensor(2.0));
      Tensor gb = dispatch1(OpId::GeluBackward, {x[1], a}, {{"approximate", std::string("tanh")}});
      return TensorList{gelu(a), gelu(a, "tanh"), softplus(a, 2.0, 3.0), celu(a, 0.5), addcmul(a, x[1], a, 0.5),
                        addcdiv(a, x[1], a, -2.0), masked_fill(a, x[2], 4.25), add(gb, a)};
    });
  }
  Tensor xi = random_tensor({33}, DType::Int32);
  check_block_interpreter({xi}, [](const TensorList& x) {
    return TensorList{clamp(mul(x[0], scalar_tensor(int64_t{2})), 0.5, 3.0)};  // float32 output
  });
}

TEST(BlockInterpreter, OutputInPlaceOfAnInput) {
  ir::Graph g = ir::group_elementwise(ir::parse(
      "graph(%0: float32[50,60] input, %1: float32[60] input) {\n"
      "  %2 = Mul(%0, %1) : float32[50,60]\n"
      "  %3 = Exp(%2) : float32[50,60]\n"
      "  %4 = Sub(%3, %0) : float32[50,60]\n"
      "  return (%4)\n"
      "}\n"));
  ASSERT_EQ(count_fused(g), 1);
  const ir::Node& n = g.nodes()[0];
  FusedProgram prog(*n.body);
  Tensor x = random_tensor({50, 60}, DType::Float32), b = random_tensor({60}, DType::Float32);
  Tensor want = Tensor::empty({50, 60}, DType::Float32);
  run_fused(prog, {x, b}, {want});
  Tensor x2 = cast(x, DType::Float32);
  run_fused(prog, {x2, b}, {x2});  // the output overwrites its input block by block
  expect_bit_equal(x2, want, "in place");
  // Partial overlap is refused.
  Tensor base = random_tensor({50 * 60 + 1}, DType::Float32);
  Tensor in = Tensor::make_view(base, {50, 60}, {60, 1}, 1), out = Tensor::make_view(base, {50, 60}, {60, 1}, 0);
  EXPECT_THROW(run_fused(prog, {in, b}, {out}), ValueError);
}

TEST(BlockInterpreter, InPlaceInputIsCopiedOnlyWhenWrittenBeforeItsLastRead) {
  // Output %2 is written at the Neg, before the Add reads %0 again: sharing %0's memory needs %0
  // copied to a register first. Output %4 is written by %0's last reader and output %5 by %1's
  // last reader: those run straight over their input (an optimizer update writing into its
  // parameter). Every choice must give the out-of-place results bit for bit.
  // The body as the program's graph (ew_group would leave Neg and Exp out: they feed no chain).
  FusedProgram prog(ir::parse(
      "graph(%0: float32[50,60] input, %1: float32[50,60] input) {\n"
      "  %2 = Neg(%0) : float32[50,60]\n"
      "  %3 = Mul(%0, %1) : float32[50,60]\n"
      "  %4 = Add(%3, %0) : float32[50,60]\n"
      "  %5 = Exp(%1) : float32[50,60]\n"
      "  return (%2, %4, %5)\n"
      "}\n"));
  // Steps: Load %0, Load %1, Neg, Mul, Add, Exp.
  EXPECT_EQ(prog.input_last_read, (std::vector<int>{4, 5}));
  EXPECT_EQ(prog.output_write, (std::vector<int>{2, 4, 5}));
  Tensor x = random_tensor({50, 60}, DType::Float32), y = random_tensor({50, 60}, DType::Float32);
  TensorList want = {Tensor::empty({50, 60}, DType::Float32), Tensor::empty({50, 60}, DType::Float32),
                     Tensor::empty({50, 60}, DType::Float32)};
  run_fused(prog, {x, y}, want);
  for (int k = 0; k < 3; ++k) {
    Tensor x2 = cast(x, DType::Float32), y2 = cast(y, DType::Float32);
    TensorList outs = {Tensor::empty({50, 60}, DType::Float32), Tensor::empty({50, 60}, DType::Float32),
                       Tensor::empty({50, 60}, DType::Float32)};
    outs[k] = k == 2 ? y2 : x2;  // output k over input 0 (outputs 0, 1) or input 1 (output 2)
    run_fused(prog, {x2, y2}, outs);
    for (int j = 0; j < 3; ++j) expect_bit_equal(outs[j], want[j], str("output ", j, " with output ", k, " in place"));
  }
}

TEST(BlockInterpreter, CastsInsideAGroup) {
  // Copy (a dtype cast) inside a group, as an intermediate and as an output, from float32,
  // int64 and bool: the eager kernel's conversion rules, bit for bit.
  TensorList in = {random_tensor({37, 41}, DType::Float32), random_tensor({41}, DType::Int64),
                   random_tensor({37, 41}, DType::Bool)};
  check_block_interpreter(in, [](const TensorList& x) {
    Tensor d = cast(mul(x[0], scalar_tensor(3.0)), DType::Float64);    // float32 -> float64
    Tensor e = add(d, cast(x[1], DType::Float64));                      // int64 -> float64
    Tensor f = cast(mul(e, cast(x[2], DType::Float64)), DType::Float32);  // bool -> float64, back to float32
    Tensor h = cast(f, DType::Int32);                                   // float32 -> int32 (truncation)
    return TensorList{f, cast(e, DType::Float16), h};
  });
}
