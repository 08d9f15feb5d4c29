// The CUDA backend's fused-kernel generator and NVRTC, without a GPU (they need none): the shared
// grouping pass run with the CUDA rule on "@cuda:0" IR text, the CUDA C generated for the groups
// (one kernel per group, the scalar functors called for each node in its eager compute dtype,
// host constants by value, attribute functors from the launch arguments, 16-bit values rounded
// after each op), what the generator refuses and why, and NVRTC compiling whole generated programs
// (PTX for sm_90, and a cubin) with the embedded headers only. Running the kernels is
// tests/python/test_cuda_fused.py's (on a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "lucid/backends/cuda/compile/fused_source.h"
#include "lucid/backends/cuda/compile/nvrtc_program.h"
#include "lucid/compile/ir/graph.h"
#include "lucid/compile/passes/backend_passes.h"
#include "lucid/compile/passes/passes.h"

using namespace lucid;

namespace {

// The shared grouping pass with the CUDA backend's rule (whatever the graph's device).
ir::Graph grouped(const std::string& text) {
  ir::Graph g = ir::group_elementwise(ir::parse(text), ir::backend_passes(DeviceType::CUDA));
  ir::verify(g);
  return g;
}

std::vector<cuda::FusedKernelSource> kernels_of(const ir::Graph& g) {
  std::vector<cuda::FusedKernelSource> ks;
  for (const ir::Node& n : g.nodes())
    if (n.body) ks.push_back(cuda::generate_fused_kernel(g, n, str("lucid_fused_", ks.size())));
  return ks;
}

std::string program_of(const std::vector<cuda::FusedKernelSource>& ks) {
  std::vector<const cuda::FusedKernelSource*> p;
  for (const auto& k : ks) p.push_back(&k);
  return cuda::fused_program_source(p);
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// A GELU-MLP tail: bias add (broadcast), gelu (tanh: an attribute functor), a residual add
// and a Python scalar; plus a float16 chain and a comparison written as bool.
const char* kGraph =
    "graph(%0: float32[64,256]@cuda:0 input, %1: float32[256]@cuda:0 state, %2: float32[64,256]@cuda:0 input, "
    "%3: float64[] const=0.5, %4: float16[64,256]@cuda:0 input) {\n"
    "  %5 = Add(%0, %1) : float32[64,256]@cuda:0\n"
    "  %6 = Gelu(%5) {approximate=\"tanh\"} : float32[64,256]@cuda:0\n"
    "  %7 = Add(%6, %2) : float32[64,256]@cuda:0\n"
    "  %8 = Mul(%7, %3) : float32[64,256]@cuda:0\n"
    "  %9 = Sigmoid(%4) : float16[64,256]@cuda:0\n"
    "  %10 = Mul(%9, %4) : float16[64,256]@cuda:0\n"
    "  %11 = Gt(%10, %3) : bool[64,256]@cuda:0\n"
    "  return (%8, %11)\n"
    "}\n";

}  // namespace

TEST(CudaFusedSource, CudaRuleGroupsChainsAndTheGeneratorCallsTheFunctors) {
  ir::Graph g = grouped(kGraph);
  std::vector<cuda::FusedKernelSource> ks = kernels_of(g);
  ASSERT_EQ(ks.size(), 2u) << ir::print(g);  // the float32 chain and the float16 chain
  for (const auto& k : ks) EXPECT_EQ(k.refused, "") << k.refused;
  if (std::getenv("LUCID_PRINT_FUSED")) std::printf("%s\n", program_of(ks).c_str());  // to read what is generated
  const std::string& a = ks[0].code;
  EXPECT_TRUE(has(a, "extern \"C\" __global__ void __launch_bounds__(256) lucid_fused_0(")) << a;
  EXPECT_TRUE(has(a, "lucid_keep(lucid::sm::Add::apply<float>(")) << a;
  EXPECT_TRUE(has(a, "const lucid::sm::Gelu f")) << a;            // built on the host from the Attrs
  EXPECT_TRUE(has(a, "lucid_host<double>(a.host[3], a.host_at >> 3 & 1u)")) << a;  // the Python scalar: by value (or address)
  EXPECT_EQ(ks[0].attrs.size(), 1u);                              // Gelu{tanh_approx}: one word
  EXPECT_EQ(ks[0].attrs[0] & 0xff, 1u);                           // tanh_approx = true
  EXPECT_EQ(ks[0].host_input, (std::vector<char>{0, 0, 0, 1}));
  const std::string& b = ks[1].code;
  EXPECT_TRUE(has(b, "lucid::sm::Sigmoid::apply<float>(")) << b;  // float16 computes in float...
  EXPECT_TRUE(has(b, "lucid_round_h(")) << b;                     // ...rounded after every op
  EXPECT_TRUE(has(b, "lucid::sm::Gt::apply<float>(")) << b;
  EXPECT_TRUE(has(b, "static_cast<bool*>(a.out[0])[i]")) << b;
  // The source names values by position, not by value id: a body read back from the compile
  // cache (its ids renumbered by the text round trip) generates the same program, the same cubin key.
  EXPECT_EQ(program_of(kernels_of(ir::parse(ir::print(g)))), program_of(ks));
  EXPECT_EQ(ks[1].layout.words(), 4 + cuda::kFusedMaxDims + 2 + 1 + 2 * cuda::kFusedMaxDims + 2 + 1);  // 4: n, masks, host-pointer mask
}

TEST(CudaFusedSource, NvrtcCompilesGeneratedProgramsWithoutAGpu) {
  setenv("LUCID_COMPILE_CACHE_DIR", "0", 1);  // NVRTC itself, not a cubin an earlier run left on disk
  ir::Graph g = grouped(kGraph);
  const std::string src = program_of(kernels_of(g));
  std::string ptx = cuda::compile_ptx(src, 90);
  EXPECT_TRUE(has(ptx, ".entry lucid_fused_0")) << ptx.substr(0, 400);
  EXPECT_TRUE(has(ptx, ".entry lucid_fused_1"));
  EXPECT_TRUE(has(ptx, "add.rn.f32")) << "no rounding boundary between ops";
  cuda::Cubin c = cuda::compile_cubin(src, 90);
  ASSERT_TRUE(c.image) << c.error;
  EXPECT_EQ(c.from, "nvrtc");
  EXPECT_GT(c.image->size(), 1000u);
  EXPECT_EQ(c.key.size(), 32u);
  cuda::Cubin again = cuda::compile_cubin(src, 90);  // the process cache
  EXPECT_EQ(again.from, "memory");
  EXPECT_EQ(again.image, c.image);
  // A source NVRTC rejects: no exception, the log.
  cuda::Cubin bad = cuda::compile_cubin(src + "\nthis is not CUDA;\n", 90);
  EXPECT_FALSE(bad.image);
  EXPECT_TRUE(has(bad.error, "error")) << bad.error;
  EXPECT_GE(cuda::nvrtc_max_arch(), 90);
  unsetenv("LUCID_COMPILE_CACHE_DIR");
}

// Every op of the functor table (float32, and int32/bool where they differ), generated into one
// kernel and compiled, so a functor the NVRTC headers can't build fails here, not on a GPU.
TEST(CudaFusedSource, EveryTableOpCompiles) {
  setenv("LUCID_COMPILE_CACHE_DIR", "0", 1);
  const std::string head = "graph(%0: float32[4,8]@cuda:0 input, %1: float32[4,8]@cuda:0 input, %2: float32[4,8]@cuda:0 input, "
                           "%3: int32[4,8]@cuda:0 input, %4: bool[4,8]@cuda:0 input) {\n";
  std::vector<std::string> lines;  // "<op>(<args>)<attrs> : <dtype>"
  auto node = [&](const std::string& op, const std::string& args, const std::string& attrs, const std::string& type) {
    lines.push_back(str(op, "(", args, ")", attrs.empty() ? "" : " " + attrs, " : ", type, "[4,8]@cuda:0"));
  };
  for (const char* op : {"Neg", "Abs", "Exp", "Log", "Log2", "Log10", "Log1p", "Expm1", "Sqrt", "Rsqrt", "Reciprocal",
                         "Square", "Sin", "Cos", "Tanh", "Sigmoid", "Erf", "Sign", "Floor", "Ceil", "Round", "Trunc",
                         "Relu", "Relu6", "Silu", "Hardswish", "Hardsigmoid", "Selu", "Mish", "Softsign", "LogSigmoid",
                         "Tanhshrink", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erfc",
                         "Erfinv", "Lgamma", "Digamma"})
    node(op, "%0", "", "float32");
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum", "FloorDivide", "Remainder", "Atan2",
                         "ReluBackward", "SigmoidBackward", "TanhBackward", "SiluBackward"})
    node(op, "%0, %1", "", "float32");
  for (const char* op : {"Eq", "Lt", "Ge"}) node(op, "%0, %1", "", "bool");
  node("Lerp", "%0, %1, %2", "", "float32");
  node("Where", "%4, %0, %1", "", "float32");
  node("Clamp", "%0", "{max=1.5, min=-0.5}", "float32");
  node("LeakyRelu", "%0", "{negative_slope=0.2}", "float32");
  node("Polygamma", "%0", "{n=2}", "float32");
  node("Gelu", "%0", "{approximate=\"none\"}", "float32");
  node("GeluBackward", "%0, %1", "{approximate=\"tanh\"}", "float32");
  for (const char* op : {"Add", "Mul", "Maximum", "BitwiseAnd"}) node(op, "%3, %3", "", "int32");
  for (const char* op : {"Abs", "Neg"}) node(op, "%3", "", "int32");
  node("LogicalXor", "%4, %4", "", "bool");
  // The nodes read only the inputs (the grouping pass would leave each alone): groups of at most
  // kFusedMaxOutputs nodes, as the pass would emit them, in one graph, so one program.
  ir::Graph g;
  std::vector<int> ins;
  std::shared_ptr<const ir::Graph> first;
  std::vector<int> outs;
  for (size_t at = 0; at < lines.size(); at += cuda::kFusedMaxOutputs) {
    std::string text = head, ret;
    for (size_t k = at; k < std::min(lines.size(), at + cuda::kFusedMaxOutputs); ++k) {
      text += str("  %", 5 + k - at, " = ", lines[k], "\n");
      ret += str(ret.empty() ? "" : ", ", "%", 5 + k - at);
    }
    auto body = std::make_shared<const ir::Graph>(ir::parse(text + "  return (" + ret + ")\n}\n"));
    if (ins.empty())
      for (int id : body->inputs()) ins.push_back(g.add_input(body->value(id).meta()));
    std::vector<TensorMeta> metas;
    for (int id : body->outputs()) metas.push_back(body->value(id).meta());
    for (int o : g.add_fused(ins, body, metas)) outs.push_back(o);
  }
  g.set_outputs(outs);
  ir::verify(g);
  std::vector<cuda::FusedKernelSource> ks = kernels_of(g);
  ASSERT_EQ(ks.size(), (lines.size() + cuda::kFusedMaxOutputs - 1) / cuda::kFusedMaxOutputs);
  for (const auto& k : ks) EXPECT_EQ(k.refused, "") << k.refused;
  cuda::Cubin c = cuda::compile_cubin(program_of(ks), 90);
  EXPECT_TRUE(c.image) << c.error.substr(0, 3000);
  unsetenv("LUCID_COMPILE_CACHE_DIR");
}

