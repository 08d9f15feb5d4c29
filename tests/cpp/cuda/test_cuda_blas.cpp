// The CUDA matrix-product and fused-optimizer kernels called directly (op_def(id).kernel(CUDA)),
// on device tensors filled with cudaMemcpy, against the CPU kernels on the same values: so a
// failure here is the kernel's, not the Python plumbing's (tests/python/test_cuda_matmul.py and
// test_cuda_optim_fused.py cover the same through lucid's API). Skips without a GPU or without
// the CUDA allocator.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <random>

#include "lucid/backends/cuda/cuda_check.h"
#include "lucid/backends/cuda/device_info.h"
#include "lucid/ops/linalg.h"
#include "lucid/ops/optim.h"

using namespace lucid;

namespace {

const Device kCuda{DeviceType::CUDA, 0};

bool cuda_tensors_work() {
  if (!cuda::is_available()) return false;
  try {
    Tensor::empty({4}, DType::Float32, kCuda);
    return true;
  } catch (const Error&) {
    return false;
  }
}

#define REQUIRE_CUDA() \
  if (!cuda_tensors_work()) GTEST_SKIP() << "no CUDA device or allocator"

Tensor random_cpu(const Shape& s, DType dt, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Tensor t = Tensor::empty(s, dt);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = u(rng);
    switch (dt) {
      case DType::Float32: t.data<float>()[i] = v; break;
      case DType::Float64: t.data<double>()[i] = v; break;
      case DType::Float16: t.data<Half>()[i] = Half(v); break;
      case DType::Int32: t.data<int32_t>()[i] = static_cast<int32_t>(std::lround(v * 4)); break;
      default: ADD_FAILURE() << "dtype";
    }
  }
  return t;
}

Tensor to_cuda(const Tensor& c) {
  Tensor src = c.contiguous_data();
  Tensor d = Tensor::empty(c.shape(), c.dtype(), kCuda);
  cuda::check_cuda(cudaMemcpy(d.data_ptr(), src.data_ptr(), c.numel() * itemsize(c.dtype()), cudaMemcpyHostToDevice),
                   "cudaMemcpy");
  return d;
}

Tensor to_cpu(const Tensor& d) {
  Tensor c = Tensor::empty(d.shape(), d.dtype());
  cuda::check_cuda(cudaMemcpy(c.data_ptr(), d.data_ptr(), d.numel() * itemsize(d.dtype()), cudaMemcpyDeviceToHost),
                   "cudaMemcpy");
  return c;
}

double at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Float32: return t.data<float>()[i];
    case DType::Float64: return t.data<double>()[i];
    case DType::Float16: return static_cast<float>(t.data<Half>()[i]);
    case DType::Int32: return t.data<int32_t>()[i];
    default: return NAN;
  }
}

// The op's CUDA kernel on device inputs (outputs allocated from infer on the device).
Tensor run_cuda(OpId id, const TensorList& in, const Attrs& a = {}) {
  const OpDef& def = op_def(id);
  std::vector<TensorMeta> m = def.infer(in, a);
  Tensor out = Tensor::empty(m[0].shape, m[0].dtype, kCuda);
  def.kernel(DeviceType::CUDA)(in, {out}, a);
  cuda::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return to_cpu(out);
}

void expect_close(const Tensor& got, const Tensor& exp, double tol, const char* what) {
  ASSERT_EQ(got.shape(), exp.shape()) << what;
  Tensor e = exp.contiguous_data();
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = at(got, i), x = at(e, i);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(g)) << what << " at " << i;
      continue;
    }
    EXPECT_NEAR(g, x, tol * (1 + std::fabs(x))) << what << " at " << i;
  }
}

}  // namespace

TEST(CudaBlas, MatmulShapesAndDtypes) {
  REQUIRE_CUDA();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{5}, {5}}, {{4, 5}, {5, 3}}, {{7, 4, 5}, {5, 3}}, {{2, 1, 4, 5}, {3, 5, 6}}, {{3, 4, 5}, {3, 5, 2}},
      {{4, 5}, {5}}, {{3, 0}, {0, 4}}, {{64, 96}, {96, 80}}};
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::Int32}) {
    const double tol = dt == DType::Float16 ? 1e-2 : dt == DType::Float32 ? 1e-5 : 1e-12;
    uint32_t seed = 1;
    for (auto& [sa, sb] : shapes) {
      Tensor a = random_cpu(sa, dt, seed++), b = random_cpu(sb, dt, seed++);
      expect_close(run_cuda(OpId::Matmul, {to_cuda(a), to_cuda(b)}), matmul(a, b), tol, "matmul");
    }
  }
}

