// Tests of the two fusion passes that rewrite around GEMM-like ops: fold_batchnorm (eval
// BatchNorm into the preceding Conv, shared) and the CPU backend's absorb_epilogues (bias /
// activation / residual into the oneDNN post-ops of LinearFused / ConvFused). Each case parses IR
// text, runs the pass and the verifier, and matches the printed result; rewritten cases are then
// checked numerically against the reference interpreter on the unoptimised graph with random
// inputs and states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "lucid/backends/cpu/compile/epilogue.h"
#include "lucid/backends/cpu/dnnl_conv.h"
#include "lucid/compile/ir/interpret.h"
#include "lucid/compile/passes/passes.h"
#include "lucid/compile/trace/tracer.h"
#include "lucid/ops/core.h"
#include "lucid/ops/creation.h"
#include "lucid/ops/elementwise.h"
#include "lucid/ops/linalg.h"
#include "lucid/ops/nn.h"

using namespace lucid;

namespace {

struct Feeds {
  TensorList inputs, states;
};

// Random normal inputs and states; state slots in `positive` (variances) are drawn from [0.5, 1.5).
Feeds random_feeds(const ir::Graph& g, const std::set<int>& positive = {}) {
  Feeds f;
  for (int id : g.inputs()) f.inputs.push_back(randn(g.value(id).shape, g.value(id).dtype));
  for (size_t s = 0; s < g.states().size(); ++s) {
    const ir::Value& v = g.value(g.states()[s]);
    f.states.push_back(positive.count(static_cast<int>(s)) ? add(rand(v.shape, v.dtype), full({}, 0.5, v.dtype))
                                                          : randn(v.shape, v.dtype));
  }
  return f;
}

std::vector<double> values(const Tensor& t) {
  Tensor d = cast(t, DType::Float64);
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

// interpret(opt) == interpret(ref) on the feeds: same shapes and dtypes, and every element
// within rtol of the reference's largest magnitude (the folded/fused forms round differently).
void expect_same(const ir::Graph& ref, const ir::Graph& opt, const Feeds& f, double rtol) {
  TensorList a = ir::interpret(ref, f.inputs, f.states), b = ir::interpret(opt, f.inputs, f.states);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].shape(), b[k].shape()) << "output " << k;
    ASSERT_EQ(a[k].dtype(), b[k].dtype()) << "output " << k;
    std::vector<double> x = values(a[k]), y = values(b[k]);
    double scale = 1e-30;
    for (double v : x) scale = std::max(scale, std::fabs(v));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
    EXPECT_LE(worst, rtol * scale) << "output " << k << ": largest difference " << worst << ", scale " << scale;
  }
}

std::string fold_text(const std::string& text) { return ir::print(ir::fold_batchnorm(ir::parse(text))); }
std::string epi_text(const std::string& text) { return ir::print(cpu::absorb_epilogues(ir::parse(text))); }

const char* kConv2d = "{stride=[1,1], padding_l=[1,1], padding_r=[1,1], dilation=[1,1], groups=1}";

std::string conv2d(const std::string& s) {  // replaces "$C" by the conv attributes
  std::string r = s;
  for (size_t p; (p = r.find("$C")) != std::string::npos;) r.replace(p, 2, kConv2d);
  return r;
}

}  // namespace

// ---- fold_batchnorm ---------------------------------------------------------------------------

const std::string kConvBn = conv2d(
    "graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float32[4] state, %3: float32[4] state, "
    "%4: float32[4] state, %5: float32[4] state, %6: float32[4] state) {\n"
    "  %7 = Conv(%0, %1, %2) $C : float32[2,4,6,6]\n"
    "  %8, %9, %10 = BatchNorm(%7, %3, %4, %5, %6) {training=false, momentum=0.5, eps=0.25} : float32[2,4,6,6], float32[4], float32[4]\n"
    "  return (%8)\n"
    "}\n");

TEST(FoldBatchNorm, AffineWithConvBias) {
  EXPECT_EQ(fold_text(kConvBn),
            conv2d("graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float32[4] state, %3: float32[4] state, "
                   "%4: float32[4] state, %5: float32[4] state, %6: float32[4] state, %7: float32[] const=0.25) {\n"
                   "  %8 = Add(%4, %7) : float32[4]\n"
                   "  %9 = Rsqrt(%8) : float32[4]\n"
                   "  %10 = Mul(%5, %9) : float32[4]\n"
                   "  %11 = Reshape(%10) {shape=[4,1,1,1]} : float32[4,1,1,1]\n"
                   "  %12 = Mul(%1, %11) : float32[4,3,3,3]\n"
                   "  %13 = Sub(%2, %3) : float32[4]\n"
                   "  %14 = Mul(%13, %10) : float32[4]\n"
                   "  %15 = Add(%14, %6) : float32[4]\n"
                   "  %16 = Conv(%0, %12, %15) $C : float32[2,4,6,6]\n"
                   "  return (%16)\n"
                   "}\n"));
}

