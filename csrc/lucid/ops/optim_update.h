// The per-element math of the fused optimizer updates (FusedAdam, FusedSgd in optim_ops.cpp),
// device-neutral (LUCID_HOST_DEVICE), so the CPU and CUDA kernels compute it from one copy.
//
// Each update is the op-by-op path of python/lucid/optim/{adam,sgd}.py written out per element:
// the same functors (ops/scalar_functors.h: Lerp, Addcmul, Addcdiv, Maximum), in the same order,
// with every intermediate the op-by-op path stores as a tensor rounded to the parameter's dtype
// (`round`: identity for float32/float64, a round trip through float16/bfloat16 otherwise), and
// every factor cast as the elementwise ops cast it: a Python float or 0-d tensor operand (mul_,
// lerp_'s weight, add_'s alpha, the division by a bias correction, + eps) is first rounded to the
// tensor's dtype, as lucid's CPU elementwise kernels do (torch's keep it in float: for 16-bit
// parameters the two differ in the last bit), while the `value` attribute of addcmul_/addcdiv_ is
// cast to the compute type only. The step-dependent factors (bias corrections) are computed once on the host in float64,
// as the op-by-op path's 0-d float64 tensor math. The kernels' files are compiled without
// floating-point contraction (-ffp-contract=off / nvcc -fmad=false, see CMakeLists.txt), so the
// CPU and CUDA kernels give the same bits.
#pragma once
#include <cmath>
#include <cstdint>

#include "lucid/core/host_device.h"
#include "lucid/ops/scalar_functors.h"

namespace lucid {

// Adam / AdamW at one step (attributes of FusedAdam, see adam_coeffs in optim_ops.cpp).
struct AdamCoeffs {
  double lerp_weight;     // 1 - beta1
  double beta2;
  double one_minus_beta2;
  double weight_decay;
  double decay;           // 1 - lr * weight_decay (decoupled)
  double bc2_sqrt;        // sqrt(1 - beta2^step)
  double eps;
  double neg_step_size;   // -lr / (1 - beta1^step)
  bool amsgrad, maximize, decoupled;
};

// p, m (exp_avg), v (exp_avg_sq) and vmax (max_exp_avg_sq, amsgrad only) updated in place.
template <class C, class Round>
LUCID_HOST_DEVICE inline void adam_update(C& p, C g, C& m, C& v, C& vmax, const AdamCoeffs& k, const Round& round) {
  auto operand = [&](double x) { return round(static_cast<C>(x)); };  // a scalar operand in p's dtype
  if (k.maximize) g = -g;
  if (k.weight_decay != 0) {
    if (k.decoupled) p = round(p * operand(k.decay));                              // p.mul_(1 - lr * wd)
    else g = round(g + round(p * operand(k.weight_decay)));                       // grad + p * wd
  }
  m = round(sm::Lerp::apply<C>(m, g, operand(k.lerp_weight)));                     // lerp_(m, g, 1 - beta1)
  v = round(v * operand(k.beta2));                                                  // v.mul_(beta2)
  v = round(sm::Addcmul{k.one_minus_beta2}.apply<C>(v, g, g));                     // addcmul_(v, g, g, 1 - beta2)
  C s = v;
  if (k.amsgrad) {
    vmax = round(sm::Maximum::apply<C>(vmax, v));                                   // maximum(vmax, v)
    s = vmax;
  }
  const C denom = round(round(round(std::sqrt(s)) / operand(k.bc2_sqrt)) + operand(k.eps));
  p = round(sm::Addcdiv{k.neg_step_size}.apply<C>(p, m, denom));                  // addcdiv_(p, m, denom, -step_size)
}

// SGD (attributes of FusedSgd).
struct SgdCoeffs {
  double neg_lr;               // -lr
  double momentum;
  double one_minus_dampening;
  double weight_decay;
  bool maximize, nesterov, first;  // first: the momentum buffer starts as the gradient
};

// p and buf (the momentum buffer, read and written only when momentum != 0) updated in place.
template <class C, class Round>
LUCID_HOST_DEVICE inline void sgd_update(C& p, C g, C& buf, const SgdCoeffs& k, const Round& round) {
  auto operand = [&](double x) { return round(static_cast<C>(x)); };  // a scalar operand in p's dtype
  if (k.maximize) g = -g;
  if (k.weight_decay != 0) g = round(g + round(p * operand(k.weight_decay)));     // grad + p * wd
  if (k.momentum != 0) {
    if (k.first) {
      buf = g;                                                                      // grad.clone()
    } else {
      buf = round(buf * operand(k.momentum));                                       // buf.mul_(momentum)
      buf = k.one_minus_dampening == 1 ? round(buf + g)                             // add_(buf, g, 1 - dampening)
                                       : round(buf + round(g * operand(k.one_minus_dampening)));
    }
    g = k.nesterov ? round(g + round(buf * operand(k.momentum))) : buf;            // grad + buf * momentum
  }
  p = round(p + round(g * operand(k.neg_lr)));                                     // add_(p, g, -lr)
}

}  // namespace lucid
