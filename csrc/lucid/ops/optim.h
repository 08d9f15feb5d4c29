// C++ API of the optim family: the fused multi-tensor optimizer steps (optim_ops.cpp), which
// update lists of parameters and their states in place in one kernel call per device and dtype
// (the foreach/fused path of torch.optim's Adam, AdamW and SGD; python/lucid/optim uses them).
#pragma once
#include "lucid/dispatch/dispatch.h"
#include "lucid/ops/optim_update.h"

namespace lucid {

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  double step = 1.0;  // the step count after this step's increment (bias corrections)
  bool amsgrad = false, maximize = false, decoupled = false;
};
// One Adam (decoupled: AdamW) step over params[i] with grads[i], exp_avgs[i], exp_avg_sqs[i]
// and, with amsgrad, max_exp_avg_sqs[i]: all contiguous, of one floating dtype and device, each
// list's i-th tensor of params[i]'s shape. Bumps the versions of what it writes.
void fused_adam_(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                 const TensorList& exp_avg_sqs, const TensorList& max_exp_avg_sqs, const AdamOptions& o);

struct SgdOptions {
  double lr = 1e-3, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false, maximize = false;
  bool first = false;  // the momentum buffers are new: they start as the (decayed) gradient
};
// One SGD step over params[i] with grads[i] and, when momentum != 0, momentum_buffers[i].
void fused_sgd_(const TensorList& params, const TensorList& grads, const TensorList& momentum_buffers,
                const SgdOptions& o);

// The kernels' per-element coefficients from the ops' attributes.
AdamCoeffs adam_coeffs(const Attrs& a);
SgdCoeffs sgd_coeffs(const Attrs& a);

}  // namespace lucid