TEST(CudaBlas, TransposedAndOffsetViewsAreReadInPlace) {
  REQUIRE_CUDA();
  Tensor a = random_cpu({6, 4}, DType::Float32, 1), b = random_cpu({5, 6}, DType::Float32, 2);
  Tensor ad = to_cuda(a), bd = to_cuda(b);
  Tensor at_d = Tensor::make_view(ad, {4, 6}, {1, 4}, 0), bt_d = Tensor::make_view(bd, {6, 5}, {1, 6}, 0);
  Tensor at_c = Tensor::make_view(a, {4, 6}, {1, 4}, 0), bt_c = Tensor::make_view(b, {6, 5}, {1, 6}, 0);
  expect_close(run_cuda(OpId::Matmul, {at_d, bt_d}), matmul(at_c, bt_c), 1e-5, "a^T b^T");
  // rows 1..3 of a [6, 4] (storage offset) times a [4, 5]
  Tensor c = random_cpu({4, 5}, DType::Float32, 3);
  Tensor av_d = Tensor::make_view(ad, {3, 4}, {4, 1}, 4), av_c = Tensor::make_view(a, {3, 4}, {4, 1}, 4);
  expect_close(run_cuda(OpId::Matmul, {av_d, to_cuda(c)}), matmul(av_c, c), 1e-5, "offset view");
}

TEST(CudaBlas, LinearFusedActivationsKeepNan) {
  REQUIRE_CUDA();
  Tensor x = random_cpu({3, 8}, DType::Float32, 4), w = random_cpu({6, 8}, DType::Float32, 5);
  Tensor bias = random_cpu({6}, DType::Float32, 6), res = random_cpu({3, 6}, DType::Float32, 7);
  x.data<float>()[9] = NAN;  // row 1
  for (const char* act : {"none", "relu", "gelu", "gelu_tanh"})
    for (bool first : {false, true}) {
      Attrs at{{"activation", std::string(act)}, {"residual_first", first}};
      Tensor got = run_cuda(OpId::LinearFused, {to_cuda(x), to_cuda(w), to_cuda(bias), to_cuda(res)}, at);
      expect_close(got, linear_fused(x, w, bias, res, act, first), 1e-5, act);
      for (int j = 0; j < 6; ++j) EXPECT_TRUE(std::isnan(got.data<float>()[6 + j])) << act;
    }
  expect_close(run_cuda(OpId::Linear, {to_cuda(x), to_cuda(w), to_cuda(bias)}), linear(x, w, bias), 1e-5, "linear");
}

TEST(CudaBlas, AddmmBetaAlpha) {
  REQUIRE_CUDA();
  Tensor bias = random_cpu({4, 1}, DType::Float32, 8), a = random_cpu({4, 7}, DType::Float32, 9);
  Tensor b = random_cpu({7, 3}, DType::Float32, 10);
  for (auto [beta, alpha] : {std::pair{1.0, 1.0}, {0.5, 2.0}, {0.0, 1.0}}) {
    Attrs at{{"beta", beta}, {"alpha", alpha}};
    expect_close(run_cuda(OpId::Addmm, {to_cuda(bias), to_cuda(a), to_cuda(b)}, at), addmm(bias, a, b, beta, alpha),
                 1e-5, "addmm");
  }
}

TEST(CudaBlas, FusedAdamAndSgdEqualTheCpuKernelBitForBit) {
  REQUIRE_CUDA();
  // 40 tensors (two launches of at most 36) and one of several chunks.
  std::vector<Shape> shapes(40, Shape{17});
  shapes[3] = {3 * 65536 + 5};
  TensorList p, g, m, v, w, pd, gd, md, vd, wd;
  uint32_t seed = 20;
  for (const Shape& s : shapes) {
    p.push_back(random_cpu(s, DType::Float32, seed++)), g.push_back(random_cpu(s, DType::Float32, seed++));
    m.push_back(random_cpu(s, DType::Float32, seed++)), v.push_back(random_cpu(s, DType::Float32, seed++));
    for (int64_t i = 0; i < v.back().numel(); ++i) v.back().data<float>()[i] = std::fabs(v.back().data<float>()[i]);
    w.push_back(Tensor::empty(s, DType::Float32));  // max_exp_avg_sq: a copy of v
    std::memcpy(w.back().data_ptr(), v.back().data_ptr(), v.back().numel() * 4);
    for (auto [src, dst] : {std::pair{&p, &pd}, {&g, &gd}, {&m, &md}, {&v, &vd}, {&w, &wd}})
      dst->push_back(to_cuda(src->back()));
  }
  AdamOptions o;
  o.lr = 1e-2, o.weight_decay = 0.1, o.step = 3, o.amsgrad = true, o.maximize = true;
  fused_adam_(p, g, m, v, w, o);
  fused_adam_(pd, gd, md, vd, wd, o);
  cuda::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (size_t i = 0; i < shapes.size(); ++i)
    for (auto [c, d] : {std::pair{&p, &pd}, {&m, &md}, {&v, &vd}, {&w, &wd}}) {
      Tensor h = to_cpu((*d)[i]);
      ASSERT_EQ(0, std::memcmp(h.data_ptr(), (*c)[i].data_ptr(), h.numel() * 4)) << "adam tensor " << i;
    }
  SgdOptions s;
  s.lr = 0.1, s.momentum = 0.9, s.nesterov = true, s.weight_decay = 0.01;
  fused_sgd_(p, g, m, s);
  fused_sgd_(pd, gd, md, s);
  cuda::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor h = to_cpu(pd[i]);
    ASSERT_EQ(0, std::memcmp(h.data_ptr(), p[i].data_ptr(), h.numel() * 4)) << "sgd tensor " << i;
  }
}
