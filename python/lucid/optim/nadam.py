"""NAdam (momentum_decay, decoupled_weight_decay) with torch's update rule; mu_product is a 0-d
float tensor in state, like torch."""
import lucid
from lucid.optim.optimizer import Optimizer, _closure_loss, _use_grad, _scalar_dtype
from lucid.optim.adam import _check
from lucid.optim import _functional as _f

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            momentum_decay, decoupled, maximize = group["momentum_decay"], group["decoupled_weight_decay"], \
                group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    self._init_step(state)
                    state["mu_product"] = lucid.full((), 1.0, dtype=_scalar_dtype())
                    state["exp_avg"] = _f.zeros_like(p)
                    state["exp_avg_sq"] = _f.zeros_like(p)
                grad = p.grad if not maximize else -p.grad
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                mu_product, step_t = state["mu_product"], state["step"]
                step_t.add_(1)
                step = _f.as_scalar_tensor(step_t)
                bias_correction2 = 1 - beta2 ** step
                if weight_decay != 0:
                    if decoupled:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad + p * weight_decay
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product.mul_(mu)
                _f.lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq.mul_(beta2)
                _f.addcmul_(exp_avg_sq, grad, grad, 1 - beta2)
                denom = (exp_avg_sq / bias_correction2).sqrt() + eps
                mp = _f.as_scalar_tensor(mu_product)
                mu_product_next = mp * mu_next
                _f.addcdiv_(p, grad, denom, (-lr * (1.0 - mu)) / (1.0 - mp))
                _f.addcdiv_(p, exp_avg, denom, (-lr * mu_next) / (1.0 - mu_product_next))
        return loss
