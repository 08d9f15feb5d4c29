// The device in the IR: Device parsing and validation (as torch.device), the "@cuda:0" suffix in
// the IR text and its round trip, canonical_hash separating devices, verify/check_types, and the
// passes carrying a value's device through, and the backend picked by a graph's device (its pass
// description, its executor), and host scalars (CPU 0-d values) joining a device graph. The CUDA
// graphs here are built, optimised and made into programs, never run (no GPU is assumed): their
// executor is registered exactly when the build has the CUDA backend; the CUDA executor's runs
// are tested from Python on a GPU (tests/python/test_compile_*.py, the "cuda" halves).
#include <gtest/gtest.h>

#include "lucid/backends/cuda/device_info.h"
#include "lucid/compile/ir/graph.h"
#include "lucid/compile/passes/passes.h"
#include "lucid/compile/runtime/executable.h"
#include "lucid/ops/core.h"

using namespace lucid;

namespace {

const char* kCpu =
    "graph(%0: float32[2,3] input, %1: float32[3] state) {\n"
    "  %2 = Add(%0, %1) : float32[2,3]\n"
    "  %3 = Relu(%2) : float32[2,3]\n"
    "  assign %1 <- %1\n"
    "  return (%3)\n"
    "}\n";
const char* kCuda =
    "graph(%0: float32[2,3]@cuda:0 input, %1: float32[3]@cuda:0 state) {\n"
    "  %2 = Add(%0, %1) : float32[2,3]@cuda:0\n"
    "  %3 = Relu(%2) : float32[2,3]@cuda:0\n"
    "  assign %1 <- %1\n"
    "  return (%3)\n"
    "}\n";

void expect_parse_error(const std::string& text, const std::string& fragment) {
  try {
    ir::parse(text);
    FAIL() << "expected a parse error for " << text;
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Device, ParsesAndPrintsAsTorch) {
  EXPECT_EQ(parse_device("cpu"), Device{});
  EXPECT_EQ(parse_device("cpu:0"), Device{});
  EXPECT_EQ(parse_device("cuda"), (Device{DeviceType::CUDA, 0}));  // the current device
  EXPECT_EQ(parse_device("cuda:0"), (Device{DeviceType::CUDA, 0}));
  EXPECT_EQ(parse_device("cuda:12"), (Device{DeviceType::CUDA, 12}));
  EXPECT_EQ(parse_device("cpu").str(), "cpu");
  EXPECT_EQ(parse_device("cuda").str(), "cuda:0");
  EXPECT_EQ(parse_device("cuda:3").str(), "cuda:3");
  EXPECT_NE(parse_device("cuda:0"), parse_device("cuda:1"));
  EXPECT_NE(parse_device("cuda:0"), parse_device("cpu"));
  EXPECT_TRUE(Device{}.is_cpu());
}

TEST(Device, RejectsMalformedStrings) {
  for (const char* bad : {"cpu:1", "cuda:-1", "cuda:", "cuda:01", "cuda:x", "cuda:1:2", "tpu", "CUDA", "", "cuda:99999"})
    EXPECT_THROW(parse_device(bad), ValueError) << bad;
}

// Without a backend (CPU-only build) a CUDA device raises NotImplementedError; with one, the
// device must exist (no GPU: "no CUDA device is available"; past the last: "invalid device ordinal").
TEST(Device, CudaNeedsABackendAndADevice) {
  EXPECT_NO_THROW(check_available(parse_device("cpu")));
  const DeviceHooks* hooks = device_hooks(DeviceType::CUDA);
  const int n = hooks ? hooks->count() : 0;
  const Device past = parse_device(str("cuda:", n));
  try {
    check_available(past, past.str());
    FAIL() << "expected an error for " << past.str();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'" + past.str() + "'"), std::string::npos) << what;
    if (!hooks) {
      EXPECT_NE(dynamic_cast<const NotImplementedError*>(&e), nullptr) << what;
      EXPECT_NE(what.find("no CUDA backend"), std::string::npos) << what;
    } else {
      EXPECT_NE(what.find(n == 0 ? "no CUDA device is available" : "invalid device ordinal"), std::string::npos) << what;
    }
  }
}

TEST(IRDevice, CpuTextHasNoDevice) {
  ir::Graph g = ir::parse(kCpu);
  EXPECT_EQ(ir::print(g), kCpu);
  for (const ir::Value& v : g.values()) EXPECT_TRUE(v.device.is_cpu());
}

TEST(IRDevice, CudaTextRoundTrips) {
  ir::Graph g = ir::parse(kCuda);
  for (const ir::Value& v : g.values()) EXPECT_EQ(v.device, (Device{DeviceType::CUDA, 0}));
  EXPECT_EQ(ir::print(g), kCuda);
  EXPECT_EQ(ir::print(ir::parse(ir::print(g))), kCuda);
  EXPECT_EQ(ir::canonical_hash(ir::parse(ir::print(g))), ir::canonical_hash(g));
  // "cuda" without an index is the current device, cuda:0
  std::string short_form = kCuda;
  for (size_t p; (p = short_form.find("@cuda:0")) != std::string::npos;) short_form.replace(p, 7, "@cuda");
  EXPECT_EQ(ir::print(ir::parse(short_form)), kCuda);
}

TEST(IRDevice, DeviceSeparatesHashAndText) {
  ir::Graph cpu = ir::parse(kCpu), cuda0 = ir::parse(kCuda);
  std::string one = kCuda;
  for (size_t p; (p = one.find("@cuda:0")) != std::string::npos;) one.replace(p, 7, "@cuda:1");
  ir::Graph cuda1 = ir::parse(one);
  EXPECT_NE(ir::print(cpu), ir::print(cuda0));
  EXPECT_NE(ir::print(cuda0), ir::print(cuda1));
  EXPECT_NE(ir::canonical_hash(cpu), ir::canonical_hash(cuda0));
  EXPECT_NE(ir::canonical_hash(cuda0), ir::canonical_hash(cuda1));
  EXPECT_NE(ir::canonical_hash(cpu), ir::canonical_hash(cuda1));
}

TEST(IRDevice, OneValueOnAnotherDeviceChangesTheHash) {
  // Built through the API: identical graphs but for the output's device.
  auto build = [](Device out) {
    ir::Graph g;
    int x = g.add_input({{2}, DType::Float32});
    int y = g.add_node(OpId::Neg, {x}, {}, {TensorMeta{{2}, DType::Float32, out}})[0];
    g.set_outputs({y});
    return g;
  };
  ir::Graph a = build(Device{}), b = build(Device{DeviceType::CUDA, 0});
  EXPECT_NE(ir::canonical_hash(a), ir::canonical_hash(b));
  EXPECT_EQ(ir::print(b), "graph(%0: float32[2] input) {\n  %1 = Neg(%0) : float32[2]@cuda:0\n  return (%1)\n}\n");
  EXPECT_EQ(ir::canonical_hash(ir::parse(ir::print(b))), ir::canonical_hash(b));
  // The CPU graph hashes as the same text parsed: the device adds nothing for CPU values.
  EXPECT_EQ(ir::canonical_hash(ir::parse(ir::print(a))), ir::canonical_hash(a));
  // A device mismatch between the op's inputs and its recorded result is a type error.
  EXPECT_NO_THROW(ir::check_types(a));
  EXPECT_THROW(ir::check_types(b), Error);
  EXPECT_NO_THROW(ir::check_types(ir::parse(kCuda)));
}

TEST(IRDevice, ParserRejectsBadDevices) {
  expect_parse_error("graph(%0: float32[2]@tpu input) {\n  return (%0)\n}\n", "a device");
  expect_parse_error("graph(%0: float32[2]@cpu:1 input) {\n  return (%0)\n}\n", "a device");
  expect_parse_error("graph(%0: float32[2]@cuda:-1 input) {\n  return (%0)\n}\n", "a device");
  expect_parse_error("graph(%0: float32[2]@ input) {\n  return (%0)\n}\n", "a device");
  expect_parse_error("graph(%0: float32[2]@cuda:01 input) {\n  return (%0)\n}\n", "a device");
  expect_parse_error("graph(%0: float32[]@cuda:0 const=1) {\n  return (%0)\n}\n", "a CPU constant");
  // "@cpu" is accepted and is the CPU (printed without it)
  EXPECT_EQ(ir::print(ir::parse("graph(%0: float32[2]@cpu input) {\n  return (%0)\n}\n")),
            "graph(%0: float32[2] input) {\n  return (%0)\n}\n");
}

TEST(IRDevice, VerifyRejectsAnAssignAcrossDevices) {
  EXPECT_THROW(ir::parse("graph(%0: float32[2] input, %1: float32[2]@cuda:0 state) {\n"
                         "  assign %1 <- %0\n  return (%0)\n}\n"),
               Error);
}

TEST(IRDevice, PassesKeepTheDevice) {
  // Add + Relu fuse into one FusedElementwise node; its body and results stay on cuda:0. No CUDA
  // backend registers pass rules yet, so the CPU's rules stand in for them.
  ir::PassStats stats;
  ir::Graph opt = ir::optimize(ir::parse(kCuda), ir::backend_passes(DeviceType::CPU), "", &stats);
  std::string text = ir::print(opt);
  EXPECT_EQ(text.find("float32[2,3] "), std::string::npos) << text;
  EXPECT_EQ(text.find("float32[3] "), std::string::npos) << text;
  std::function<void(const ir::Graph&)> all_cuda = [&](const ir::Graph& g) {
    for (const ir::Value& v : g.values()) EXPECT_EQ(v.device, (Device{DeviceType::CUDA, 0})) << text;
    for (const ir::Node& n : g.nodes())
      if (n.body) all_cuda(*n.body);
  };
  all_cuda(opt);
  EXPECT_NO_THROW(ir::check_types(opt));
  // and the same graph on the CPU optimizes to the same text without the devices
  std::string cpu_text = ir::print(ir::optimize(ir::parse(kCpu), "", &stats));
  for (size_t p; (p = text.find("@cuda:0")) != std::string::npos;) text.erase(p, 7);
  EXPECT_EQ(text, cpu_text);
}

TEST(IRDevice, ElementwiseGroupsKeepToOneDevice) {
  // Host scalar math (%4, %5: an optimizer's bias corrections on the CPU) and a 0-d device leaf
  // (%6) both depend only on inputs and states, but form no group together; the host chain is a
  // group of its own, which the CUDA executor runs before a graph replay. The CPU's rules stand
  // in for the CUDA backend's (the pass's device rule is the shared one).
  ir::Graph g = ir::parse(
      "graph(%0: float32[4]@cuda:0 input, %1: float32[] input, %2: float32[] input, %3: float32[]@cuda:0 state) {\n"
      "  %4 = Mul(%1, %2) : float32[]\n"
      "  %5 = Sub(%4, %2) : float32[]\n"
      "  %6 = Add(%3, %1) : float32[]@cuda:0\n"
      "  %7 = Mul(%0, %5) : float32[4]@cuda:0\n"
      "  %8 = Relu(%7) : float32[4]@cuda:0\n"
      "  assign %3 <- %6\n"
      "  return (%8)\n}\n");
  ir::Graph grouped = ir::group_elementwise(g, ir::backend_passes(DeviceType::CPU));
  int groups = 0;
  for (const ir::Node& n : grouped.nodes()) {
    if (!n.body) continue;
    ++groups;
    const Device d = n.body->value(n.body->nodes().at(0).outputs.at(0)).device;
    for (const ir::Node& b : n.body->nodes()) EXPECT_EQ(n.body->value(b.outputs.at(0)).device, d) << ir::print(grouped);
  }
  EXPECT_EQ(groups, 2) << ir::print(grouped);  // {%4, %5} on the host, {%7, %8} on the device; %6 alone
}

TEST(IRDevice, PipelinePicksTheBackendOfTheGraphsDevice) {
  // The CUDA graph gets the CUDA backend's description: in a CUDA build its grouping rule (the
  // NVRTC-fused kernels) groups Add + Relu; in a CPU-only build there is none, only the shared
  // passes run, and the CPU's rule (its block interpreter) does not apply to a CUDA graph.
  ir::Graph opt = ir::optimize(ir::parse(kCuda), "", nullptr);
  if (ir::backend_passes(DeviceType::CUDA).fused_elementwise_dtype) {
    std::string text = ir::print(opt);
    EXPECT_NE(text.find("FusedElementwise(%0, %1) : float32[2,3]@cuda:0"), std::string::npos) << text;
  } else {
    EXPECT_EQ(ir::print(opt), kCuda);
  }
  EXPECT_EQ(ir::graph_device(opt), (Device{DeviceType::CUDA, 0}));
  EXPECT_EQ(ir::graph_device(ir::parse(kCpu)), Device{});
  EXPECT_STREQ(ir::backend_passes(DeviceType::CPU).name, "cpu");
  EXPECT_EQ(ir::backend_passes(DeviceType::CUDA).rewrites.size(), 0u);
  EXPECT_THROW(ir::graph_device(ir::parse("graph(%0: float32[2] input, %1: float32[2]@cuda:0 input) {\n"
                                          "  return (%0, %1)\n}\n")),
               NotImplementedError);
}

TEST(IRDevice, ProgramIsDeviceNeutralAndTheExecutorIsTheDevices) {
  // The program of a CUDA graph needs no backend: its instructions name ops and value slots only.
  ir::Graph cuda = ir::parse(kCuda);
  rt::Program p(cuda, ir::plan_memory(cuda));
  EXPECT_EQ(p.device(), (Device{DeviceType::CUDA, 0}));
  ASSERT_EQ(p.instructions().size(), 2u);
  EXPECT_EQ(p.instructions()[0].node->op, OpId::Add);
  EXPECT_EQ(p.instructions()[1].kind, rt::Instruction::Kind::Kernel);
  // Running it needs the CUDA backend's executor: registered by a CUDA build, absent otherwise.
  if (cuda::is_built()) {
    EXPECT_NE(rt::executor_factory(DeviceType::CUDA), nullptr);
    EXPECT_STREQ(ir::backend_passes(DeviceType::CUDA).name, "cuda");
  } else {
    EXPECT_EQ(rt::executor_factory(DeviceType::CUDA), nullptr);
    try {
      rt::Executable exe(cuda, ir::plan_memory(cuda));
      FAIL() << "expected NotImplementedError";
    } catch (const NotImplementedError& e) {
      EXPECT_NE(std::string(e.what()).find("no executor runs compiled programs on cuda:0"), std::string::npos) << e.what();
    }
  }
  // The same graph on the CPU runs on the CPU executor: relu(x + s).
  ASSERT_NE(rt::executor_factory(DeviceType::CPU), nullptr);
  ir::Graph cpu = ir::parse(kCpu);
  rt::Executable exe(cpu, ir::plan_memory(cpu));
  Tensor x = Tensor::empty({2, 3}, DType::Float32), st = Tensor::empty({3}, DType::Float32);
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(i) - 3.f;
  for (int i = 0; i < 3; ++i) st.data<float>()[i] = 0.5f;
  TensorList y = exe.run({x}, {st});
  ASSERT_EQ(y.size(), 1u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[0].data<float>()[i], std::max(0.f, static_cast<float>(i) - 2.5f));
  EXPECT_EQ(exe.num_instructions(), 2u);
  EXPECT_EQ(exe.pooled_frames(), 1u);
  exe.trim();
  EXPECT_EQ(exe.pooled_frames(), 0u);
}

TEST(IRDevice, HostScalarsJoinADeviceGraph) {
  // A CPU 0-d input (a hyper-parameter), a CPU 0-d state (a step counter) and an op over them
  // alone (it runs on the CPU, as eagerly) join a CUDA graph; a CPU value with dims does not.
  ir::Graph g = ir::parse(
      "graph(%0: float32[2]@cuda:0 input, %1: float64[] input, %2: float32[] state) {\n"
      "  %3 = Add(%2, %1) : float64[]\n"
      "  %4 = Mul(%0, %3) : float32[2]@cuda:0\n"
      "  return (%4)\n}\n");
  EXPECT_EQ(ir::graph_device(g), (Device{DeviceType::CUDA, 0}));
  EXPECT_NO_THROW(ir::check_types(g));
  rt::Program p(g, ir::plan_memory(g));
  EXPECT_EQ(p.device(), (Device{DeviceType::CUDA, 0}));
  // Host scalars alone are a CPU graph; a CPU vector beside a CUDA value spans two devices.
  EXPECT_EQ(ir::graph_device(ir::parse("graph(%0: float64[] input) {\n  return (%0)\n}\n")), Device{});
  EXPECT_THROW(ir::graph_device(ir::parse("graph(%0: float32[2]@cuda:0 input, %1: float32[1] input) {\n"
                                          "  return (%0, %1)\n}\n")),
               NotImplementedError);
}

TEST(IRDevice, ConstantFoldingKeepsConstantsOnTheHost) {
  // Ones on cuda:0 has no inputs, so it would fold; its result lives on the GPU, and a graph's
  // constants are host tensors, so it stays a node (run per call). The CPU twin folds.
  const char* text =
      "graph(%0: float32[3]@cuda:0 input) {\n"
      "  %1 = Fill() {value=2.0, shape=[3], dtype=float32} : float32[3]@cuda:0\n"
      "  %2 = Mul(%0, %1) : float32[3]@cuda:0\n"
      "  return (%2)\n}\n";
  ir::Graph g = ir::parse(text);
  ir::Graph folded = ir::constant_folding(g);
  EXPECT_EQ(ir::print(folded), ir::print(g));
  EXPECT_TRUE(folded.consts().empty());
  std::string cpu = text;
  for (size_t p; (p = cpu.find("@cuda:0")) != std::string::npos;) cpu.erase(p, 7);
  EXPECT_EQ(ir::constant_folding(ir::parse(cpu)).consts().size(), 1u);
}
