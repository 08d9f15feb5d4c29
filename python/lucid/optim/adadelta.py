"""Adadelta (rho, eps, lr, weight_decay, maximize) with torch's update rule."""
from lucid.optim.optimizer import Optimizer, _closure_loss, _use_grad
from lucid.optim import _functional as _f

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps = group["lr"], group["rho"], group["eps"]
            weight_decay = group["weight_decay"]
            for p, grad, state in self._params_with_grad(group, "square_avg", "acc_delta"):
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                state["step"].add_(1)
                if weight_decay != 0:
                    grad = grad + p * weight_decay
                square_avg.mul_(rho)
                _f.addcmul_(square_avg, grad, grad, 1 - rho)
                std = (square_avg + eps).sqrt()
                delta = (acc_delta + eps).sqrt() / std * grad
                acc_delta.mul_(rho)
                _f.addcmul_(acc_delta, delta, delta, 1 - rho)
                _f.add_(p, delta, -lr)
        return loss
