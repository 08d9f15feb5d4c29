"""Adagrad (lr_decay, weight_decay, initial_accumulator_value, maximize) with torch's update rule."""
import lucid
from lucid.optim.optimizer import Optimizer, _closure_loss, _use_grad, _scalar_dtype
from lucid.optim import _functional as _f

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # torch creates the state eagerly in the constructor (and lazily, in step, for parameters that
        # add_param_group brought in later)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = lucid.full((), 0.0, dtype=_scalar_dtype())
        state["sum"] = lucid.full(tuple(p.shape), float(group["initial_accumulator_value"]), dtype=p.dtype,
                                  device=p.device)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if len(self.state[p]) == 0:
                    self._init_state(p, group)
                state = self.state[p]
                grad = p.grad if not maximize else -p.grad
                step_t, state_sum = state["step"], state["sum"]
                step_t.add_(1)
                if weight_decay != 0:
                    grad = grad + p * weight_decay
                clr = lr / (1 + (_f.as_scalar_tensor(step_t) - 1) * lr_decay)
                _f.addcmul_(state_sum, grad, grad, 1)
                std = state_sum.sqrt() + eps
                _f.addcdiv_(p, grad, std, -clr)
        return loss