TEST(FoldBatchNorm, FoldedGraphReadsCurrentStateAtEveryCall) {
  ir::Graph g = ir::parse(kConvBn), f = ir::fold_batchnorm(g);
  Feeds a = random_feeds(g, {3}), b = random_feeds(g, {3});
  b.inputs = a.inputs;  // same input, every state changed (weights, bias, running stats, affine)
  expect_same(g, f, a, 1e-5);
  expect_same(g, f, b, 1e-5);
  // The states matter: the two calls of the same folded graph give different results.
  std::vector<double> ya = values(ir::interpret(f, a.inputs, a.states)[0]), yb = values(ir::interpret(f, b.inputs, b.states)[0]);
  EXPECT_NE(ya, yb);
  // A state updated in place (as BatchNorm's running stats are in training) is seen too.
  Tensor rv = a.states[3];
  rv.data<float>()[1] = 7.0f;
  expect_same(g, f, a, 1e-5);
}

TEST(FoldBatchNorm, Conv1dWithoutBiasAndNonAffineBatchNorm) {
  const std::string text =
      "graph(%0: float64[2,3,9] input, %1: float64[5,3,3] state, %2: float64[5] state, %3: float64[5] state) {\n"
      "  %4 = Conv(%0, %1, none) {stride=[2], padding_l=[0], padding_r=[1], dilation=[1], groups=1} : float64[2,5,4]\n"
      "  %5, %6, %7 = BatchNorm(%4, %2, %3, none, none) {training=false, momentum=0.5, eps=0.125} : float64[2,5,4], float64[5], float64[5]\n"
      "  return (%5)\n"
      "}\n";
  EXPECT_EQ(fold_text(text),
            "graph(%0: float64[2,3,9] input, %1: float64[5,3,3] state, %2: float64[5] state, %3: float64[5] state, "
            "%4: float64[] const=0.125) {\n"
            "  %5 = Add(%3, %4) : float64[5]\n"
            "  %6 = Rsqrt(%5) : float64[5]\n"
            "  %7 = Reshape(%6) {shape=[5,1,1]} : float64[5,1,1]\n"
            "  %8 = Mul(%1, %7) : float64[5,3,3]\n"
            "  %9 = Neg(%2) : float64[5]\n"
            "  %10 = Mul(%9, %6) : float64[5]\n"
            "  %11 = Conv(%0, %8, %10) {stride=[2], padding_l=[0], padding_r=[1], dilation=[1], groups=1} : float64[2,5,4]\n"
            "  return (%11)\n"
            "}\n");
  ir::Graph g = ir::parse(text);
  expect_same(g, ir::fold_batchnorm(g), random_feeds(g, {2}), 1e-12);
}

TEST(FoldBatchNorm, GroupedConvThenRelu) {
  // Grouped conv (weight [C_out, C_in/groups, k, k]); the BN output feeds a Relu that stays.
  const std::string text =
      "graph(%0: float32[1,4,5,5] input, %1: float32[6,2,3,3] state, %2: float32[6] state, %3: float32[6] state, "
      "%4: float32[6] state, %5: float32[6] state, %6: float32[6] state) {\n"
      "  %7 = Conv(%0, %1, %2) {stride=[1,1], padding_l=[0,0], padding_r=[0,0], dilation=[1,1], groups=2} : float32[1,6,3,3]\n"
      "  %8, %9, %10 = BatchNorm(%7, %3, %4, %5, %6) {training=false, momentum=0.5, eps=0.25} : float32[1,6,3,3], float32[6], float32[6]\n"
      "  %11 = Relu(%8) : float32[1,6,3,3]\n"
      "  return (%11)\n"
      "}\n";
  ir::Graph g = ir::parse(text), f = ir::fold_batchnorm(g);
  auto count = [&](OpId op) {
    return std::count_if(f.nodes().begin(), f.nodes().end(), [&](const ir::Node& n) { return n.op == op; });
  };
  EXPECT_EQ(count(OpId::BatchNorm), 0);
  EXPECT_EQ(count(OpId::Conv), 1);
  expect_same(g, f, random_feeds(g, {3}), 1e-5);
}

TEST(FoldBatchNorm, LeavesUnfoldableBatchNormsAlone) {
  auto unchanged = [](const std::string& text) { EXPECT_EQ(fold_text(text), ir::print(ir::parse(text))); };
  const std::string head =
      "graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float32[4] state, %3: float32[4] state, "
      "%4: float32[4] state, %5: float32[4] state, %6: float32[4] state) {\n"
      "  %7 = Conv(%0, %1, %2) $C : float32[2,4,6,6]\n";
  const std::string bn_eval =
      "  %8, %9, %10 = BatchNorm(%7, %3, %4, %5, %6) {training=false, momentum=0.5, eps=0.25} : float32[2,4,6,6], float32[4], float32[4]\n";
  // Training mode normalises with the batch statistics.
  unchanged(conv2d(head +
                   "  %8, %9, %10 = BatchNorm(%7, none, none, %5, %6) {training=true, momentum=0.5, eps=0.25} : float32[2,4,6,6], float32[4], float32[4]\n"
                   "  return (%8)\n}\n"));
  // The conv output has another reader, or is itself a graph output.
  unchanged(conv2d(head + bn_eval + "  %11 = Add(%8, %7) : float32[2,4,6,6]\n  return (%11)\n}\n"));
  unchanged(conv2d(head + bn_eval + "  return (%8, %7)\n}\n"));
  // The BatchNorm's statistics outputs are used.
  unchanged(conv2d(head + bn_eval + "  return (%8, %10)\n}\n"));
  // The input is not a conv.
  unchanged(
      "graph(%0: float32[2,4,6,6] input, %1: float32[4] state, %2: float32[4] state) {\n"
      "  %3 = Relu(%0) : float32[2,4,6,6]\n"
      "  %4, %5, %6 = BatchNorm(%3, %1, %2, none, none) {training=false, momentum=0.5, eps=0.25} : float32[2,4,6,6], float32[4], float32[4]\n"
      "  return (%4)\n}\n");
  // Running stats in another dtype than the conv.
  unchanged(conv2d(
      "graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float64[4] state, %3: float64[4] state) {\n"
      "  %4 = Conv(%0, %1, none) $C : float32[2,4,6,6]\n"
      "  %5, %6, %7 = BatchNorm(%4, %2, %3, none, none) {training=false, momentum=0.5, eps=0.25} : float32[2,4,6,6], float32[4], float32[4]\n"
      "  return (%5)\n}\n"));
}

