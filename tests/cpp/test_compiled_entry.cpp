// rt::CompiledEntry without Python: compiled entries built from hand-written IR (a joint
// forward+backward graph through compile_joint, a make_step-style graph that returns its own
// gradients, a forward alone), run on plain tensors, differentiated with the autograd engine.
// Expected gradients are worked out by hand from y = sum(x * w): dy/dw = x, dy/dx = w.
#include <gtest/gtest.h>

#include "compile_test_util.h"

#include "lucid/autograd/engine.h"
#include "lucid/autograd/grad_mode.h"
#include "lucid/autograd/node.h"
#include "lucid/compile/ir/graph.h"
#include "lucid/compile/runtime/cache.h"
#include "lucid/compile/runtime/compiled_entry.h"
#include "lucid/ops/core.h"

using namespace lucid;
using lucid::test::expect_values;
using lucid::test::kJoint;
using lucid::test::vec;

namespace {

// make_step's form: the loss, then its gradient for a unit grad output (dw = x).
const char* kStep =
    "graph(%0: float32[3] input, %1: float32[3] state) {\n"
    "  %2 = Mul(%0, %1) : float32[3]\n"
    "  %3 = Sum(%2) {dims=[], keepdim=false} : float32[]\n"
    "  return (%3, %0)\n"
    "}\n";

struct Joint {
  std::shared_ptr<const rt::Executable> fwd, bwd;
};
Joint compile_joint_text(const char* text) {
  rt::JointCompileResult r = rt::compile_joint(ir::parse(text), /*n_fwd_inputs=*/1, /*n_fwd_outputs=*/1, "");
  return {r.forward.exe, r.backward.exe};
}

}  // namespace

TEST(CompiledEntry, CompiledBackwardGivesHandComputedGradients) {
  Joint j = compile_joint_text(kJoint);
  Tensor w = vec({1, 2, 3});
  w.set_requires_grad(true);
  rt::CompiledEntry e(j.fwd, j.bwd, {w}, rt::GradSpec{1, {0}, {0}, {0}, {true, true}});
  EXPECT_TRUE(e.is_grad_entry());
  EXPECT_FALSE(e.precomputed());
  EXPECT_EQ(e.n_out(), 1);

  GradModeGuard grad(true);
  ASSERT_TRUE(e.states_valid());
  Tensor x = vec({4, 5, 6});
  x.set_requires_grad(true);
  TensorList y = e.run({x});
  ASSERT_EQ(y.size(), 1u);  // the saved values are dropped from the outputs
  expect_values(y[0], {32});
  ASSERT_TRUE(y[0].requires_grad());
  ASSERT_TRUE(y[0].grad_fn());
  EXPECT_STREQ(y[0].grad_fn()->name(), "CompiledFunction");
  EXPECT_GE(e.last_run_ms(), 0.0);

  autograd::backward({y[0]}, {scalar_tensor(2.0)}, /*retain_graph=*/false, /*create_graph=*/false);
  expect_values(w.grad(), {8, 10, 12});  // 2 * x
  expect_values(x.grad(), {2, 4, 6});    // 2 * w
  // The node freed its saved values: a second backward raises, as eager's does.
  EXPECT_THROW(autograd::backward({y[0]}, {}, false, false), Error);

  // A second call accumulates into .grad through a fresh node.
  TensorList y2 = e.run({x});
  autograd::backward({y2[0]}, {}, false, false);
  expect_values(w.grad(), {12, 15, 18});
}

TEST(CompiledEntry, NoGradModeRunsTheForwardOnly) {
  Joint j = compile_joint_text(kJoint);
  Tensor w = vec({1, 2, 3});
  w.set_requires_grad(true);
  rt::CompiledEntry e(j.fwd, j.bwd, {w}, rt::GradSpec{1, {0}, {0}, {0}, {true, true}});
  GradModeGuard no_grad(false);
  TensorList y = e.run({vec({1, 1, 1})});
  ASSERT_EQ(y.size(), 1u);
  expect_values(y[0], {6});
  EXPECT_FALSE(y[0].grad_fn());
}

TEST(CompiledEntry, UnusedGradientLeavesItsEdgeEmpty) {
  // x requires grad but has no gradient (used false): the backward returns w's alone, and x's
  // edge gets nothing.
  const char* joint =
      "graph(%0: float32[3] input, %1: float32[] input, %2: float32[3] state) {\n"
      "  %3 = Mul(%0, %2) : float32[3]\n"
      "  %4 = Sum(%3) {dims=[], keepdim=false} : float32[]\n"
      "  %5 = Reshape(%1) {shape=[1]} : float32[1]\n"
      "  %6 = Expand(%5) {shape=[3]} : float32[3]\n"
      "  %7 = Mul(%6, %0) : float32[3]\n"
      "  return (%4, %7)\n"
      "}\n";
  Joint j = compile_joint_text(joint);
  Tensor w = vec({1, 2, 3});
  w.set_requires_grad(true);
  Tensor x = vec({4, 5, 6});
  x.set_requires_grad(true);
  rt::CompiledEntry e(j.fwd, j.bwd, {w}, rt::GradSpec{1, {0}, {0}, {0}, {false, true}});
  GradModeGuard grad(true);
  TensorList y = e.run({x});
  autograd::backward({y[0]}, {}, false, false);
  expect_values(w.grad(), {4, 5, 6});
  EXPECT_FALSE(x.grad().defined());
}

