"""SGD with momentum, dampening, nesterov, weight_decay and maximize (torch's update rule). The
fused path (foreach/fused, the default for CUDA parameters; _functional.fused_enabled) updates a
group's parameters in one multi-tensor kernel call (lucid._C._fused_sgd_) with the same math."""
from lucid.optim.optimizer import Optimizer, required, _use_grad
from lucid.optim import _functional as _f
import lucid

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    @_use_grad
    def step(self, closure=None):
        loss = None
        if closure is not None:
            from lucid import enable_grad
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = group["params"]
            if _f.fused_enabled(group, params):
                params = self._fused_step(group)
            for p in params:
                if p.grad is not None:
                    self._step_one(group, p)
        return loss

    def _fused_step(self, group):
        """The multi-tensor step of the group's fusable parameters (one lucid._C._fused_sgd_ call
        per device, dtype and whether the momentum buffers are new; ops/optim_update.h has its
        math, the op-by-op path's of _step_one); returns the parameters left to that path."""
        momentum = group["momentum"]
        buckets, rest = {}, []
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            buf = state.get("momentum_buffer") if momentum != 0 else None
            first = momentum != 0 and buf is None
            tensors = [p, p.grad] + ([buf] if buf is not None else [])
            if not _f.fusable(tensors):
                rest.append(p)
                continue
            if first:
                buf = lucid.empty_like(p)  # the kernel writes the (decayed) gradient into it
                state["momentum_buffer"] = buf
            lists = buckets.setdefault((str(p.device), str(p.dtype), first), [[], [], []])
            for lst, t in zip(lists, [p, p.grad] + ([buf] if momentum != 0 else [])):
                lst.append(t)
        for (_, _, first), lists in buckets.items():
            lucid._C._fused_sgd_(*lists, lr=float(group["lr"]), momentum=float(momentum),
                                 dampening=float(group["dampening"]), weight_decay=float(group["weight_decay"]),
                                 nesterov=bool(group["nesterov"]), maximize=bool(group["maximize"]), first=first)
        return rest

    def _step_one(self, group, p):
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        grad = p.grad if not maximize else -p.grad
        if weight_decay != 0:
            grad = grad + p * weight_decay
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = grad.detach().clone()
                state["momentum_buffer"] = buf
            else:
                buf.mul_(momentum)
                _f.add_(buf, grad, 1 - dampening)
            grad = grad + buf * momentum if nesterov else buf
        _f.add_(p, grad, -lr)
