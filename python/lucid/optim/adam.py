"""Adam and AdamW (amsgrad, weight_decay, decoupled weight decay, maximize) with torch's update rule.

The step count lives in state['step'] as a 0-d tensor and the bias corrections are computed from it
with tensor math (float64), so no host read happens inside step()."""
from lucid.optim.optimizer import Optimizer, _closure_loss, _use_grad
from lucid.optim import _functional as _f
import lucid

__all__ = ["Adam", "AdamW"]


def _check(lr, betas, eps, weight_decay):
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            amsgrad = group["amsgrad"]
            decoupled = group.get("decoupled_weight_decay", False)
            keys = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())
            for p, grad, state in self._params_with_grad(group, *keys):
                exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
                step_t.add_(1)
                if weight_decay != 0:
                    if decoupled:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad + p * weight_decay
                _f.lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq.mul_(beta2)
                _f.addcmul_(exp_avg_sq, grad, grad, 1 - beta2)
                step = _f.as_scalar_tensor(step_t)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2.sqrt()
                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]
                    _f.copy_(max_sq, lucid.maximum(max_sq, exp_avg_sq))
                    denom = max_sq.sqrt() / bias_correction2_sqrt + eps
                else:
                    denom = exp_avg_sq.sqrt() / bias_correction2_sqrt + eps
                _f.addcdiv_(p, exp_avg, denom, -step_size)
        return loss


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
