// BatchNorm's training forward and its batch-statistics backward through cuDNN's batch-norm
// kernels (batch_norm_cudnn.cpp), for the CUDA kernels of BatchNorm (batch_norm.cu) and
// NormBackward (norm.cu). Each returns false, having done nothing, for a case cuDNN does not take;
// the caller then runs its own kernels. The tensors are the kernels' inputs and outputs as the op
// records define them (ops/nn_norm.cpp).
#pragma once
#include "lucid/core/tensor.h"

namespace lucid::cuda {

// y, mean, rstd = BatchNorm(x, weight, bias) with the batch's statistics (weight/bias may be
// undefined); the running statistics are BatchNormUpdateStats' work, not touched here.
bool cudnn_batch_norm_train(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& y,
                            const Tensor& mean, const Tensor& rstd);

// gx, gweight, gbias of BatchNorm with batch statistics, from the forward's saved mean and rstd
// (weight may be undefined).
bool cudnn_batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                               const Tensor& weight, const Tensor& gx, const Tensor& gweight, const Tensor& gbias);

}  // namespace lucid::cuda
