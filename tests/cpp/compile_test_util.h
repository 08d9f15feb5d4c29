// Shared helpers of the C++ tests that build compiled entries from hand-written IR
// (test_compiled_entry.cpp, test_disk_cache.cpp): float vectors in, exact values out, and the
// joint forward+backward graph of y = sum(x * w) whose gradients are worked out by hand.
#pragma once
#include <gtest/gtest.h>

#include <initializer_list>

#include "lucid/core/tensor.h"

namespace lucid::test {

inline Tensor vec(std::initializer_list<float> v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::Float32);
  float* p = t.data<float>();
  for (float x : v) *p++ = x;
  return t;
}

// t is a defined, contiguous float32 tensor holding exactly `want` (the values these tests
// expect are exact in float32).
inline void expect_values(const Tensor& t, std::initializer_list<float> want) {
  ASSERT_TRUE(t.defined());
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  ASSERT_TRUE(t.is_contiguous());
  const float* p = t.data<float>();
  for (float w : want) EXPECT_EQ(*p++, w);
}

// Forward y = sum(x * w) (x an input, w bound state); backward from the grad output %1:
// dx = expand(gy) * w, dw = expand(gy) * x. Outputs: y, then the gradients (x's, w's).
inline constexpr const char* kJoint =
    "graph(%0: float32[3] input, %1: float32[] input, %2: float32[3] state) {\n"
    "  %3 = Mul(%0, %2) : float32[3]\n"
    "  %4 = Sum(%3) {dims=[], keepdim=false} : float32[]\n"
    "  %5 = Reshape(%1) {shape=[1]} : float32[1]\n"
    "  %6 = Expand(%5) {shape=[3]} : float32[3]\n"
    "  %7 = Mul(%6, %2) : float32[3]\n"
    "  %8 = Mul(%6, %0) : float32[3]\n"
    "  return (%4, %7, %8)\n"
    "}\n";

}  // namespace lucid::test