TEST(CompiledEntry, PrecomputedBackwardScalesTheStepsGradients) {
  rt::CompileResult r = rt::compile_graph(ir::parse(kStep), "");
  Tensor w = vec({1, 2, 3});
  w.set_requires_grad(true);
  rt::CompiledEntry e(r.exe, nullptr, {w}, rt::GradSpec{1, {0}, {}, {0}, {true}});
  EXPECT_TRUE(e.precomputed());
  GradModeGuard grad(true);
  TensorList loss = e.run({vec({4, 5, 6})});
  ASSERT_EQ(loss.size(), 1u);
  expect_values(loss[0], {32});
  EXPECT_STREQ(loss[0].grad_fn()->name(), "CompiledStep");
  autograd::backward({loss[0]}, {scalar_tensor(0.5)}, false, false);
  expect_values(w.grad(), {2, 2.5, 3});  // 0.5 * x
}

TEST(CompiledEntry, PlainEntryReturnsEveryResultAndWritesState) {
  // A forward with an assign: the state accumulates x (s <- s + x) and the call returns s * 2.
  const char* text =
      "graph(%0: float32[3] input, %1: float32[3] state) {\n"
      "  %2 = Add(%1, %0) : float32[3]\n"
      "  %3 = Add(%2, %2) : float32[3]\n"
      "  assign %1 <- %2\n"
      "  return (%3, %2)\n"
      "}\n";
  rt::CompileResult r = rt::compile_graph(ir::parse(text), "");
  Tensor s = vec({1, 2, 3});
  rt::CompiledEntry e(r.exe, {s});
  EXPECT_FALSE(e.is_grad_entry());
  EXPECT_EQ(e.n_out(), 2);
  GradModeGuard grad(true);
  EXPECT_TRUE(e.states_valid());
  TensorList y = e.run({vec({1, 1, 1})});
  ASSERT_EQ(y.size(), 2u);
  expect_values(y[0], {4, 6, 8});
  expect_values(s, {2, 3, 4});
  // A state that now requires grad: this entry's forward has no backward, so it is stale
  // under grad mode (the caller re-traces) and still valid without it.
  s.set_requires_grad(true);
  EXPECT_FALSE(e.states_valid());
  {
    GradModeGuard no_grad(false);
    EXPECT_TRUE(e.states_valid());
  }
}

TEST(CompiledEntry, StatesValidTracksShapeDtypeAndRequiresGrad) {
  Joint j = compile_joint_text(kJoint);
  Tensor w = vec({1, 2, 3});
  w.set_requires_grad(true);
  rt::CompiledEntry e(j.fwd, j.bwd, {w}, rt::GradSpec{1, {0}, {0}, {0}, {true, true}});
  EXPECT_EQ(e.state_rg(), std::vector<bool>{true});
  EXPECT_TRUE(e.states_valid());
  w.set_requires_grad(false);  // the backward was built to differentiate w
  EXPECT_FALSE(e.states_valid());
  w.set_requires_grad(true);
  Tensor w4 = vec({1, 2, 3, 4});
  w4.set_requires_grad(true);
  e.set_states({w4});
  EXPECT_FALSE(e.states_valid());  // traced with float32[3]
  Tensor w2 = vec({9, 9, 9});
  w2.set_requires_grad(true);
  e.set_states({w2});
  EXPECT_TRUE(e.states_valid());
  EXPECT_THROW(e.set_states({}), ValueError);
}

TEST(CompiledEntry, ConstructorRejectsInconsistentMetadata) {
  Joint j = compile_joint_text(kJoint);
  Tensor w = vec({1, 2, 3});
  auto make = [&](std::shared_ptr<const rt::Executable> bwd, TensorList states, rt::GradSpec g) {
    rt::CompiledEntry e(j.fwd, std::move(bwd), std::move(states), std::move(g));
  };
  EXPECT_THROW(rt::CompiledEntry(nullptr, TensorList{}), ValueError);
  EXPECT_THROW(rt::CompiledEntry(j.fwd, TensorList{}), ValueError);         // one state expected
  EXPECT_THROW(make(j.bwd, {w}, {5, {0}, {0}, {0}, {true, true}}), ValueError);  // n_out past the results
  EXPECT_THROW(make(j.bwd, {w}, {1, {1}, {0}, {0}, {true, true}}), ValueError);  // grad output >= n_out
  EXPECT_THROW(make(j.bwd, {w}, {1, {0}, {3}, {0}, {true, true}}), ValueError);  // no input 3
  EXPECT_THROW(make(j.bwd, {w}, {1, {0}, {0}, {1}, {true, true}}), ValueError);  // no state 1
  EXPECT_THROW(make(j.bwd, {w}, {1, {0}, {0}, {0}, {true}}), ValueError);        // a used flag per wrt
  EXPECT_THROW(make(j.bwd, {w}, {1, {0}, {}, {0}, {true, false}}), ValueError);  // flags for 1 wrt
  EXPECT_THROW(make(j.fwd, {w}, {1, {0}, {0}, {0}, {true, true}}), ValueError);  // fwd is no backward of itself
  EXPECT_THROW(make(nullptr, {w}, {1, {0}, {0}, {0}, {true, true}}), ValueError);  // saved values aren't gradients
  EXPECT_NO_THROW(make(j.bwd, {w}, {1, {0}, {0}, {0}, {true, true}}));
}

TEST(CompiledEntry, RunChecksItsInputs) {
  Joint j = compile_joint_text(kJoint);
  Tensor w = vec({1, 2, 3});
  w.set_requires_grad(true);
  rt::CompiledEntry e(j.fwd, j.bwd, {w}, rt::GradSpec{1, {0}, {0}, {0}, {true, true}});
  GradModeGuard grad(true);
  EXPECT_THROW(e.run({}), ValueError);
  EXPECT_THROW(e.run({vec({1, 2})}), ValueError);
}
