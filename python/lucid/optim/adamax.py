"""Adamax (infinity-norm Adam) with torch's update rule."""
import lucid
from lucid.optim.optimizer import Optimizer, _closure_loss, _use_grad
from lucid.optim.adam import _check
from lucid.optim import _functional as _f

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            for p, grad, state in self._params_with_grad(group, "exp_avg", "exp_inf"):
                exp_avg, exp_inf, step_t = state["exp_avg"], state["exp_inf"], state["step"]
                step_t.add_(1)
                if weight_decay != 0:
                    grad = grad + p * weight_decay
                _f.lerp_(exp_avg, grad, 1 - beta1)
                exp_inf.mul_(beta2)
                _f.copy_(exp_inf, lucid.maximum(exp_inf, grad.abs() + eps))
                bias_correction = 1 - beta1 ** _f.as_scalar_tensor(step_t)
                clr = lr / bias_correction
                _f.addcdiv_(p, exp_avg, exp_inf, -clr)
        return loss
