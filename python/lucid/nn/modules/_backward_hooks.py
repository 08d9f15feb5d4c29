"""Module full backward hooks (register_full_backward_hook / register_full_backward_pre_hook),
built as torch's BackwardHook is: the module's tensor inputs and its tensor outputs each pass
through an identity autograd.Function. The backward of the outputs' identity sees the gradients
w.r.t. the outputs (grad_output: the pre-hooks run there and may replace it); the backward of
the inputs' identity sees the gradients w.r.t. the inputs (grad_input: the full hooks run there
with that grad_output and may replace grad_input). Non-tensor positions are None, as in torch.
"""
import warnings

from lucid._C import Tensor
from lucid.autograd.function import Function


class _Identity(Function):
    """Returns its tensors unchanged; backward hands their gradients to `side` (a callable)."""

    @staticmethod
    def forward(ctx, side, *tensors):
        ctx.side = side
        ctx.set_materialize_grads(False)  # the hooks see None where no gradient arrived, as torch's
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.side(grads))


def _pack(idx, values, n):
    res = [None] * n
    for i, v in zip(idx, values):
        res[i] = v
    return tuple(res)


class _BackwardHooks:
    """The backward hooks of one module call (the hook lists are taken at forward time)."""

    def __init__(self, module):
        self.module = module
        self.hooks = list(module._backward_hooks.values())
        self.pre_hooks = list(module._backward_pre_hooks.values())
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_idx = self.output_idx = None

    @staticmethod
    def _apply(side, args):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not any(args[i].requires_grad for i in idx):
            return args, None
        new = _Identity.apply(side, *[args[i] for i in idx])
        out = list(args)
        for i, v in zip(idx, new):
            out[i] = v
        return tuple(out), idx

    def wrap_inputs(self, args):
        res, self.input_idx = self._apply(self._input_side, args)
        self.n_inputs = len(args)
        return res

    def wrap_outputs(self, out):
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        res, self.output_idx = self._apply(self._output_side, outs)
        self.n_outputs = len(outs)
        return res[0] if single else res

    def _output_side(self, grads):
        self.grad_outputs = _pack(self.output_idx, grads, self.n_outputs)
        for hook in self.pre_hooks:
            r = hook(self.module, self.grad_outputs)
            if r is None:
                continue
            r = r if isinstance(r, tuple) else (r,)
            if len(r) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(r)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = r
        local = self.grad_outputs
        if self.input_idx is None:  # no input requires grad: the hooks fire here, with grad_input all None
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                          "outputs since no inputs require gradients.", stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                r = hook(self.module, grad_inputs, self.grad_outputs)
                if r is not None and not (isinstance(r, tuple) and all(g is None for g in r)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_idx)

    def _input_side(self, grads):
        if self.grad_outputs is None:
            return grads
        res = _pack(self.input_idx, grads, self.n_inputs)
        for hook in self.hooks:
            r = hook(self.module, res, self.grad_outputs)
            if r is None:
                continue
            r = r if isinstance(r, tuple) else (r,)
            if len(r) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(r)}, but expected {len(res)}")
            res = r
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_idx)
