// BatchNorm's training forward and batch-statistics backward on cuDNN's batch-norm kernels
// (cudnnBatchNormalizationForwardTraining / cudnnBatchNormalizationBackward, mode
// CUDNN_BATCHNORM_SPATIAL: statistics per channel over N and the spatial dims), as PyTorch runs
// them. The API is deprecated in cuDNN 9 but kept; its kernels are several times faster than a
// block per channel for the few-channel, many-element shapes of a CNN.
//
// What lucid's ops ask of them (ops/nn_norm.cpp):
//   - the forward saves the batch mean and rstd = 1 / sqrt(biased var + eps), which are cuDNN's
//     saveMean / saveInvVariance; the running statistics are BatchNormUpdateStats' in-place op, so
//     cuDNN gets null running-mean/var pointers (the API allows both null) and updates nothing;
//   - x is [N, C, *]: a 4-D x goes to cuDNN as it is, any other as [N, C, S, 1] (S the product of
//     the spatial dims; 1 for a 2-D x), which spatial mode normalises the same way;
//   - scale, bias, mean and rstd are float32 for float32/float16/bfloat16 x and float64 for
//     float64 x (the types cudnnDeriveBNTensorDescriptor gives, and lucid's statistic dtype,
//     nnutil::stat_dtype); a weight or bias of another dtype is cast on the device, a missing one
//     (affine=False) is ones / zeros made for the call, so nothing is cached;
//   - inputs are made contiguous (cuDNN gets NCHW strides).
// cuDNN accumulates in float for all but float64 x (lucid's own kernels, in double), within the
// tolerance torch's CUDA results are held to; its batch-norm kernels are deterministic (cuDNN's
// reproducibility notes list no batch-norm routine among the exceptions).
//
// Cases cuDNN does not take, returned to the caller's kernels (batch_norm.cu, norm.cu): an empty x
// (cuDNN wants non-null pointers; lucid's statistics of no elements are NaN), 2^31 - 1 or more
// elements (its kernels index in 32 bits), N > 880801 (PyTorch's bound for cuDNN's spatial
// training kernels) and, in the forward, eps < CUDNN_BN_MIN_EPSILON. A channel of one value in
// training never gets here: the BatchNorm record rejects it.
#include "lucid/backends/cuda/kernels/batch_norm_cudnn.h"

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "lucid/backends/cuda/cudnn_handle.h"
#include "lucid/backends/cuda/device_copy.h"
#include "lucid/backends/cuda/stream.h"
#include "lucid/backends/cuda/strided_move.h"
#include "lucid/ops/nn_layout.h"

namespace lucid::cuda {

namespace {

constexpr int64_t kMaxBatch = 880801;

bool cudnn_takes(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n > 0 && n < std::numeric_limits<int32_t>::max() && s[0] <= kMaxBatch;
}

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::Float32: return CUDNN_DATA_FLOAT;
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    default: break;
  }
  throw TypeError(str("batch_norm: expected a floating dtype, got ", dtype_name(t)));
}

