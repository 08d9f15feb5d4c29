// C++ tests of the nn/loss ops through the C++ API (ops/nn.h): softmax rows sum to one,
// cross_entropy of equal logits is log(C), batch_norm updates running stats in place, and an
// out-of-range class index raises IndexError.
#include <gtest/gtest.h>

#include <cmath>

#include "lucid/ops/core.h"
#include "lucid/ops/nn.h"

using namespace lucid;

static Tensor filled(const Shape& s, double v, DType dt = DType::Float32) { return full(s, v, dt); }

TEST(NnOps, SoftmaxRowsSumToOne) {
  Tensor x = Tensor::empty({3, 5}, DType::Float32);
  for (int i = 0; i < 15; ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3.f;
  Tensor y = softmax(x, 1);
  for (int r = 0; r < 3; ++r) {
    double s = 0;
    for (int c = 0; c < 5; ++c) s += y.data<float>()[r * 5 + c];
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
}

TEST(NnOps, CrossEntropyOfEqualLogitsIsLogC) {
  Tensor x = filled({4, 10}, 0.5);
  Tensor t = filled({4}, 3.0, DType::Int64);
  Tensor l = cross_entropy(x, t, Tensor(), -100, "mean", 0.0);
  EXPECT_NEAR(*l.data<float>(), std::log(10.0), 1e-6);
}

TEST(NnOps, CrossEntropyIndexError) {
  Tensor x = filled({2, 3}, 0.0);
  Tensor t = filled({2}, 3.0, DType::Int64);
  EXPECT_THROW(cross_entropy(x, t, Tensor(), -100, "mean", 0.0), IndexError);
}

TEST(NnOps, BatchNormUpdatesRunningStatsInPlace) {
  Tensor x = Tensor::empty({4, 2}, DType::Float64);
  double v[] = {1, 10, 2, 20, 3, 30, 4, 40};
  for (int i = 0; i < 8; ++i) x.data<double>()[i] = v[i];
  Tensor rm = filled({2}, 0.0, DType::Float64), rv = filled({2}, 1.0, DType::Float64);
  uint32_t v0 = rm.version();
  batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.5, 1e-5);
  EXPECT_GT(rm.version(), v0);
  EXPECT_NEAR(rm.data<double>()[0], 1.25, 1e-9);              // 0.5 * 2.5
  EXPECT_NEAR(rv.data<double>()[0], 0.5 + 0.5 * (5.0 / 3.0), 1e-6);  // unbiased var of 1..4 = 5/3
}