// ---- absorb_epilogues -------------------------------------------------------------------------

TEST(AbsorbEpilogues, LinearRelu) {
  const std::string text =
      "graph(%0: float32[5,8] input, %1: float32[6,8] state, %2: float32[6] state) {\n"
      "  %3 = Linear(%0, %1, %2) : float32[5,6]\n"
      "  %4 = Relu(%3) : float32[5,6]\n"
      "  return (%4)\n"
      "}\n";
  EXPECT_EQ(epi_text(text),
            "graph(%0: float32[5,8] input, %1: float32[6,8] state, %2: float32[6] state) {\n"
            "  %3 = LinearFused(%0, %1, %2, none) {activation=\"relu\", residual_first=false} : float32[5,6]\n"
            "  return (%3)\n"
            "}\n");
  ir::Graph g = ir::parse(text);
  expect_same(g, cpu::absorb_epilogues(g), random_feeds(g), 1e-5);
}

TEST(AbsorbEpilogues, LinearBiasAddThenGeluStopsAtTheGelu) {
  // Bias-less Linear, bias added after (a [6] operand broadcasts along the features), erf Gelu,
  // then a residual: the bias becomes the Linear's own and the chain stops at the Gelu, which
  // stays a node (oneDNN's GELU post-op is 1-2 ulp away from the eager kernel), so the residual
  // after it stays too.
  const std::string text =
      "graph(%0: float32[2,5,8] input, %1: float32[6,8] state, %2: float32[6] state, %3: float32[2,5,6] input) {\n"
      "  %4 = Linear(%0, %1, none) : float32[2,5,6]\n"
      "  %5 = Add(%4, %2) : float32[2,5,6]\n"
      "  %6 = Gelu(%5) {approximate=\"none\"} : float32[2,5,6]\n"
      "  %7 = Add(%3, %6) : float32[2,5,6]\n"
      "  return (%7)\n"
      "}\n";
  EXPECT_EQ(epi_text(text),
            "graph(%0: float32[2,5,8] input, %1: float32[2,5,6] input, %2: float32[6,8] state, %3: float32[6] state) {\n"
            "  %4 = Linear(%0, %2, %3) : float32[2,5,6]\n"
            "  %5 = Gelu(%4) {approximate=\"none\"} : float32[2,5,6]\n"
            "  %6 = Add(%1, %5) : float32[2,5,6]\n"
            "  return (%6)\n"
            "}\n");
  ir::Graph g = ir::parse(text);
  expect_same(g, cpu::absorb_epilogues(g), random_feeds(g), 1e-5);
}

TEST(AbsorbEpilogues, LinearResidualThenGeluTanhFloat64) {
  // The residual is absorbed; the GELU after it stays a node.
  const std::string text =
      "graph(%0: float64[4,8] input, %1: float64[3,8] state, %2: float64[3] state, %3: float64[4,3] input) {\n"
      "  %4 = Linear(%0, %1, %2) : float64[4,3]\n"
      "  %5 = Add(%4, %3) : float64[4,3]\n"
      "  %6 = Gelu(%5) {approximate=\"tanh\"} : float64[4,3]\n"
      "  return (%6)\n"
      "}\n";
  EXPECT_EQ(epi_text(text),
            "graph(%0: float64[4,8] input, %1: float64[4,3] input, %2: float64[3,8] state, %3: float64[3] state) {\n"
            "  %4 = LinearFused(%0, %2, %3, %1) {activation=\"none\", residual_first=false} : float64[4,3]\n"
            "  %5 = Gelu(%4) {approximate=\"tanh\"} : float64[4,3]\n"
            "  return (%5)\n"
            "}\n");
  ir::Graph g = ir::parse(text);
  expect_same(g, cpu::absorb_epilogues(g), random_feeds(g), 1e-10);
}

