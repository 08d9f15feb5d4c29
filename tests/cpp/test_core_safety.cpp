// Core safety C++ tests: overflow-checked size arithmetic (core/shape.h) and the memory-overlap
// classification in-place ops rely on (core/mem_overlap.h), with PyTorch's statuses.
#include <gtest/gtest.h>

#include "lucid/core/mem_overlap.h"
#include "lucid/core/shape.h"
#include "lucid/ops/core.h"

using namespace lucid;

constexpr int64_t kMax = INT64_MAX;

TEST(CheckedSize, MulAddOverflowRaise) {
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31, "t"), int64_t{1} << 62);
  EXPECT_THROW(checked_mul(int64_t{1} << 32, int64_t{1} << 31, "t"), Error);
  EXPECT_THROW(checked_mul(-(int64_t{1} << 62), 4, "t"), Error);
  EXPECT_EQ(checked_add(kMax - 1, 1, "t"), kMax);
  EXPECT_THROW(checked_add(kMax, 1, "t"), Error);
}

TEST(CheckedSize, NumelBytesExtent) {
  EXPECT_EQ(numel_of({2, 3, 4}), 24);
  EXPECT_EQ(numel_of({0, int64_t{1} << 62, 4}), 0);  // the running product never overflows
  EXPECT_THROW(numel_of({int64_t{1} << 32, int64_t{1} << 32}), Error);
  EXPECT_THROW(numel_of({3, int64_t{1} << 62}), Error);
  EXPECT_EQ(contiguous_nbytes({int64_t{1} << 60}, 4), int64_t{1} << 62);
  EXPECT_THROW(contiguous_nbytes({int64_t{1} << 62}, 4), Error);
  EXPECT_THROW(contiguous_nbytes({int64_t{1} << 61}, 8), Error);
  EXPECT_EQ(storage_extent({2, 3}, {3, 1}, 5), 11);
  EXPECT_EQ(storage_extent({0, 3}, {3, 1}, 5), 0);
  EXPECT_THROW(storage_extent({int64_t{1} << 62}, {int64_t{1} << 62}, 0), Error);
  EXPECT_THROW(storage_extent({2}, {int64_t{1} << 62}, int64_t{1} << 62), Error);
}

TEST(CheckedSize, EmptyAndViewsRaise) {
  EXPECT_THROW(Tensor::empty({int64_t{1} << 62}, DType::Float32), Error);
  EXPECT_THROW(Tensor::empty({int64_t{1} << 32, int64_t{1} << 32}, DType::Bool), Error);
  Tensor one = full({1, 1}, 1.0, DType::Float32);
  EXPECT_THROW(expand(one, {int64_t{1} << 32, int64_t{1} << 32}), Error);
  EXPECT_EQ(expand(one, {int64_t{1} << 62, 1}).numel(), int64_t{1} << 62);
}

TEST(MemOverlap, StatusesAsPyTorch) {
  Tensor x = full({8}, 1.0, DType::Float32);
  Tensor head = Tensor::make_view(x, {7}, {1}, 0), tail = Tensor::make_view(x, {7}, {1}, 1);
  Tensor left = Tensor::make_view(x, {4}, {1}, 0), right = Tensor::make_view(x, {4}, {1}, 4);
  EXPECT_EQ(get_overlap_status(x, x), MemOverlapStatus::Full);
  EXPECT_EQ(get_overlap_status(head, Tensor::make_view(x, {7}, {1}, 0)), MemOverlapStatus::Full);
  EXPECT_EQ(get_overlap_status(head, tail), MemOverlapStatus::Partial);
  EXPECT_EQ(get_overlap_status(left, right), MemOverlapStatus::No);
  Tensor even = Tensor::make_view(x, {4}, {2}, 0), odd = Tensor::make_view(x, {4}, {2}, 1);
  EXPECT_EQ(get_overlap_status(even, odd), MemOverlapStatus::TooHard);  // non-dense: PyTorch can't tell
  EXPECT_TRUE(spans_intersect(even, odd));
  EXPECT_FALSE(spans_intersect(left, right));
  Tensor mt = Tensor::make_view(x, {4, 2}, {1, 4}, 0);  // a transpose: dense, other strides
  EXPECT_TRUE(is_non_overlapping_and_dense(mt));
  EXPECT_EQ(get_overlap_status(Tensor::make_view(x, {4, 2}, {2, 1}, 0), mt), MemOverlapStatus::Partial);
}

TEST(MemOverlap, InternalOverlap) {
  Tensor x = full({4}, 1.0, DType::Float32);
  EXPECT_EQ(has_internal_overlap(x), MemOverlap::No);
  EXPECT_EQ(has_internal_overlap(Tensor::make_view(x, {4}, {0}, 0)), MemOverlap::Yes);
  EXPECT_EQ(has_internal_overlap(Tensor::make_view(x, {1, 4}, {0, 1}, 0)), MemOverlap::No);  // size-1 dim
  EXPECT_EQ(has_internal_overlap(Tensor::make_view(x, {2, 2}, {1, 1}, 0)), MemOverlap::TooHard);
  EXPECT_THROW(assert_no_internal_overlap(Tensor::make_view(x, {4}, {0}, 0), "t"), Error);
  EXPECT_THROW(assert_no_partial_overlap(Tensor::make_view(x, {3}, {1}, 1), Tensor::make_view(x, {3}, {1}, 0), "t"),
               Error);
}
