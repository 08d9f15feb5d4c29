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
        if not isinstance(optimizer, lucid.optim.Optimizer):
            raise TypeError(f"fused_step: optimizer must be a lucid.optim.Optimizer, got {type(optimizer).__name__}")
        for what, f in (("model", model), ("loss_fn", loss_fn)):
            if not callable(f):
                raise TypeError(f"fused_step: {what} must be callable (an nn.Module or a function), "
                                f"got {type(f).__name__}")
        self.model, self.loss_fn = model, loss_fn
        self.max_grad_norm = max_grad_norm
        self.keep_grads = keep_grads
        self._copt = CompiledOptimizer(optimizer)  # hyper-parameter and structure bookkeeping
        self.optimizer = optimizer
        self._cm = CompiledModule(self._traced, strict=strict)
        self._extra_key, self._extra_candidates = None, []
        if isinstance(model, lucid.nn.Module):
            self._cm._watch(model.modules())
            self._cm._refresh()

    def cache_info(self):
        return self._cm.cache_info()

    def clear_cache(self):
        self._cm.clear_cache()

    def _params(self):
        return self._copt._params()

    def _extra_params(self):
        """(the model's parameters the optimizer does not hold that require grad, the key of that
        choice): eager backward() accumulates into their .grad, so the step computes their
        gradients too. The candidate list is rebuilt only when a module changed (the compile
        epoch) or the optimizer's parameters did."""
        epoch, n = _C._compile_epoch(), sum(len(g["params"]) for g in self.optimizer.param_groups)
        if self._extra_key != (epoch, n):
            held = {id(p) for p in self._params()}
            model = self.model if isinstance(self.model, lucid.nn.Module) else None
            self._extra_candidates = [] if model is None else [p for p in model.parameters() if id(p) not in held]
            self._extra_key = (epoch, n)
        flags = tuple(p.requires_grad for p in self._extra_candidates)
        return [p for p, f in zip(self._extra_candidates, flags) if f], flags

    def __call__(self, *args):
        if not args:
            raise TypeError("fused_step: step() needs the model's input as its first argument")
        params = self._params()
        extra, extra_key = self._extra_params()
        struct, (values, outcomes, names, baked) = self._copt._signature(params, grads_made=True)
        # zero_grad(set_to_none=True) on the optimizer's parameters, frozen ones included (a stale
        # .grad would otherwise keep moving a parameter after requires_grad_(False)); this also
        # frees last step's gradients before this step's are made.
        _C._set_grads(params, None)
        if struct not in self._copt._settled:
            loss = self._eager(args, extra)
            if self._copt._signature(self._params(), grads_made=True)[0] == struct:
                self._copt._settled.add(struct)
            return loss
        n_tests = self._copt._n_tests()
        wrt = [p for p in params if p.requires_grad]
        sid = self._copt._signature_id((struct, extra_key), outcomes, names, baked)
        with lucid.no_grad():
            out = self._cm(args, values, sid)
        if self._copt._n_tests() != n_tests:
            self._cm.clear_cache()
        if self.keep_grads:
            _C._set_grads(wrt, out[:1 + len(wrt)] if extra else out, 1)
        if extra:
            _accumulate(extra, out[1 + len(wrt):])
        return out[0]

    def _loss(self, args):
        inp = args[0]
        out = self.model(*inp) if type(inp) is tuple else self.model(inp)  # a namedtuple (PackedSequence) is one input
        loss = self.loss_fn(out, *args[1:])
        if not isinstance(loss, lucid.Tensor) or loss.numel() != 1 or not loss.dtype.is_floating_point:
            got = (f"a tensor of shape {tuple(loss.shape)} and dtype {loss.dtype}" if isinstance(loss, lucid.Tensor)
                   else f"a {type(loss).__name__}")
            raise TypeError(f"fused_step: loss_fn must return a floating-point tensor with one element "
                            f"(the loss), got {got}")
        return loss

    def _clip(self, grads):
        present = [g for g in grads if g is not None]
        if self.max_grad_norm is None or not present:
            return grads
        total = lucid.stack([(g.double() ** 2).sum() for g in present]).sum().sqrt()
        coef = (float(self.max_grad_norm) / (total + 1e-6)).clamp(max=1.0)
        return [None if g is None else g * coef.to(g.dtype) for g in grads]

    def _forward_backward(self, args, extra):
        """Loss and (clipped) gradients of the optimizer's parameters that require grad, assigned
        to .grad, and the gradients of the `extra` parameters (see _extra_params; not clipped)."""
        wrt = [p for p in self._params() if p.requires_grad]
        with lucid.enable_grad():
            loss = self._loss(args)
        both = list(lucid.autograd.grad(loss, wrt + extra, allow_unused=True))
        grads = self._clip(both[:len(wrt)])
        for p, g in zip(wrt, grads):
            p.grad = g
        return loss, wrt, grads, both[len(wrt):]

    def _eager(self, args, extra):
        """The same step run eagerly (first steps, while the optimizer state is being created)."""
        loss, wrt, _, extra_grads = self._forward_backward(args, extra)
        self.optimizer.step()
        if not self.keep_grads:
            for p in wrt:
                p.grad = None
        _accumulate(extra, extra_grads)
        return loss.detach()

    def _traced(self, args, values, sid):
        names, baked = self._copt._sigs[sid][2:]
        loss, _, grads, extra_grads = self._forward_backward(args, self._extra_params()[0])
        with lucid.no_grad(), self._copt._substituted(values, names, baked):
            type(self.optimizer).step(self.optimizer)
        return (loss.detach(), *grads, *extra_grads)  # flat: the cached call returns a plain tuple


def _accumulate(params, grads):
    """.grad += g, as eager backward() does for parameters no optimizer clears."""
    with lucid.no_grad():
        for p, g in zip(params, grads):
            if g is not None:
                p.grad = g if p.grad is None else p.grad + g


def fused_step(model, loss_fn, optimizer, *, max_grad_norm=None, keep_grads=True, strict=False):
    """Returns `step(*args)` running forward + loss + backward + clipping + optimizer update as one
    executable per signature (see FusedStep)."""
    return FusedStep(model, loss_fn, optimizer, max_grad_norm=max_grad_norm, keep_grads=keep_grads, strict=strict)