TEST(CudaFusedSource, RefusesWhatItCannotRunAndSaysWhy) {
  // A group computing host values (0-d CPU scalars: an optimizer's step counters) runs op by op.
  ir::Graph g = grouped(
      "graph(%0: float32[] input, %1: float32[] const=0.9) {\n"
      "  %2 = Mul(%0, %1) : float32[]\n"
      "  %3 = Add(%2, %1) : float32[]\n"
      "  return (%3)\n"
      "}\n");
  std::vector<cuda::FusedKernelSource> ks = kernels_of(g);
  ASSERT_EQ(ks.size(), 1u) << ir::print(g);
  EXPECT_TRUE(has(ks[0].refused, "host value")) << ks[0].refused;
  EXPECT_TRUE(ks[0].code.empty());
  // More inputs than the argument struct holds.
  std::string text = "graph(";
  for (int i = 0; i <= cuda::kFusedMaxInputs; ++i) text += str(i ? ", " : "", "%", i, ": float32[8]@cuda:0 input");
  text += ") {\n";
  int id = cuda::kFusedMaxInputs + 1, last = 0;
  for (int i = 1; i <= cuda::kFusedMaxInputs; ++i, ++id) {
    text += str("  %", id, " = Add(%", i == 1 ? 0 : id - 1, ", %", i, ") : float32[8]@cuda:0\n");
    last = id;
  }
  text += str("  return (%", last, ")\n}\n");
  ks = kernels_of(grouped(text));
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_TRUE(has(ks[0].refused, "at most 16")) << ks[0].refused;
}