TEST(AbsorbEpilogues, ConvResidualThenRelu) {
  const std::string text = conv2d(
      "graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float32[4] state, %3: float32[2,4,6,6] input) {\n"
      "  %4 = Conv(%0, %1, %2) $C : float32[2,4,6,6]\n"
      "  %5 = Add(%4, %3) : float32[2,4,6,6]\n"
      "  %6 = Relu(%5) : float32[2,4,6,6]\n"
      "  return (%6)\n"
      "}\n");
  // Where oneDNN's fused residual is not exact (AVX2: cpu::conv_residual_exact) the chain stays.
  EXPECT_EQ(epi_text(text),
            cpu::conv_residual_exact(DType::Float32)
                ? "graph(%0: float32[2,3,6,6] input, %1: float32[2,4,6,6] input, %2: float32[4,3,3,3] state, %3: float32[4] state) {\n"
                  "  %4 = ConvFused(%0, %2, %3, %1) {stride=[1,1], padding_l=[1,1], padding_r=[1,1], dilation=[1,1], groups=1, "
                  "activation=\"relu\", residual_first=true} : float32[2,4,6,6]\n"
                  "  return (%4)\n"
                  "}\n"
                : "graph(%0: float32[2,3,6,6] input, %1: float32[2,4,6,6] input, %2: float32[4,3,3,3] state, %3: float32[4] state) {\n"
                  "  %4 = Conv(%0, %2, %3) {stride=[1,1], padding_l=[1,1], padding_r=[1,1], dilation=[1,1], groups=1} : float32[2,4,6,6]\n"
                  "  %5 = Add(%4, %1) : float32[2,4,6,6]\n"
                  "  %6 = Relu(%5) : float32[2,4,6,6]\n"
                  "  return (%6)\n"
                  "}\n");
  ir::Graph g = ir::parse(text);
  expect_same(g, cpu::absorb_epilogues(g), random_feeds(g), 1e-5);
}

// Two convs meeting in one Add (a ResNet projection shortcut): the first takes the Add and the
// ReLU, the second stays a plain conv and becomes the residual. Neither may be lost.
TEST(AbsorbEpilogues, TwoOpsEndingInOneAddAbsorbOnce) {
  const std::string text = conv2d(
      "graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float32[4,3,3,3] state) {\n"
      "  %3 = Conv(%0, %1, none) $C : float32[2,4,6,6]\n"
      "  %4 = Conv(%0, %2, none) $C : float32[2,4,6,6]\n"
      "  %5 = Add(%3, %4) : float32[2,4,6,6]\n"
      "  %6 = Relu(%5) : float32[2,4,6,6]\n"
      "  return (%6)\n"
      "}\n");
  if (!cpu::conv_residual_exact(DType::Float32)) {  // AVX2: no conv takes the Add (cpu::conv_residual_exact)
    EXPECT_EQ(epi_text(text),
              "graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float32[4,3,3,3] state) {\n"
              "  %3 = Conv(%0, %1, none) {stride=[1,1], padding_l=[1,1], padding_r=[1,1], dilation=[1,1], groups=1} : float32[2,4,6,6]\n"
              "  %4 = Conv(%0, %2, none) {stride=[1,1], padding_l=[1,1], padding_r=[1,1], dilation=[1,1], groups=1} : float32[2,4,6,6]\n"
              "  %5 = Add(%3, %4) : float32[2,4,6,6]\n"
              "  %6 = Relu(%5) : float32[2,4,6,6]\n"
              "  return (%6)\n"
              "}\n");
    return;
  }
  EXPECT_EQ(epi_text(text),
            "graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float32[4,3,3,3] state) {\n"
            "  %3 = Conv(%0, %2, none) {stride=[1,1], padding_l=[1,1], padding_r=[1,1], dilation=[1,1], groups=1} : float32[2,4,6,6]\n"
            "  %4 = ConvFused(%0, %1, none, %3) {stride=[1,1], padding_l=[1,1], padding_r=[1,1], dilation=[1,1], groups=1, "
            "activation=\"relu\", residual_first=true} : float32[2,4,6,6]\n"
            "  return (%4)\n"
            "}\n");
  ir::Graph g = ir::parse(text);
  expect_same(g, cpu::absorb_epilogues(g), random_feeds(g), 1e-5);
}

TEST(AbsorbEpilogues, ConvChannelBiasReluResidualFloat64) {
  // The bias is a [4,1,1] operand (channel broadcast): reshaped to [4] and given to the conv.
  const std::string text = conv2d(
      "graph(%0: float64[2,3,6,6] input, %1: float64[4,3,3,3] state, %2: float64[4,1,1] state, %3: float64[2,4,6,6] input) {\n"
      "  %4 = Conv(%0, %1, none) $C : float64[2,4,6,6]\n"
      "  %5 = Add(%2, %4) : float64[2,4,6,6]\n"
      "  %6 = Relu(%5) : float64[2,4,6,6]\n"
      "  %7 = Add(%6, %3) : float64[2,4,6,6]\n"
      "  return (%7)\n"
      "}\n");
  EXPECT_EQ(epi_text(text),
            "graph(%0: float64[2,3,6,6] input, %1: float64[2,4,6,6] input, %2: float64[4,3,3,3] state, %3: float64[4,1,1] state) {\n"
            "  %4 = Reshape(%3) {shape=[4]} : float64[4]\n"
            "  %5 = ConvFused(%0, %2, %4, %1) {stride=[1,1], padding_l=[1,1], padding_r=[1,1], dilation=[1,1], groups=1, "
            "activation=\"relu\", residual_first=false} : float64[2,4,6,6]\n"
            "  return (%5)\n"
            "}\n");
  ir::Graph g = ir::parse(text);
  expect_same(g, cpu::absorb_epilogues(g), random_feeds(g), 1e-12);
}

