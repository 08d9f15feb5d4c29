// The fused multi-tensor optimizer steps: FusedAdam (Adam and AdamW) and FusedSgd, records and
// C++ API (optim.h). Inputs are lists of tensors laid end to end (params, grads, then the
// states); the op has no outputs and writes the params and states in place: one kernel call per
// step for a whole list (the CUDA kernel packs the list into multi-tensor launches, as torch's
// multi_tensor_apply). Per-element math: optim_update.h. Not differentiable; a trace that meets one
// falls back to eager (OpDef::writes_inputs: the IR has no multi-tensor write), which is why
// python/lucid/optim uses the op-by-op path while a step is compiled.
#include "lucid/ops/optim.h"

#include <cmath>

#include "lucid/ops/op_def.h"

namespace lucid {

namespace {

// Validates lists of n tensors each (list 0: the params): contiguous, one floating dtype, each
// list's i-th tensor of params[i]'s shape.
void check_lists(const char* op, const TensorList& in, int lists, const char* const* names) {
  LUCID_CHECK(in.size() % lists == 0, ValueError, op, ": expected ", lists, " lists of tensors of one length, got ",
              in.size(), " tensors");
  const size_t n = in.size() / lists;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& p = in[i];
    LUCID_CHECK(p.defined() && is_floating(p.dtype()), TypeError, op, ": argument 'params' expected floating tensors, got ",
                p.defined() ? dtype_name(p.dtype()) : "None", " at index ", i);
    LUCID_CHECK(p.dtype() == in[0].dtype(), TypeError, op, ": argument 'params' expected one dtype (",
                dtype_name(in[0].dtype()), "), got ", dtype_name(p.dtype()), " at index ", i);
    for (int l = 0; l < lists; ++l) {
      const Tensor& t = in[l * n + i];
      LUCID_CHECK(t.defined(), ValueError, op, ": argument '", names[l], "' is None at index ", i);
      LUCID_CHECK(t.dtype() == p.dtype() && t.shape() == p.shape(), ValueError, op, ": argument '", names[l],
                  "' expected a ", dtype_name(p.dtype()), " tensor of shape ", shape_str(p.shape()), " at index ", i,
                  ", got ", dtype_name(t.dtype()), " ", shape_str(t.shape()));
      LUCID_CHECK(t.is_contiguous(), ValueError, op, ": argument '", names[l], "' expected contiguous tensors, got a ",
                  "strided one at index ", i);
    }
  }
}

const char* const kAdamLists[] = {"params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"};
const char* const kSgdLists[] = {"params", "grads", "momentum_buffers"};

int adam_lists(const Attrs& a) { return a.b("amsgrad") ? 5 : 4; }
int sgd_lists(const Attrs& a) { return a.f("momentum") != 0.0 ? 3 : 2; }

void bump(const TensorList& ts) {
  for (const Tensor& t : ts) t.bump_version();
}

}  // namespace

AdamCoeffs adam_coeffs(const Attrs& a) {
  const double lr = a.f("lr"), beta1 = a.f("beta1"), beta2 = a.f("beta2"), wd = a.f("weight_decay");
  const double step = a.f("step");
  AdamCoeffs k;
  k.lerp_weight = 1 - beta1;
  k.beta2 = beta2;
  k.one_minus_beta2 = 1 - beta2;
  k.weight_decay = wd;
  k.decay = 1 - lr * wd;
  // As the op-by-op path's float64 0-d tensor math: 1 - beta ** step, lr / bc1, bc2.sqrt().
  const double bc1 = 1 - std::pow(beta1, step), bc2 = 1 - std::pow(beta2, step);
  k.bc2_sqrt = std::sqrt(bc2);
  k.eps = a.f("eps");
  k.neg_step_size = -(lr / bc1);
  k.amsgrad = a.b("amsgrad");
  k.maximize = a.b("maximize");
  k.decoupled = a.b("decoupled");
  return k;
}

