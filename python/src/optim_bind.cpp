// Bindings of the fused optimizer steps (ops/optim.h): _C._fused_adam_ and _C._fused_sgd_, called
// by python/lucid/optim's Adam, AdamW and SGD on their foreach/fused path.
#include "bind.h"
#include "lucid/ops/optim.h"

namespace lucid::py {

LUCID_BINDER(optim) {
  m.def("_fused_adam_", [](const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                           const TensorList& exp_avg_sqs, const TensorList& max_exp_avg_sqs, double lr, double beta1,
                           double beta2, double eps, double weight_decay, double step, bool amsgrad, bool maximize,
                           bool decoupled) {
    AdamOptions o;
    o.lr = lr, o.beta1 = beta1, o.beta2 = beta2, o.eps = eps, o.weight_decay = weight_decay, o.step = step;
    o.amsgrad = amsgrad, o.maximize = maximize, o.decoupled = decoupled;
    fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, o);
  }, nb::arg("params"), nb::arg("grads"), nb::arg("exp_avgs"), nb::arg("exp_avg_sqs"), nb::arg("max_exp_avg_sqs"),
     nb::kw_only(), nb::arg("lr"), nb::arg("beta1"), nb::arg("beta2"), nb::arg("eps"), nb::arg("weight_decay"),
     nb::arg("step"), nb::arg("amsgrad"), nb::arg("maximize"), nb::arg("decoupled"));
  m.def("_fused_sgd_", [](const TensorList& params, const TensorList& grads, const TensorList& momentum_buffers,
                          double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                          bool maximize, bool first) {
    SgdOptions o;
    o.lr = lr, o.momentum = momentum, o.dampening = dampening, o.weight_decay = weight_decay;
    o.nesterov = nesterov, o.maximize = maximize, o.first = first;
    fused_sgd_(params, grads, momentum_buffers, o);
  }, nb::arg("params"), nb::arg("grads"), nb::arg("momentum_buffers"), nb::kw_only(), nb::arg("lr"),
     nb::arg("momentum"), nb::arg("dampening"), nb::arg("weight_decay"), nb::arg("nesterov"), nb::arg("maximize"),
     nb::arg("first"));
}

}  // namespace lucid::py
