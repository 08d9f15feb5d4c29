// Reduce/creation family C++ tests: Philox4x32-10 known answers (Random123's kat_vectors),
// generator offsets, and the C++ API of reductions and random ops.
#include <gtest/gtest.h>

#include "lucid/core/generator.h"
#include "lucid/ops/creation.h"
#include "lucid/ops/reduce.h"

using namespace lucid;

TEST(Philox, KnownAnswers) {
  using A = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10(A{0, 0, 0, 0}, 0, 0), (A{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10(A{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, 0xffffffff, 0xffffffff),
            (A{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10(A{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0),
            (A{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Generator, ReserveRoundsToBlocksAndStateRoundTrips) {
  Generator g(42);
  EXPECT_EQ(g.reserve(5), 0u);
  EXPECT_EQ(g.reserve(1), 8u);
  EXPECT_EQ(g.offset(), 12u);
  g.set_state(7, 13);
  EXPECT_EQ(g.initial_seed(), 7u);
  EXPECT_EQ(g.offset(), 16u);
  g.manual_seed(3);
  EXPECT_EQ(g.offset(), 0u);
}

TEST(Random, SameSeedSameTensor) {
  Generator a(11), b(11);
  Tensor x = rand({100}, DType::Float32, &a), y = rand({100}, DType::Float32, &b);
  EXPECT_EQ(std::memcmp(x.data_ptr(), y.data_ptr(), 400), 0);
  Tensor z = rand({100}, DType::Float32, &a);
  EXPECT_NE(std::memcmp(x.data_ptr(), z.data_ptr(), 400), 0);
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_GE(x.data<float>()[i], 0.f);
    EXPECT_LT(x.data<float>()[i], 1.f);
  }
}

TEST(Reduce, MeanVarMaxOfKnownValues) {
  Tensor x = arange(0, 6, 1, DType::Float64);
  x = reshape(x, {2, 3});
  EXPECT_DOUBLE_EQ(*mean(x).data<double>(), 2.5);
  Tensor v = var(x, {1});
  EXPECT_DOUBLE_EQ(v.data<double>()[0], 1.0);
  EXPECT_DOUBLE_EQ(v.data<double>()[1], 1.0);
  auto [vals, idx] = max_dim(x, 0);
  EXPECT_DOUBLE_EQ(vals.data<double>()[2], 5.0);
  EXPECT_EQ(idx.data<int64_t>()[0], 1);
  EXPECT_THROW(mean(x, {2}), IndexError);
}
