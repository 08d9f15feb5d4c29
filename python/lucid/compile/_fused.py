"""fused_step: forward + loss + backward + (optional) gradient-norm clipping + optimizer update
traced as one graph and run as one cached executable per signature.

The traced function is ordinary PyTorch-style code: the model's forward and the loss under grad
mode, `autograd.grad` of the loss (its VJPs, written with ops, are recorded), `p.grad = g`, then
the optimizer's own step() with tensor hyper-parameters (see _optim.py). Parameters, buffers and
optimizer state are bound state updated in place; the step's gradients are outputs, assigned
to `.grad` after each call (keep_grads). Random ops (dropout) draw fresh numbers every call.
"""
import lucid
from lucid import _C
from lucid.compile._compiled import CompiledModule
from lucid.compile._optim import CompiledOptimizer

__all__ = ["fused_step", "FusedStep"]


class FusedStep:
    """`step(*args)`: one training step, `loss_fn(model(args[0]), *args[1:])` (a tuple args[0]
    is unpacked as the model's inputs); returns the loss (detached)."""

    def __init__(self, model, loss_fn, optimizer, *, max_grad_norm=None, keep_grads=True, strict=False):
        if isinstance(optimizer, CompiledOptimizer):
            optimizer = optimizer.opt
        self.model, self.loss_fn = model, loss_fn
        self.max_grad_norm = max_grad_norm
        self.keep_grads = keep_grads
        self._copt = CompiledOptimizer(optimizer)  # hyper-parameter and structure bookkeeping
        self.optimizer = optimizer
        self._cm = CompiledModule(self._traced, strict=strict)
        if isinstance(model, lucid.nn.Module):
            self._cm._watch(model.modules())
            self._cm._refresh()

    def cache_info(self):
        return self._cm.cache_info()

    def clear_cache(self):
        self._cm.clear_cache()

    def _params(self):
        return self._copt._params()

    def __call__(self, *args):
        if not args:
            raise TypeError("fused_step: step() needs the model's input as its first argument")
        params = self._params()
        struct, (values, outcomes, names, baked) = self._copt._signature(params, grads_made=True)
        if struct not in self._copt._settled:
            loss = self._eager(args)
            if self._copt._signature(self._params(), grads_made=True)[0] == struct:
                self._copt._settled.add(struct)
            return loss
        n_tests = self._copt._n_tests()
        wrt = [p for p in params if p.requires_grad]
        _C._set_grads(wrt, None)  # last step's gradients go before this step's are made (set_to_none)
        with lucid.no_grad():
            out = self._cm(args, values, self._copt._signature_id(struct, outcomes, names, baked))
        if self._copt._n_tests() != n_tests:
            self._cm.clear_cache()
        if self.keep_grads:
            _C._set_grads(wrt, out, 1)
        return out[0]

    def _loss(self, args):
        inp = args[0]
        out = self.model(*inp) if isinstance(inp, tuple) else self.model(inp)
        return self.loss_fn(out, *args[1:])

    def _clip(self, grads):
        present = [g for g in grads if g is not None]
        if self.max_grad_norm is None or not present:
            return grads
        total = lucid.stack([(g.double() ** 2).sum() for g in present]).sum().sqrt()
        coef = (float(self.max_grad_norm) / (total + 1e-6)).clamp(max=1.0)
        return [None if g is None else g * coef.to(g.dtype) for g in grads]

    def _forward_backward(self, args):
        """Loss and (clipped) gradients of the parameters that require grad, assigned to .grad."""
        wrt = [p for p in self._params() if p.requires_grad]
        with lucid.enable_grad():
            loss = self._loss(args)
        grads = self._clip(list(lucid.autograd.grad(loss, wrt, allow_unused=True)))
        for p, g in zip(wrt, grads):
            p.grad = g
        return loss, wrt, grads

    def _eager(self, args):
        """The same step run eagerly (first steps, while the optimizer state is being created)."""
        loss, wrt, _ = self._forward_backward(args)
        self.optimizer.step()
        if not self.keep_grads:
            for p in wrt:
                p.grad = None
        return loss.detach()

    def _traced(self, args, values, sid):
        names, baked = self._copt._sigs[sid][2:]
        loss, _, grads = self._forward_backward(args)
        with lucid.no_grad(), self._copt._substituted(values, names, baked):
            type(self.optimizer).step(self.optimizer)
        return (loss.detach(), *grads)  # flat: the cached call returns a plain tuple


def fused_step(model, loss_fn, optimizer, *, max_grad_norm=None, keep_grads=True, strict=False):
    """Returns `step(*args)` running forward + loss + backward + clipping + optimizer update as one
    executable per signature (see FusedStep)."""
    return FusedStep(model, loss_fn, optimizer, max_grad_norm=max_grad_norm, keep_grads=keep_grads, strict=strict)
