"""Adam and AdamW (amsgrad, weight_decay, decoupled weight decay, maximize) with torch's update rule.

The step count lives in state['step'] as a 0-d tensor and the bias corrections are computed from it
with tensor math (float64), so no host read happens inside the op-by-op step. The fused path
(foreach/fused, the default for CUDA parameters; _functional.fused_enabled) updates a group's
parameters in one multi-tensor kernel call (lucid._C._fused_adam_) with the same math; it reads
the step count on the host (a CPU 0-d tensor), as torch's foreach path does."""
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
            keys = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
            rest = group["params"]
            if _f.fused_enabled(group, rest):
                rest = self._fused_step(group, keys)
            for p, grad, state in self._params_with_grad(dict(group, params=rest), *keys):
                self._step_one(group, p, grad, state)
        return loss

    def _fused_step(self, group, keys):
        """The multi-tensor step of the group's fusable parameters (one lucid._C._fused_adam_
        call per device, dtype and step count; ops/optim_update.h has its math, the op-by-op
        path's of _step_one); returns the parameters left to the op-by-op path."""
        buckets, rest = {}, []
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                self._init_step(state)
                for key in keys:
                    state[key] = lucid.zeros_like(p)
            tensors = [p, p.grad] + [state[k] for k in keys]
            if not _f.fusable(tensors):
                rest.append(p)
                continue
            step_t = state["step"]
            step_t.add_(1)
            lists = buckets.setdefault((str(p.device), str(p.dtype), step_t.item()), [[] for _ in range(5)])
            for lst, t in zip(lists, tensors):
                lst.append(t)
        beta1, beta2 = group["betas"]
        for (_, _, step), lists in buckets.items():
            lucid._C._fused_adam_(*lists, lr=float(group["lr"]), beta1=float(beta1), beta2=float(beta2),
                                  eps=float(group["eps"]), weight_decay=float(group["weight_decay"]), step=step,
                                  amsgrad=bool(group["amsgrad"]), maximize=bool(group["maximize"]),
                                  decoupled=bool(group.get("decoupled_weight_decay", False)))
        return rest

    def _step_one(self, group, p, grad, state):
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        decoupled = group.get("decoupled_weight_decay", False)
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
        if group["amsgrad"]:
            max_sq = state["max_exp_avg_sq"]
            _f.copy_(max_sq, lucid.maximum(max_sq, exp_avg_sq))
            denom = max_sq.sqrt() / bias_correction2_sqrt + eps
        else:
            denom = exp_avg_sq.sqrt() / bias_correction2_sqrt + eps
        _f.addcdiv_(p, exp_avg, denom, -step_size)


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
