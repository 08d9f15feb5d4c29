// IR tests: printer/parser round trip, verifier errors, canonical hash sensitivity.
#include <gtest/gtest.h>

#include "lucid/compile/ir/graph.h"
#include "lucid/ops/core.h"

using namespace lucid;

static const char* kText =
    "graph(%0: float32[2,3] input, %1: float32[3] state, %2: float64[] const=1.5) {\n"
    "  %3 = Add(%0, %1) : float32[2,3]\n"
    "  %4 = Mul(%3, %2) : float32[2,3]\n"
    "  %5 = Sum(%4) {dims=[1], keepdim=false} : float32[2]\n"
    "  %6 = Expand(%1) {shape=[2,3]} : float32[2,3]\n"
    "  assign %1 <- %1\n"
    "  return (%5, %6)\n"
    "}\n";

TEST(IR, PrintParseRoundTrip) {
  ir::Graph g = ir::parse(kText);
  EXPECT_EQ(ir::print(g), kText);
  EXPECT_EQ(ir::print(ir::parse(ir::print(g))), kText);
  EXPECT_EQ(g.nodes().size(), 4u);
  EXPECT_EQ(g.nodes()[2].attrs.ints("dims"), (IntList{1}));
}

TEST(IR, ParserReportsLineAndExpectation) {
  try {
    ir::parse("graph(%0: float32[2] input) {\n  %1 = Add(%0, %7) : float32[2]\n  return (%1)\n}\n");
    FAIL() << "expected a parse error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("%7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ir::parse("graph(%0: float32[2] input) {\n  %1 = NoSuchOp(%0) : float32[2]\n  return (%1)\n}\n"),
               ValueError);
}

TEST(IR, VerifierRejectsBadAssign) {
  ir::Graph g;
  int x = g.add_input({2}, DType::Float32);
  int s = g.add_state({3}, DType::Float32);
  g.add_assign(s, x);  // shape mismatch
  g.set_outputs({x});
  EXPECT_THROW(ir::verify(g), Error);
}

TEST(IR, HashSeesWiringNotJustOpSequence) {
  // Same op sequence (Sub), different wiring: a - b vs b - a.
  const char* ab = "graph(%0: float32[2] input, %1: float32[2] input) {\n  %2 = Sub(%0, %1) : float32[2]\n  return (%2)\n}\n";
  const char* ba = "graph(%0: float32[2] input, %1: float32[2] input) {\n  %2 = Sub(%1, %0) : float32[2]\n  return (%2)\n}\n";
  EXPECT_EQ(ir::canonical_hash(ir::parse(ab)), ir::canonical_hash(ir::parse(ab)));
  EXPECT_NE(ir::canonical_hash(ir::parse(ab)), ir::canonical_hash(ir::parse(ba)));
  // Attributes, shapes, constants and outputs all count.
  ir::Graph g1 = ir::parse(kText);
  std::string t2 = kText;
  t2.replace(t2.find("dims=[1]"), 8, "dims=[0]");
  t2.replace(t2.find("float32[2]\n"), 10, "float32[3]");
  EXPECT_NE(ir::canonical_hash(g1), ir::canonical_hash(ir::parse(t2)));
  std::string t3 = kText;
  t3.replace(t3.find("=1.5"), 4, "=2.5");
  EXPECT_NE(ir::canonical_hash(g1), ir::canonical_hash(ir::parse(t3)));
  std::string t4 = kText;
  t4.replace(t4.find("return (%5, %6)"), 15, "return (%6, %5)");
  EXPECT_NE(ir::canonical_hash(g1), ir::canonical_hash(ir::parse(t4)));
}

TEST(IR, RandomDrawsRoundTripAndHash) {
  const char* with =
      "graph() {\n"
      "  %0 = Normal() {shape=[4], dtype=float32, mean=0, std=1, seed=0, offset=0} : float32[4]\n"
      "  rng_draws 8\n"
      "  return (%0)\n"
      "}\n";
  ir::Graph g = ir::parse(with);
  EXPECT_EQ(g.rng_draws(), 8);
  EXPECT_EQ(ir::print(g), with);
  std::string other = with;
  other.replace(other.find("rng_draws 8"), 11, "rng_draws 12");
  EXPECT_NE(ir::canonical_hash(g), ir::canonical_hash(ir::parse(other)));
}