TEST(AbsorbEpilogues, BiasAloneBecomesTheOpsBias) {
  const std::string text = conv2d(
      "graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float32[1,4,1,1] state, "
      "%3: float32[7,8] input, %4: float32[5,8] state, %5: float32[5] state) {\n"
      "  %6 = Conv(%0, %1, none) $C : float32[2,4,6,6]\n"
      "  %7 = Add(%6, %2) : float32[2,4,6,6]\n"
      "  %8 = Linear(%3, %4, none) : float32[7,5]\n"
      "  %9 = Add(%8, %5) : float32[7,5]\n"
      "  return (%7, %9)\n"
      "}\n");
  EXPECT_EQ(epi_text(text),
            conv2d("graph(%0: float32[2,3,6,6] input, %1: float32[7,8] input, %2: float32[4,3,3,3] state, "
                   "%3: float32[1,4,1,1] state, %4: float32[5,8] state, %5: float32[5] state) {\n"
                   "  %6 = Reshape(%3) {shape=[4]} : float32[4]\n"
                   "  %7 = Conv(%0, %2, %6) $C : float32[2,4,6,6]\n"
                   "  %8 = Linear(%1, %4, %5) : float32[7,5]\n"
                   "  return (%7, %8)\n"
                   "}\n"));
  ir::Graph g = ir::parse(text);
  expect_same(g, cpu::absorb_epilogues(g), random_feeds(g), 1e-5);
}

TEST(AbsorbEpilogues, StopsWhereAnIntermediateIsObservable) {
  // The Relu output is also returned: the Relu is absorbed, the residual Add stays.
  const std::string text =
      "graph(%0: float32[5,8] input, %1: float32[6,8] state, %2: float32[6] state, %3: float32[5,6] input) {\n"
      "  %4 = Linear(%0, %1, %2) : float32[5,6]\n"
      "  %5 = Relu(%4) : float32[5,6]\n"
      "  %6 = Add(%5, %3) : float32[5,6]\n"
      "  return (%6, %5)\n"
      "}\n";
  EXPECT_EQ(epi_text(text),
            "graph(%0: float32[5,8] input, %1: float32[5,6] input, %2: float32[6,8] state, %3: float32[6] state) {\n"
            "  %4 = LinearFused(%0, %2, %3, none) {activation=\"relu\", residual_first=false} : float32[5,6]\n"
            "  %5 = Add(%4, %1) : float32[5,6]\n"
            "  return (%5, %4)\n"
            "}\n");
  ir::Graph g = ir::parse(text);
  expect_same(g, cpu::absorb_epilogues(g), random_feeds(g), 1e-5);
}

TEST(AbsorbEpilogues, LeavesUnsupportedChainsAlone) {
  auto unchanged = [](const std::string& text) { EXPECT_EQ(epi_text(text), ir::print(ir::parse(text))); };
  const std::string head =
      "graph(%0: float32[5,8] input, %1: float32[6,8] state, %2: float32[6] state, %3: float32[5,6] input) {\n"
      "  %4 = Linear(%0, %1, %2) : float32[5,6]\n";
  // The linear output has a second reader / is a graph output.
  unchanged(head + "  %5 = Relu(%4) : float32[5,6]\n  %6 = Add(%4, %5) : float32[5,6]\n  return (%6)\n}\n");
  unchanged(head + "  %5 = Relu(%4) : float32[5,6]\n  return (%5, %4)\n}\n");
  // Activations the post-ops do not implement.
  unchanged(head + "  %5 = Sigmoid(%4) : float32[5,6]\n  return (%5)\n}\n");
  unchanged(head + "  %5 = LeakyRelu(%4) {negative_slope=0.5} : float32[5,6]\n  return (%5)\n}\n");
  // A residual that broadcasts (the op already has a bias, so it is not a bias either).
  unchanged(head + "  %5 = Add(%4, %2) : float32[5,6]\n  return (%5)\n}\n");
  // A residual of another dtype (the Add promotes).
  unchanged(
      "graph(%0: float32[5,8] input, %1: float32[6,8] state, %2: float64[5,6] input) {\n"
      "  %3 = Linear(%0, %1, none) : float32[5,6]\n"
      "  %4 = Add(%3, %2) : float64[5,6]\n"
      "  return (%4)\n}\n");
  // x + x is not a residual.
  unchanged(head + "  %5 = Add(%4, %4) : float32[5,6]\n  return (%5)\n}\n");
  // A bias-less conv followed by an Add broadcasting along the width, not the channels.
  unchanged(conv2d(
      "graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float32[6] state) {\n"
      "  %3 = Conv(%0, %1, none) $C : float32[2,4,6,6]\n"
      "  %4 = Add(%3, %2) : float32[2,4,6,6]\n"
      "  return (%4)\n}\n"));
  // float16 residual and bias adds: the fused kernel would round once where the chain rounds
  // after each step.
  unchanged(
      "graph(%0: float16[5,8] input, %1: float16[6,8] state, %2: float16[5,6] input) {\n"
      "  %3 = Linear(%0, %1, none) : float16[5,6]\n"
      "  %4 = Add(%3, %2) : float16[5,6]\n"
      "  return (%4)\n}\n");
}

