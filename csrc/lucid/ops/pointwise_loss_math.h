// The math of the pointwise losses (records in ops/loss_pointwise.cpp; kinds in ops/nn_layout.h),
// written once and device-neutral: the loss of one element, its gradients and the constant second
// derivative of the difference losses, all in double. The CPU kernel
// (backends/cpu/kernels/loss_pointwise.cpp) and the CUDA kernel
// (backends/cuda/kernels/loss_pointwise.cu) both call these (LUCID_HOST_DEVICE; only <cmath>
// functions that nvcc's device side provides, no std::max, which is host-only constexpr to nvcc).
#pragma once
#include <cmath>
#include <cstdint>

#include "lucid/core/host_device.h"
#include "lucid/ops/nn_layout.h"

namespace lucid::nnutil {

// std::max(a, b) for doubles (a NaN `a` is returned, as std::max).
LUCID_HOST_DEVICE inline double loss_max(double a, double b) { return a < b ? b : a; }

LUCID_HOST_DEVICE inline double xlogy_self(double t) { return t == 0.0 ? 0.0 : t * std::log(t); }

LUCID_HOST_DEVICE inline double loss_sgn(double d) { return d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0); }
// log(1 + e^-x), stable.
LUCID_HOST_DEVICE inline double softplus_neg(double x) { return std::log1p(std::exp(-std::fabs(x))) + loss_max(-x, 0.0); }

// Loss of one element; w = weight (1 if none), pw = pos_weight (1 if none), beta = beta/delta.
LUCID_HOST_DEVICE inline double elem_loss(int64_t kind, double x, double t, double w, double pw, double beta) {
  double d = x - t;
  switch (kind) {
    case kMse: return d * d;
    case kL1: return std::fabs(d);
    case kSmoothL1: {
      double a = std::fabs(d);
      return (beta == 0.0 || a >= beta) ? a - 0.5 * beta : 0.5 * d * d / beta;
    }
    case kHuber: {
      double a = std::fabs(d);
      return a < beta ? 0.5 * d * d : beta * (a - 0.5 * beta);
    }
    case kBce:
      return -w * (t * loss_max(std::log(x), -100.0) + (1.0 - t) * loss_max(std::log1p(-x), -100.0));
    case kKlDiv:
      return beta != 0.0 ? std::exp(t) * (t - x) : xlogy_self(t) - t * x;
    default: {
      double lw = 1.0 + (pw - 1.0) * t;
      return w * ((1.0 - t) * x + lw * softplus_neg(x));
    }
  }
}

// d loss / d x and d loss / d t of one element.
LUCID_HOST_DEVICE inline void elem_grad(int64_t kind, double x, double t, double w, double pw, double beta, double& gx,
                                        double& gt) {
  double d = x - t;
  switch (kind) {
    case kMse: gx = 2.0 * d; gt = -gx; return;
    case kL1: gx = loss_sgn(d); gt = -gx; return;
    case kSmoothL1: gx = (beta == 0.0 || std::fabs(d) >= beta) ? loss_sgn(d) : d / beta; gt = -gx; return;
    case kHuber: gx = std::fabs(d) < beta ? d : beta * loss_sgn(d); gt = -gx; return;
    case kBce:
      gx = w * (x - t) / loss_max((1.0 - x) * x, 1e-12);
      gt = w * (loss_max(std::log1p(-x), -100.0) - loss_max(std::log(x), -100.0));
      return;
    case kKlDiv:
      if (beta != 0.0) {
        gx = -std::exp(t);
        gt = std::exp(t) * (t - x + 1.0);
      } else {
        gx = -t;
        gt = std::log(t) + 1.0 - x;
      }
      return;
    default: {
      double sig = 1.0 / (1.0 + std::exp(-x));
      gx = w * ((1.0 + (pw - 1.0) * t) * sig - pw * t);
      double logsig_pos = -softplus_neg(x), logsig_neg = -softplus_neg(-x);
      gt = w * (logsig_neg - pw * logsig_pos);
    }
  }
}

// d2 loss / d x2 of the four difference losses (constant pieces; used by the double backward).
LUCID_HOST_DEVICE inline double elem_grad2(int64_t kind, double x, double t, double beta) {
  double a = std::fabs(x - t);
  switch (kind) {
    case kMse: return 2.0;
    case kSmoothL1: return (beta > 0.0 && a < beta) ? 1.0 / beta : 0.0;
    case kHuber: return a < beta ? 1.0 : 0.0;
    default: return 0.0;
  }
}

}  // namespace lucid::nnutil
