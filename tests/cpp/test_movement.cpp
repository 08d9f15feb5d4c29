// Movement family C++ tests: view ops alias storage with the expected geometry, copies do not,
// index ops write what PyTorch would (hand-checked small cases), and bad arguments raise the
// documented error types.
#include <gtest/gtest.h>

#include "lucid/autograd/engine.h"
#include "lucid/ops/movement.h"

using namespace lucid;

static Tensor arange_f(const Shape& s) {
  Tensor t = Tensor::empty(s, DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

static Tensor ints(std::initializer_list<int64_t> v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::Int64);
  int64_t i = 0;
  for (int64_t e : v) t.data<int64_t>()[i++] = e;
  return t;
}

TEST(MovementViews, SliceSelectSqueezeAlias) {
  Tensor x = arange_f({2, 3, 4});
  Tensor s = slice(x, 2, 1, 4, 2);  // x[:, :, 1::2]
  EXPECT_TRUE(s.same_storage(x));
  EXPECT_EQ(s.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(s.strides(), (Strides{12, 4, 2}));
  EXPECT_EQ(s.offset(), 1);
  Tensor e = select(x, 1, -1);  // x[:, 2]
  EXPECT_EQ(e.shape(), (Shape{2, 4}));
  EXPECT_EQ(e.offset(), 8);
  Tensor u = unsqueeze(e, 1);
  EXPECT_EQ(u.shape(), (Shape{2, 1, 4}));
  EXPECT_TRUE(squeeze(u).same_storage(x));
  EXPECT_EQ(squeeze(u).shape(), (Shape{2, 4}));
  EXPECT_TRUE(view(x, {6, 4}).same_storage(x));
  EXPECT_THROW(view(transpose(x, 0, 2), {-1}), Error);
  TensorList parts = chunk(x, 2, 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].offset(), 2);
}

TEST(MovementCopies, CatAndIndexGather) {
  Tensor a = arange_f({2, 2});
  Tensor c = cat({a, a}, 1);
  EXPECT_FALSE(c.same_storage(a));
  EXPECT_EQ(c.shape(), (Shape{2, 4}));
  EXPECT_FLOAT_EQ(c.data<float>()[2], 0.f);
  EXPECT_FLOAT_EQ(c.data<float>()[7], 3.f);
  Tensor x = arange_f({3, 4});
  Tensor g = index_gather(x, {0, 1}, {ints({2, 0}), ints({1, 3})});  // x[[2, 0], [1, 3]]
  EXPECT_EQ(g.shape(), (Shape{2}));
  EXPECT_FLOAT_EQ(g.data<float>()[0], 9.f);
  EXPECT_FLOAT_EQ(g.data<float>()[1], 3.f);
}

TEST(MovementIndex, IndexPutAccumulatesAndBackward) {
  Tensor x = full({4}, 0.0, DType::Float32);
  Tensor v = full({3}, 1.0, DType::Float32);
  Tensor r = index_put(x, {0}, {ints({1, 1, 3})}, v, true);
  EXPECT_FLOAT_EQ(r.data<float>()[1], 2.f);
  EXPECT_FLOAT_EQ(r.data<float>()[3], 1.f);
  Tensor w = arange_f({4});
  w.set_requires_grad(true);
  Tensor y = index_gather(w, {0}, {ints({0, 0, 2})});
  autograd::backward({y}, {full({3}, 1.0, DType::Float32)}, false, false);
  EXPECT_FLOAT_EQ(w.grad().data<float>()[0], 2.f);
  EXPECT_FLOAT_EQ(w.grad().data<float>()[1], 0.f);
  EXPECT_FLOAT_EQ(w.grad().data<float>()[2], 1.f);
}

TEST(MovementErrors, Types) {
  Tensor x = arange_f({2, 3});
  EXPECT_THROW(cat({x, arange_f({2, 4})}, 0), ValueError);
  EXPECT_THROW(select(x, 0, 2), IndexError);
  EXPECT_THROW(index_gather(x, {1}, {ints({3})}), IndexError);
  EXPECT_THROW(gather(x, 1, Tensor::empty({2, 1}, DType::Float32)), TypeError);
  EXPECT_THROW(slice(x, 0, 0, 2, -1), ValueError);
  EXPECT_THROW(tril(arange_f({3})), ValueError);
}
