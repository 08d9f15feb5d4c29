"""RAdam (rectified Adam, decoupled_weight_decay) with torch's update rule; the rho_t > 5 branch is
a lucid.where on a 0-d tensor, so it needs no host read."""
import lucid
from lucid.optim.optimizer import Optimizer, _closure_loss, _use_grad
from lucid.optim.adam import _check
from lucid.optim import _functional as _f

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            decoupled = group["decoupled_weight_decay"]
            for p, grad, state in self._params_with_grad(group, "exp_avg", "exp_avg_sq"):
                exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
                step_t.add_(1)
                step = _f.as_scalar_tensor(step_t)
                if weight_decay != 0:
                    if decoupled:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad + p * weight_decay
                _f.lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq.mul_(beta2)
                _f.addcmul_(exp_avg_sq, grad, grad, 1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = exp_avg / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                rect_sq = (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                use_rect = rho_t > 5.0
                rect = lucid.where(use_rect, rect_sq, 1.0).sqrt()
                adaptive_lr = bias_correction2.sqrt() / (exp_avg_sq.sqrt() + eps)
                update = bias_corrected_exp_avg * lr
                update = lucid.where(use_rect, update * adaptive_lr * rect, update)
                _f.add_(p, update, -1.0)
        return loss
