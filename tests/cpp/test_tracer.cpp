// Tracer tests: the graph recorded from eager C++ op calls, as IR text.
#include <gtest/gtest.h>

#include "lucid/compile/trace/tracer.h"
#include "lucid/ops/core.h"

using namespace lucid;

TEST(Tracer, RecordsInputsStateConstantsAndOutputs) {
  Tensor w = full({3}, 2.0, DType::Float32);  // exists before the trace: bound state
  Tensor x = full({2, 3}, 1.0, DType::Float32);
  Tracer tr;
  {
    TraceGuard g(&tr);
    tr.add_input(x);
    Tensor y = mul(add(x, w), scalar_tensor(0.5));
    tr.set_outputs({sum(y, {1})});
  }
  EXPECT_TRUE(tr.ok());
  EXPECT_EQ(ir::print(tr.graph()),
            "graph(%0: float32[2,3] input, %1: float32[3] state, %2: float64[] scalar=0.5) {\n"
            "  %3 = Add(%0, %1) : float32[2,3]\n"
            "  %4 = Mul(%3, %2) : float32[2,3]\n"
            "  %5 = Sum(%4) {dims=[1], keepdim=false} : float32[2]\n"
            "  return (%5)\n"
            "}\n");
  ASSERT_EQ(tr.state_feeds().size(), 1u);
  EXPECT_TRUE(tr.state_feeds()[0] == w);
  ir::verify(tr.graph());
  // The printed graph parses back to the same text.
  EXPECT_EQ(ir::print(ir::parse(ir::print(tr.graph()))), ir::print(tr.graph()));
  EXPECT_EQ(ir::canonical_hash(ir::parse(ir::print(tr.graph()))), ir::canonical_hash(tr.graph()));
}

TEST(Tracer, InPlaceWriteToStateIsAnAssign) {
  Tensor counter = full({1}, 0.0, DType::Float32);
  Tensor x = full({1}, 3.0, DType::Float32);
  Tracer tr;
  {
    TraceGuard g(&tr);
    tr.add_input(x);
    dispatch_inplace(OpId::Add, counter, {counter, x});
    tr.set_outputs({mul(counter, x)});
  }
  ASSERT_EQ(tr.graph().assigns().size(), 1u);
  const ir::Assign& a = tr.graph().assigns()[0];
  EXPECT_EQ(tr.graph().value(a.state).kind, ir::ValueKind::State);
  EXPECT_EQ(counter.data<float>()[0], 3.0f);  // the trace still ran eagerly
  ir::verify(tr.graph());
}

TEST(Tracer, NoHookOutsideTheGuard) {
  Tracer tr;
  { TraceGuard g(&tr); }
  add(full({1}, 1.0, DType::Float32), full({1}, 1.0, DType::Float32));
  EXPECT_TRUE(tr.graph().nodes().empty());
  EXPECT_EQ(current_trace_hook(), nullptr);
}