TEST(AbsorbEpilogues, SixteenBitTakesTheActivationAlone) {
  // A 16-bit product followed by its activation: exact (the activation runs as eager's kernel on
  // the rounded product), so it is absorbed; a residual after it is not.
  const std::string out = epi_text(
      "graph(%0: bfloat16[5,8] input, %1: bfloat16[6,8] state, %2: bfloat16[5,6] input) {\n"
      "  %3 = Linear(%0, %1, none) : bfloat16[5,6]\n"
      "  %4 = Relu(%3) : bfloat16[5,6]\n"
      "  %5 = Add(%4, %2) : bfloat16[5,6]\n"
      "  return (%5)\n}\n");
  EXPECT_NE(out.find("LinearFused"), std::string::npos) << out;
  EXPECT_NE(out.find("activation=\"relu\""), std::string::npos) << out;
  EXPECT_EQ(out.find("Relu("), std::string::npos) << out;
  EXPECT_NE(out.find("Add("), std::string::npos) << out;  // the residual stays an op of its own
}

TEST(AbsorbEpilogues, AfterBatchNormFoldConvBnReluIsOneKernel) {
  const std::string text = conv2d(
      "graph(%0: float32[2,3,6,6] input, %1: float32[4,3,3,3] state, %2: float32[4] state, %3: float32[4] state, "
      "%4: float32[4] state, %5: float32[4] state, %6: float32[4] state) {\n"
      "  %7 = Conv(%0, %1, %2) $C : float32[2,4,6,6]\n"
      "  %8, %9, %10 = BatchNorm(%7, %3, %4, %5, %6) {training=false, momentum=0.5, eps=0.25} : float32[2,4,6,6], float32[4], float32[4]\n"
      "  %11 = Relu(%8) : float32[2,4,6,6]\n"
      "  return (%11)\n"
      "}\n");
  ir::Graph g = ir::parse(text), f = cpu::absorb_epilogues(ir::fold_batchnorm(g));
  const ir::Node& last = f.nodes().back();
  EXPECT_EQ(last.op, OpId::ConvFused);
  EXPECT_EQ(last.attrs.s("activation"), "relu");
  expect_same(g, f, random_feeds(g, {3}), 1e-5);
}

TEST(AbsorbEpilogues, ReluEpiloguesKeepNanInfAndSignedZerosBitForBit) {
  // oneDNN's relu post-op is max(x, 0): it turned NaN into 0 and -0.0 into +0.0. The fused ops
  // must give the unfused chain's bits on NaN, +-inf and -0.0 products and residuals, for every
  // ReLU position, Linear and Conv, float32 and float64.
  const char* kLinear = "Linear(%0, %1, %2) : $T[4,6]";
  const char* kConv = "Conv(%0, %1, %2) {stride=[1,1], padding_l=[0,0], padding_r=[0,0], dilation=[1,1], groups=1} : $T[4,6,1,1]";
  const char* tails[] = {"  %5 = Relu(%4) : $O\n  return (%5)\n",
                         "  %5 = Add(%4, %3) : $O\n  %6 = Relu(%5) : $O\n  return (%6)\n",
                         "  %5 = Relu(%4) : $O\n  %6 = Add(%5, %3) : $O\n  return (%6)\n",
                         "  %5 = Add(%3, %4) : $O\n  %6 = Relu(%5) : $O\n  return (%6)\n"};
  for (const char* t : {"float32", "float64"})
    for (bool conv : {false, true})
      for (const char* tail : tails) {
        std::string out = std::string(t) + (conv ? "[4,6,1,1]" : "[4,6]");
        std::string in = std::string(t) + (conv ? "[4,3,1,1]" : "[4,3]"), w = std::string(t) + (conv ? "[6,3,1,1]" : "[6,3]");
        std::string text = "graph(%0: " + in + " input, %1: " + w + " state, %2: " + t + "[6] state, %3: " + out +
                           " input) {\n  %4 = " + (conv ? kConv : kLinear) + "\n" + tail + "}\n";
        for (const auto& [from, to] : {std::pair<std::string, std::string>{"$T", t}, {"$O", out}})
          for (size_t p; (p = text.find(from)) != std::string::npos;) text.replace(p, from.size(), to);
        ir::Graph g = ir::parse(text), f = cpu::absorb_epilogues(g);
        const bool residual = std::string(tail).find("Add") != std::string::npos;
        if (!(conv && residual && !cpu::conv_residual_exact(std::string(t) == "float32" ? DType::Float32 : DType::Float64)))
          ASSERT_EQ(f.nodes().back().op, conv ? OpId::ConvFused : OpId::LinearFused) << ir::print(f);
        DType dt = g.value(0).dtype;
        Tensor x = cast(randn(g.value(0).shape, DType::Float64), dt), r = cast(randn(g.value(3).shape, DType::Float64), dt);
        Tensor wt = cast(randn(g.value(1).shape, DType::Float64), dt), b = cast(randn({6}, DType::Float64), dt);
        auto put = [&](const Tensor& a, int64_t i, double v) {
          Tensor c = cast(full({}, v, dt), dt);
          std::memcpy(static_cast<char*>(a.data_ptr()) + i * itemsize(dt), c.data_ptr(), itemsize(dt));
        };
        put(x, 0, NAN);       // row 0: NaN everywhere
        put(x, 3, INFINITY);  // row 1: +-inf (or NaN where inf - inf)
        // Row 2, channel 1 (element 13): products tiny * -tiny underflow to -0.0, so the sum is
        // -0.0; with a -0.0 bias and a -0.0 residual it stays -0.0 through every chain.
        const double tiny = dt == DType::Float32 ? 1e-30 : 1e-200;
        for (int64_t i = 0; i < 3; ++i) put(x, 6 + i, tiny), put(wt, 3 + i, -tiny);
        put(b, 1, -0.0);
        put(r, 13, -0.0);
        put(r, 2, NAN);                                        // a NaN residual
        put(r, 20, -INFINITY);
        TensorList want = ir::interpret(g, {x, r}, {wt, b}), got = ir::interpret(f, {x, r}, {wt, b});
        std::vector<double> av = values(want[0]), cv = values(got[0]);
        // (oneDNN's AVX2 float32 convolutions start their sums at +0.0, so there a -0.0 sum is +0.0.)
        if (!(conv && std::string(t) == "float32" && !__builtin_cpu_supports("avx512f")))
          EXPECT_TRUE(std::signbit(av[13]) && av[13] == 0.0) << "the -0.0 case did not arise";
        for (size_t i = 0; i < av.size(); ++i)
          EXPECT_TRUE(std::signbit(av[i]) == std::signbit(cv[i]) && (av[i] == cv[i] || (std::isnan(av[i]) && std::isnan(cv[i]))))
              << t << (conv ? " conv " : " linear ") << tail << "element " << i << ": fused " << cv[i] << ", unfused " << av[i];
      }
}

