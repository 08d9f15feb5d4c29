// Core C++ tests: views and strides, type promotion, broadcasting, autograd basics.
#include <gtest/gtest.h>

#include "lucid/autograd/engine.h"
#include "lucid/core/shape.h"
#include "lucid/ops/core.h"

using namespace lucid;

TEST(Promotion, MatchesPyTorchTable) {
  EXPECT_EQ(promote_types(DType::Int32, DType::Float16), DType::Float16);
  EXPECT_EQ(promote_types(DType::Float16, DType::BFloat16), DType::Float32);
  EXPECT_EQ(promote_types(DType::UInt8, DType::Int8), DType::Int32);  // no int16 in lucid
  EXPECT_EQ(promote_types(DType::Bool, DType::UInt8), DType::UInt8);
  EXPECT_EQ(promote_types(DType::Int64, DType::Float32), DType::Float32);
  EXPECT_EQ(promote_types(DType::Float32, DType::Float64), DType::Float64);
}

TEST(Promotion, WrappedNumbersOnlyRaiseCategory) {
  Tensor x = Tensor::empty({3}, DType::Float16);
  EXPECT_EQ(result_type({x, scalar_tensor(1.5)}), DType::Float16);
  Tensor i = Tensor::empty({3}, DType::Int32);
  EXPECT_EQ(result_type({i, scalar_tensor(int64_t{2})}), DType::Int32);
  EXPECT_EQ(result_type({i, scalar_tensor(2.0)}), DType::Float32);
  Tensor d0 = Tensor::empty({}, DType::Float64);
  EXPECT_EQ(result_type({x, d0}), DType::Float16);  // 0-d tensor: lower priority
}

TEST(Broadcast, ShapesAndErrors) {
  EXPECT_EQ(broadcast_shapes({3, 1, 5}, {4, 1}, "t"), (Shape{3, 4, 5}));
  EXPECT_THROW(broadcast_shapes({3}, {4}, "t"), ValueError);
}

TEST(Views, ExpandAndReshapeShareStorage) {
  Tensor x = full({2, 3}, 1.0, DType::Float32);
  Tensor e = expand(reshape(x, {2, 1, 3}), {2, 4, 3});
  EXPECT_TRUE(e.same_storage(x));
  EXPECT_EQ(e.strides(), (Strides{3, 0, 1}));
  EXPECT_FALSE(e.is_contiguous());
  Tensor r = reshape(x, {3, 2});
  EXPECT_TRUE(r.same_storage(x));
}

TEST(Views, SetDataRebindsStorageAndGeometryKeepingAutograd) {
  Tensor p = full({3}, 0.0, DType::Float32);
  p.set_requires_grad(true);
  Tensor src = expand(reshape(full({2}, 2.0, DType::Float64), {2, 1}), {2, 4});
  TensorImpl* impl = p.impl();
  p.set_data(src);
  EXPECT_EQ(p.impl(), impl);  // same tensor, as torch's `p.data = src`
  EXPECT_TRUE(p.same_storage(src));
  EXPECT_EQ(p.shape(), (Shape{2, 4}));
  EXPECT_EQ(p.strides(), (Strides{1, 0}));
  EXPECT_EQ(p.dtype(), DType::Float64);
  EXPECT_TRUE(p.requires_grad() && p.is_leaf());
  EXPECT_FALSE(p.impl()->is_view);
}

TEST(Autograd, MulAddBackward) {
  Tensor a = full({3}, 2.0, DType::Float32);
  Tensor b = full({1}, 5.0, DType::Float32);
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  Tensor y = add(mul(a, b), a);  // dy/da = b + 1 = 6, dy/db = sum(a) = 6
  autograd::backward({y}, {full({3}, 1.0, DType::Float32)}, false, false);
  EXPECT_FLOAT_EQ(a.grad().data<float>()[0], 6.0f);
  EXPECT_EQ(b.grad().shape(), (Shape{1}));
  EXPECT_FLOAT_EQ(b.grad().data<float>()[0], 6.0f);
}