SgdCoeffs sgd_coeffs(const Attrs& a) {
  SgdCoeffs k;
  k.neg_lr = -a.f("lr");
  k.momentum = a.f("momentum");
  k.one_minus_dampening = 1 - a.f("dampening");
  k.weight_decay = a.f("weight_decay");
  k.maximize = a.b("maximize");
  k.nesterov = a.b("nesterov");
  k.first = a.b("first");
  return k;
}

LUCID_REGISTER_OP(FusedAdam,
                  "lr:float, beta1:float, beta2:float, eps:float, weight_decay:float, step:float, amsgrad:bool, "
                  "maximize:bool, decoupled:bool",
                  [] {
                    OpDef d;
                    d.num_inputs = -1;
                    d.differentiable = false;
                    d.writes_inputs = true;
                    d.infer = [](const TensorList& in, const Attrs& a) {
                      check_lists("fused_adam", in, adam_lists(a), kAdamLists);
                      return std::vector<TensorMeta>{};
                    };
                    return d;
                  }());

LUCID_REGISTER_OP(FusedSgd,
                  "lr:float, momentum:float, dampening:float, weight_decay:float, nesterov:bool, maximize:bool, "
                  "first:bool",
                  [] {
                    OpDef d;
                    d.num_inputs = -1;
                    d.differentiable = false;
                    d.writes_inputs = true;
                    d.infer = [](const TensorList& in, const Attrs& a) {
                      check_lists("fused_sgd", in, sgd_lists(a), kSgdLists);
                      return std::vector<TensorMeta>{};
                    };
                    return d;
                  }());

void fused_adam_(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                 const TensorList& exp_avg_sqs, const TensorList& max_exp_avg_sqs, const AdamOptions& o) {
  const size_t n = params.size();
  LUCID_CHECK(grads.size() == n && exp_avgs.size() == n && exp_avg_sqs.size() == n &&
                  (!o.amsgrad || max_exp_avg_sqs.size() == n),
              ValueError, "fused_adam: expected lists of ", n, " tensors (one per parameter)");
  if (n == 0) return;
  TensorList in;
  in.reserve(5 * n);
  for (const TensorList* l : {&params, &grads, &exp_avgs, &exp_avg_sqs}) in.insert(in.end(), l->begin(), l->end());
  if (o.amsgrad) in.insert(in.end(), max_exp_avg_sqs.begin(), max_exp_avg_sqs.end());
  Attrs a{{"lr", o.lr},         {"beta1", o.beta1},         {"beta2", o.beta2},
          {"eps", o.eps},       {"weight_decay", o.weight_decay}, {"step", o.step},
          {"amsgrad", o.amsgrad}, {"maximize", o.maximize}, {"decoupled", o.decoupled}};
  dispatch(OpId::FusedAdam, in, a);
  bump(params), bump(exp_avgs), bump(exp_avg_sqs);
  if (o.amsgrad) bump(max_exp_avg_sqs);
}

void fused_sgd_(const TensorList& params, const TensorList& grads, const TensorList& momentum_buffers,
                const SgdOptions& o) {
  const size_t n = params.size();
  const bool momentum = o.momentum != 0.0;
  LUCID_CHECK(grads.size() == n && (!momentum || momentum_buffers.size() == n), ValueError,
              "fused_sgd: expected lists of ", n, " tensors (one per parameter)");
  if (n == 0) return;
  TensorList in(params);
  in.insert(in.end(), grads.begin(), grads.end());
  if (momentum) in.insert(in.end(), momentum_buffers.begin(), momentum_buffers.end());
  Attrs a{{"lr", o.lr},           {"momentum", o.momentum}, {"dampening", o.dampening},
          {"weight_decay", o.weight_decay}, {"nesterov", o.nesterov}, {"maximize", o.maximize},
          {"first", o.first}};
  dispatch(OpId::FusedSgd, in, a);
  bump(params);
  if (momentum) bump(momentum_buffers);
}

}  // namespace lucid