// ---- both passes on a traced graph, against eager execution -----------------------------------

TEST(FusionPasses, TracedConvBnResidualReluAndLinearBiasGeluMatchEager) {
  Tensor w = randn({4, 3, 3, 3}, DType::Float32), b = randn({4}, DType::Float32);
  Tensor rm = randn({4}, DType::Float32), rv = add(rand({4}, DType::Float32), full({}, 0.5, DType::Float32));
  Tensor gamma = randn({4}, DType::Float32), beta = randn({4}, DType::Float32);
  Tensor wl = randn({5, 8}, DType::Float32), bl = randn({5}, DType::Float32);
  Tensor x = randn({2, 3, 8, 8}, DType::Float32), r = randn({2, 4, 8, 8}, DType::Float32), h = randn({6, 8}, DType::Float32);
  auto model = [&] {
    Tensor c = conv_nd(2, x, w, b, {1, 1}, {1, 1}, "", {1, 1}, 1);
    Tensor y = relu(add(batch_norm(c, rm, rv, gamma, beta, false, 0.1, 1e-5), r));
    Tensor z = gelu(add(linear(h, wl), bl), "tanh");
    return TensorList{y, z};
  };
  Tracer tr;
  {
    TraceGuard guard(&tr);
    for (const Tensor& t : {x, r, h}) tr.add_input(t);
    tr.set_outputs(model());
  }
  ASSERT_TRUE(tr.ok());
  ir::Graph opt = cpu::absorb_epilogues(ir::fold_batchnorm(tr.graph()));
  std::vector<OpId> kernels;
  for (const ir::Node& n : opt.nodes())
    if (n.op == OpId::ConvFused || n.op == OpId::LinearFused || n.op == OpId::BatchNorm || n.op == OpId::Conv ||
        n.op == OpId::Linear)
      kernels.push_back(n.op);
  // The Linear keeps its GELU as a node (not a post-op): it stays a plain Linear.
  // (Where a conv takes no residual, AVX2, the BN-folded conv stays a Conv: the Add comes between it and the ReLU.)
  EXPECT_EQ(kernels, (std::vector<OpId>{cpu::conv_residual_exact(DType::Float32) ? OpId::ConvFused : OpId::Conv, OpId::Linear}))
      << ir::print(opt);
  for (int call = 0; call < 2; ++call) {
    TensorList eager = model(), got = ir::interpret(opt, {x, r, h}, tr.state_feeds());
    for (size_t k = 0; k < eager.size(); ++k) {
      std::vector<double> e = values(eager[k]), o = values(got[k]);
      ASSERT_EQ(e.size(), o.size());
      for (size_t i = 0; i < e.size(); ++i) EXPECT_NEAR(o[i], e[i], 1e-5 * (1 + std::fabs(e[i]))) << "call " << call;
    }
    // Between calls the user changes the bound state in place; the compiled graph must see it.
    // Raw writes through data<T>() bump the version as in-place ops do (caches derived from the
    // contents, such as the packed conv weights eager reads, key on it).
    rv.data<float>()[2] *= 3.0f;
    rm.data<float>()[0] += 1.0f;
    gamma.data<float>()[1] = -2.0f;
    w.data<float>()[5] += 0.5f;
    for (const Tensor* t : {&rv, &rm, &gamma, &w}) t->bump_version();
  }
}

// ---- scatter_sums_to_cat --------------------------------------------------------------------------