// An NCHW-packed cudnnTensorDescriptor_t, destroyed with the object.
class TensorDesc {
 public:
  TensorDesc(cudnnDataType_t t, const std::array<int64_t, 4>& d) {
    check_cudnn(cudnnCreateTensorDescriptor(&desc_), "cudnnCreateTensorDescriptor");
    const cudnnStatus_t s = cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, t, static_cast<int>(d[0]),
                                                       static_cast<int>(d[1]), static_cast<int>(d[2]),
                                                       static_cast<int>(d[3]));
    if (s != CUDNN_STATUS_SUCCESS) {
      cudnnDestroyTensorDescriptor(desc_);
      check_cudnn(s, "cudnnSetTensor4dDescriptor");
    }
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(desc_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

std::array<int64_t, 4> dims4(const Shape& s) {
  if (s.size() == 4) return {s[0], s[1], s[2], s[3]};
  const nnutil::NormLayout L = nnutil::make_norm_layout(nnutil::kBatch, s, 0);
  return {L.P, L.Q, L.S, 1};
}

// The two descriptors of a call: x's (also y's, dy's and dx's) and the [1, C, 1, 1] one of the
// parameters, their gradients and the statistics.
struct BnDescs {
  explicit BnDescs(const Tensor& x)
      : data(cudnn_type(x.dtype()), dims4(x.shape())),
        param(cudnn_type(nnutil::stat_dtype(x.dtype())), {1, x.shape()[1], 1, 1}) {}
  TensorDesc data, param;
};

// cuDNN's blend factors out = 1 * result + 0 * out, as double for float64 data, else float.
struct Blend {
  explicit Blend(DType param) : dbl(param == DType::Float64) {}
  const void* one() const { return dbl ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return dbl ? static_cast<const void*>(&d0) : &f0; }
  bool dbl;
  float f1 = 1.0f, f0 = 0.0f;
  double d1 = 1.0, d0 = 0.0;
};

// A [C] parameter as cuDNN reads it: contiguous, of dtype pd, on dev; `missing` in every element
// when t is undefined.
Tensor param_as(const Tensor& t, DType pd, int64_t C, const Device& dev, double missing) {
  if (t.defined()) return cast_on_device(t.contiguous_data(), pd);
  Tensor p = Tensor::empty({C}, pd, dev);
  fill(p, missing);
  return p;
}

void check_outputs(std::initializer_list<const Tensor*> outs, const char* op) {
  for (const Tensor* t : outs) LUCID_CHECK(t->is_contiguous(), Error, op, ": the outputs must be contiguous");
}

}  // namespace

bool cudnn_batch_norm_train(const Tensor& xin, const Tensor& weight, const Tensor& bias, double eps, const Tensor& y,
                            const Tensor& mean, const Tensor& rstd) {
  if (eps < CUDNN_BN_MIN_EPSILON || !cudnn_takes(xin.shape())) return false;
  check_outputs({&y, &mean, &rstd}, "batch_norm");
  const Device dev = y.device();
  DeviceGuard guard(dev);
  const Tensor x = xin.contiguous_data();
  const DType pd = nnutil::stat_dtype(x.dtype());
  const int64_t C = x.shape()[1];
  const Tensor w = param_as(weight, pd, C, dev, 1.0), b = param_as(bias, pd, C, dev, 0.0);
  const BnDescs d(x);
  const Blend k(pd);
  check_cudnn(cudnnBatchNormalizationForwardTraining(cudnn_handle(dev), CUDNN_BATCHNORM_SPATIAL, k.one(), k.zero(),
                                                     d.data.get(), x.data_ptr(), d.data.get(), y.data_ptr(),
                                                     d.param.get(), w.data_ptr(), b.data_ptr(),
                                                     /*exponentialAverageFactor=*/0.0, /*resultRunningMean=*/nullptr,
                                                     /*resultRunningVariance=*/nullptr, eps, mean.data_ptr(),
                                                     rstd.data_ptr()),
              "cudnnBatchNormalizationForwardTraining");
  return true;
}

bool cudnn_batch_norm_backward(const Tensor& gin, const Tensor& xin, const Tensor& mean_in, const Tensor& rstd_in,
                               const Tensor& weight, const Tensor& gx, const Tensor& gweight, const Tensor& gbias) {
  if (!cudnn_takes(xin.shape())) return false;
  check_outputs({&gx, &gweight, &gbias}, "norm_backward");
  const Device dev = gx.device();
  DeviceGuard guard(dev);
  const DType xt = xin.dtype(), pd = nnutil::stat_dtype(xt);
  const Tensor x = xin.contiguous_data(), g = cast_on_device(gin.contiguous_data(), xt);
  const Tensor mean = cast_on_device(mean_in.contiguous_data(), pd), rstd = cast_on_device(rstd_in.contiguous_data(), pd);
  const Tensor w = param_as(weight, pd, x.shape()[1], dev, 1.0);
  const BnDescs d(x);
  const Blend k(pd);
  // epsilon: cuDNN reads it only to recompute the statistics when no saved ones are given; the
  // saved mean and rstd are, so the smallest value it accepts stands in for the forward's.
  check_cudnn(cudnnBatchNormalizationBackward(cudnn_handle(dev), CUDNN_BATCHNORM_SPATIAL, k.one(), k.zero(), k.one(),
                                              k.zero(), d.data.get(), x.data_ptr(), d.data.get(), g.data_ptr(),
                                              d.data.get(), gx.data_ptr(), d.param.get(), w.data_ptr(),
                                              gweight.data_ptr(), gbias.data_ptr(), CUDNN_BN_MIN_EPSILON,
                                              mean.data_ptr(), rstd.data_ptr()),
              "cudnnBatchNormalizationBackward");
  return true;
}

}  // namespace lucid::cuda
