"""RMSprop (centered, momentum, weight_decay, maximize) with torch's update rule."""
from lucid.optim.optimizer import Optimizer, _closure_loss, _use_grad
from lucid.optim import _functional as _f

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            weight_decay, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
            keys = ("square_avg",) + (("momentum_buffer",) if momentum > 0 else ()) + (("grad_avg",) if centered else ())
            for p, grad, state in self._params_with_grad(group, *keys):
                square_avg = state["square_avg"]
                state["step"].add_(1)
                if weight_decay != 0:
                    grad = grad + p * weight_decay
                square_avg.mul_(alpha)
                _f.addcmul_(square_avg, grad, grad, 1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"]
                    _f.lerp_(grad_avg, grad, 1 - alpha)
                    avg = (square_avg + (grad_avg * -1) * grad_avg).sqrt()
                else:
                    avg = square_avg.sqrt()
                avg = avg + eps
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum)
                    _f.addcdiv_(buf, grad, avg)
                    _f.add_(p, buf, -lr)
                else:
                    _f.addcdiv_(p, grad, avg, -lr)
        return loss
