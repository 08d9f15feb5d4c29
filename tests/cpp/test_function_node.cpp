// FunctionNode: a node whose backward is a callback (what autograd.Function and the overwrite of
// fill_/copy_ use). Checks the wiring (edges, outputs' grad_fn), that saved tensors are version-
// checked at backward, and that an in-place fill_ on a tensor that requires grad cuts the
// gradient of the overwritten values while the ops before it still run.
#include <gtest/gtest.h>

#include "lucid/autograd/engine.h"
#include "lucid/autograd/function_node.h"
#include "lucid/ops/core.h"

using namespace lucid;

TEST(FunctionNode, CallbackGetsGradsAndSavedTensors) {
  Tensor x = full({3}, 2.0, DType::Float32);
  x.set_requires_grad(true);
  Tensor h = mul(x, scalar_tensor(1.0));
  Tensor y = Tensor::empty({3}, DType::Float32);
  int calls = 0;
  make_function_node("Triple", {h}, {y}, {true}, {h}, [&](const TensorList& g, const TensorList& saved) {
    ++calls;
    EXPECT_EQ(saved.size(), 1u);
    return TensorList{mul(g[0], scalar_tensor(3.0))};
  });
  ASSERT_TRUE(y.requires_grad());
  EXPECT_STREQ(y.grad_fn()->name(), "Triple");
  autograd::backward({y}, {full({3}, 1.0, DType::Float32)}, false, false);
  EXPECT_EQ(calls, 1);
  EXPECT_FLOAT_EQ(x.grad().data<float>()[1], 3.0f);
}

TEST(FunctionNode, SavedTensorModifiedInPlaceRaises) {
  Tensor x = full({3}, 2.0, DType::Float32);
  x.set_requires_grad(true);
  Tensor h = mul(x, scalar_tensor(1.0));
  Tensor y = Tensor::empty({3}, DType::Float32);
  make_function_node("F", {h}, {y}, {true}, {h}, [](const TensorList& g, const TensorList&) { return g; });
  h.bump_version();
  EXPECT_THROW(autograd::backward({y}, {full({3}, 1.0, DType::Float32)}, false, false), Error);
}

TEST(FunctionNode, FillOnTensorRequiringGradZeroesTheOldGradient) {
  Tensor x = full({3}, 2.0, DType::Float32);
  x.set_requires_grad(true);
  Tensor h = mul(x, scalar_tensor(4.0));
  fill_(h, 1.0);
  ASSERT_TRUE(h.requires_grad());
  autograd::backward({h}, {full({3}, 1.0, DType::Float32)}, false, false);
  ASSERT_TRUE(x.grad().defined());  // the Mul before the write still ran, with a zero gradient
  EXPECT_FLOAT_EQ(x.grad().data<float>()[0], 0.0f);
}
