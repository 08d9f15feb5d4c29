// Elementwise family, C++ API: blocks on strided and broadcast operands, the Sleef float32 path
// against the scalar definition, dtype rules, fused activation backward vs create_graph path.
#include <gtest/gtest.h>

#include <cmath>

#include "lucid/autograd/engine.h"
#include "lucid/backends/cpu/elementwise_blocks.h"
#include "lucid/ops/elementwise.h"

using namespace lucid;

static Tensor arange_f(int64_t n, DType dt, double start, double step) {
  Tensor t = Tensor::empty({n}, DType::Float64);
  for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = start + step * i;
  return cast(t, dt);
}

TEST(Elementwise, VectorPathMatchesScalarDefinition) {
  // float32 contiguous rows go through Sleef; float64 through the scalar functor.
  Tensor x32 = arange_f(1003, DType::Float32, -8.0, 0.016);
  Tensor x64 = cast(x32, DType::Float64);
  for (auto f : {&exp, &tanh, &sigmoid, &erf, &sin, &log1p}) {
    Tensor a = f(x32), b = f(x64);
    ASSERT_EQ(a.dtype(), DType::Float32);
    for (int64_t i = 0; i < 1003; ++i) {
      double ref = b.data<double>()[i];
      if (std::isnan(ref)) { EXPECT_TRUE(std::isnan(a.data<float>()[i])); continue; }  // log1p(x < -1)
      EXPECT_NEAR(a.data<float>()[i], ref, 1e-6 + 2e-6 * std::fabs(ref)) << i;
    }
  }
}

TEST(Elementwise, StridedAndBroadcastOperands) {
  Tensor x = reshape(arange_f(12, DType::Float32, -3.0, 0.5), {3, 4});
  Tensor xt = transpose(x, 0, 1);  // non-contiguous
  Tensor e = exp(xt);
  EXPECT_EQ(e.shape(), (Shape{4, 3}));
  EXPECT_FLOAT_EQ(e.data<float>()[1], std::exp(x.data<float>()[4]));
  Tensor cond = gt(x, scalar_tensor(0.0));
  Tensor w = where(cond, x, scalar_tensor(-1.0));
  for (int64_t i = 0; i < 12; ++i) {
    float v = x.data<float>()[i];
    EXPECT_FLOAT_EQ(w.data<float>()[i], v > 0 ? v : -1.0f);
  }
  EXPECT_THROW(maximum(x, full({5}, 0.0, DType::Float32)), ValueError);
}

TEST(Elementwise, DtypeRules) {
  Tensor i = full({3}, 4.0, DType::Int32);
  EXPECT_EQ(exp(i).dtype(), DType::Float32);           // integers promote to the default float
  EXPECT_EQ(pow(i, scalar_tensor(int64_t{2})).dtype(), DType::Int32);
  EXPECT_EQ(pow(i, 0.5).dtype(), DType::Float32);
  EXPECT_EQ(eq(i, scalar_tensor(4.0)).dtype(), DType::Bool);
  EXPECT_TRUE(eq(i, scalar_tensor(4.0)).data<bool>()[0]);
  EXPECT_THROW(gelu(i), TypeError);
  EXPECT_THROW(bitwise_and(full({2}, 1.0, DType::Float32), full({2}, 1.0, DType::Float32)), TypeError);
  EXPECT_THROW(where(i, i, i), TypeError);  // condition must be bool
}

TEST(Elementwise, FusedBackwardMatchesComposition) {
  Tensor x = arange_f(37, DType::Float64, -4.0, 0.21);
  x.set_requires_grad(true);
  for (auto f : {+[](const Tensor& t) { return gelu(t); }, +[](const Tensor& t) { return gelu(t, "tanh"); },
                 +[](const Tensor& t) { return silu(t); }, +[](const Tensor& t) { return relu(t); },
                 +[](const Tensor& t) { return sigmoid(t); }, +[](const Tensor& t) { return tanh(t); }}) {
    Tensor g = full({37}, 1.0, DType::Float64);
    Tensor fused = autograd::grad({f(x)}, {x}, {g}, false, false, false)[0];      // fused op
    Tensor composed = autograd::grad({f(x)}, {x}, {g}, false, true, false)[0];    // create_graph path
    for (int64_t i = 0; i < 37; ++i) EXPECT_NEAR(fused.data<double>()[i], composed.data<double>()[i], 1e-12);
  }
}

// The device-neutral dtype mask (OpDef::ew_dtypes, from the functor table's domain) is what infer
// and the compiler's fusability check read; the CPU blocks are what runs. They must agree exactly:
// every elementwise op has a block for every dtype of its mask and no other (a plain op a
// BlockFn, an op whose functor has parameters a ParamBlock, built from its Attrs), and every op
// of the table has a CPU kernel.
TEST(Elementwise, FunctorTableMasksMatchCpuBlocks) {
  int plain = 0, with_attrs = 0;
  const Attrs gelu_attrs{{"approximate", std::string("tanh")}};
  for (int i = 0; i < kNumOps; ++i) {
    const OpId id = static_cast<OpId>(i);
    if (!op_registered(id)) continue;
    const OpDef& def = op_def(id);
    const bool params = cpu::has_ew_param_block(id);
    for (int t = 0; t < kNumDTypes; ++t) {
      const bool in_mask = def.lowering == Lowering::Elementwise && (def.ew_dtypes >> t & 1);
      EXPECT_EQ(in_mask && !params, cpu::ew_block(id, static_cast<DType>(t)) != nullptr) << def.name << " " << t;
      if (id == OpId::Gelu)  // a ParamBlock for exactly the mask's dtypes (gelu: the float ones)
        EXPECT_EQ(in_mask, cpu::ew_param_block(id, static_cast<DType>(t), gelu_attrs).fn != nullptr) << t;
    }
    if (def.ew_dtypes == 0) continue;
    EXPECT_EQ(def.lowering, Lowering::Elementwise) << def.name;
    EXPECT_NE(def.kernel(DeviceType::CPU), nullptr) << def.name;
    (params ? with_attrs : plain)++;
  }
  EXPECT_EQ(plain + with_attrs, 93);  // the rows of ops/list/elementwise_functors.def
  EXPECT_EQ(with_attrs, 15);
}
