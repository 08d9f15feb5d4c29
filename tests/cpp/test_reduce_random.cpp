// Reduce/creation family C++ tests: Philox4x32-10 known answers (Random123's kat_vectors),
// generator offsets, and the C++ API of reductions and random ops.
#include <gtest/gtest.h>

#include "lucid/backends/cpu/philox_vec.h"
#include "lucid/backends/cpu/reduce_loops.h"
#include "lucid/core/generator.h"
#include "lucid/core/philox.h"
#include "lucid/ops/creation.h"
#include "lucid/ops/reduce.h"

using namespace lucid;

TEST(Philox, KnownAnswers) {
  using A = PhiloxBlock;
  EXPECT_EQ(philox4x32_10(A{0, 0, 0, 0}, 0, 0), (A{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10(A{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, 0xffffffff, 0xffffffff),
            (A{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10(A{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0),
            (A{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, EightWideMatchesScalar) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{42}, ~uint64_t{0}})
    for (uint64_t block0 : {uint64_t{0}, uint64_t{5}, (uint64_t{1} << 32) - 3}) {
      uint32_t w[32];
      cpu::philox_draws8(block0, seed, w);
      for (int b = 0; b < 8; ++b) {
        auto ref = philox4x32_10(block0 + b, seed);
        for (int q = 0; q < 4; ++q) EXPECT_EQ(w[4 * b + q], ref[q]) << "block " << b << " word " << q;
      }
    }
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

TEST(Reduce, ReduceSumIntoMatchesSum) {
  Generator g(5);
  Tensor x = randn({5, 6, 7}, DType::Float32, &g);
  for (IntList dims : {IntList{}, IntList{0}, IntList{1}, IntList{2}, IntList{0, 2}, IntList{1, 2}}) {
    Tensor ref = sum(x, dims, false);
    Tensor out = Tensor::empty(ref.shape(), DType::Float32);
    cpu::reduce_sum_into(x, dims, out);
    for (int64_t i = 0; i < ref.numel(); ++i) EXPECT_NEAR(out.data<float>()[i], ref.data<float>()[i], 1e-5);
  }
  Tensor xi = randint(-5, 5, {4, 9}, DType::Int32, &g);
  Tensor ri = sum(xi, {0}, false);  // int64
  Tensor oi = Tensor::empty({9}, DType::Int64);
  cpu::reduce_sum_into(xi, {0}, oi);
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(oi.data<int64_t>()[i], ri.data<int64_t>()[i]);
}

TEST(Random, RandomDrawsMatchesGeneratorAdvance) {
  Generator g(9);
  auto check = [&](OpId id, Attrs a) {
    uint64_t before = g.offset();
    a.set("seed", int64_t{9}).set("offset", static_cast<int64_t>(g.reserve(random_draws(id, a))));
    Tensor t = dispatch1(id, {}, a);
    EXPECT_EQ(g.offset() - before, (random_draws(id, a) + 3) / 4 * 4) << op_name(id);
    return t;
  };
  check(OpId::Uniform, {{"shape", Shape{3, 5}}, {"dtype", DType::Float64}, {"low", 0.0}, {"high", 1.0}});
  check(OpId::Normal, {{"shape", Shape{7}}, {"dtype", DType::Float32}, {"mean", 0.0}, {"std", 1.0}});
  check(OpId::RandInt, {{"shape", Shape{9}}, {"dtype", DType::Int64}, {"low", int64_t{0}}, {"high", int64_t{1} << 40}});
  check(OpId::Bernoulli, {{"shape", Shape{10}}, {"dtype", DType::Float32}, {"p", 0.5}});
  check(OpId::RandPerm, {{"n", int64_t{6}}, {"dtype", DType::Int64}});
  // The same attributes replay the same numbers: what a compiled step relies on.
  Attrs a{{"shape", Shape{8}}, {"dtype", DType::Float32}, {"mean", 0.0}, {"std", 1.0}, {"seed", int64_t{1}}, {"offset", int64_t{4}}};
  Tensor x = dispatch1(OpId::Normal, {}, a), y = dispatch1(OpId::Normal, {}, a);
  EXPECT_EQ(std::memcmp(x.data_ptr(), y.data_ptr(), 32), 0);
  Generator d(1);
  d.reserve(4);
  Tensor z = randn({8}, DType::Float32, &d);
  EXPECT_EQ(std::memcmp(x.data_ptr(), z.data_ptr(), 32), 0);
  EXPECT_THROW(random_draws(OpId::Mean, {}), Error);
}