TEST(ScatterSumsToCat, DisjointSlicesCoveringTheDimBecomeOneCat) {
  // Three slice-scatters into an expanded zero, added in any order: Cat in range order. The
  // partial sum and the scatters are dead afterwards (DCE removes them).
  const char* in =
      "graph(%0: float32[2,3] input, %1: float32[2,4] input, %2: float32[2,2] input, %3: float32[] const=0) {\n"
      "  %4 = Expand(%3) {shape=[2,9]} : float32[2,9]\n"
      "  %5 = SliceScatter(%4, %0) {dims=[1], starts=[0], ends=[3], steps=[1]} : float32[2,9]\n"
      "  %6 = SliceScatter(%4, %2) {dims=[1], starts=[7], ends=[9], steps=[1]} : float32[2,9]\n"
      "  %7 = SliceScatter(%4, %1) {dims=[1], starts=[3], ends=[7], steps=[1]} : float32[2,9]\n"
      "  %8 = Add(%5, %6) : float32[2,9]\n"
      "  %9 = Add(%8, %7) : float32[2,9]\n"
      "  %10 = Exp(%9) : float32[2,9]\n"
      "  return (%10)\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  ir::Graph c = ir::dead_code_elimination(ir::scatter_sums_to_cat(g));
  EXPECT_EQ(ir::print(c),
            "graph(%0: float32[2,3] input, %1: float32[2,4] input, %2: float32[2,2] input) {\n"
            "  %3 = Cat(%0, %1, %2) {dim=1} : float32[2,9]\n"
            "  %4 = Exp(%3) : float32[2,9]\n"
            "  return (%4)\n"
            "}\n");
  expect_same(g, c, random_feeds(g), 0.0);
}

TEST(ScatterSumsToCat, LeavesEverythingElseAlone) {
  // Not rewritten: ranges that leave a gap (a partial sum, kept), overlapping ranges, a base that
  // is not zero, a step of 2.
  const char* gap =
      "graph(%0: float32[4] input, %1: float32[3] input, %2: float32[] const=0) {\n"
      "  %3 = Expand(%2) {shape=[9]} : float32[9]\n"
      "  %4 = SliceScatter(%3, %0) {dims=[0], starts=[0], ends=[4], steps=[1]} : float32[9]\n"
      "  %5 = SliceScatter(%3, %1) {dims=[0], starts=[5], ends=[8], steps=[1]} : float32[9]\n"
      "  %6 = Add(%4, %5) : float32[9]\n"
      "  %7 = Exp(%6) : float32[9]\n"
      "  return (%7)\n"
      "}\n";
  const char* overlap =
      "graph(%0: float32[5] input, %1: float32[5] input, %2: float32[] const=0) {\n"
      "  %3 = Expand(%2) {shape=[9]} : float32[9]\n"
      "  %4 = SliceScatter(%3, %0) {dims=[0], starts=[0], ends=[5], steps=[1]} : float32[9]\n"
      "  %5 = SliceScatter(%3, %1) {dims=[0], starts=[4], ends=[9], steps=[1]} : float32[9]\n"
      "  %6 = Add(%4, %5) : float32[9]\n"
      "  %7 = Exp(%6) : float32[9]\n"
      "  return (%7)\n"
      "}\n";
  const char* nonzero =
      "graph(%0: float32[4] input, %1: float32[5] input, %2: float32[] const=1) {\n"
      "  %3 = Expand(%2) {shape=[9]} : float32[9]\n"
      "  %4 = SliceScatter(%3, %0) {dims=[0], starts=[0], ends=[4], steps=[1]} : float32[9]\n"
      "  %5 = SliceScatter(%3, %1) {dims=[0], starts=[4], ends=[9], steps=[1]} : float32[9]\n"
      "  %6 = Add(%4, %5) : float32[9]\n"
      "  %7 = Exp(%6) : float32[9]\n"
      "  return (%7)\n"
      "}\n";
  const char* stepped =
      "graph(%0: float32[5] input, %1: float32[4] input, %2: float32[] const=0) {\n"
      "  %3 = Expand(%2) {shape=[9]} : float32[9]\n"
      "  %4 = SliceScatter(%3, %0) {dims=[0], starts=[0], ends=[9], steps=[2]} : float32[9]\n"
      "  %5 = SliceScatter(%3, %1) {dims=[0], starts=[1], ends=[9], steps=[2]} : float32[9]\n"
      "  %6 = Add(%4, %5) : float32[9]\n"
      "  %7 = Exp(%6) : float32[9]\n"
      "  return (%7)\n"
      "}\n";
  for (const char* t : {gap, overlap, nonzero, stepped}) {
    ir::Graph g = ir::parse(t);
    EXPECT_EQ(ir::print(ir::scatter_sums_to_cat(g)), ir::print(g)) << t;
  }
}

TEST(ScatterSumsToCat, ASumTheCallerSeesBecomesACatToo) {
  // The gradient of a packed weight is a graph output: the Cat is a new node, its own tensor.
  const char* in =
      "graph(%0: float32[4,2] input, %1: float32[5,2] input, %2: float32[] const=0) {\n"
      "  %3 = Expand(%2) {shape=[9,2]} : float32[9,2]\n"
      "  %4 = SliceScatter(%3, %0) {dims=[0], starts=[0], ends=[4], steps=[1]} : float32[9,2]\n"
      "  %5 = SliceScatter(%3, %1) {dims=[0], starts=[4], ends=[9], steps=[1]} : float32[9,2]\n"
      "  %6 = Add(%5, %4) : float32[9,2]\n"
      "  return (%6)\n"
      "}\n";
  ir::Graph g = ir::parse(in);
  ir::Graph c = ir::dead_code_elimination(ir::scatter_sums_to_cat(g));
  EXPECT_EQ(ir::print(c),
            "graph(%0: float32[4,2] input, %1: float32[5,2] input) {\n"
            "  %2 = Cat(%0, %1) {dim=0} : float32[9,2]\n"
            "  return (%2)\n"
            "}\n");
  expect_same(g, c, random_feeds(g), 0.0);
}
