"""lucid.autograd.Function: custom differentiable operations with torch.autograd.Function's API.

    class Clamp(Function):
        @staticmethod
        def forward(ctx, x, lo, hi):
            ctx.save_for_backward(x)
            return x.clamp(lo, hi)

        @staticmethod
        def backward(ctx, g):
            return g, None, None   # straight-through

    y = Clamp.apply(x, -1.0, 1.0)

`forward` runs under no_grad on ordinary lucid ops (so lucid.compile traces it like any other
code); when an input requires grad, `apply` gives the outputs one autograd node (a C++
FunctionNode, see csrc/lucid/autograd/function_node.h) whose backward calls `backward` with one
gradient per output and takes one gradient (or None) per input. Tensors passed to
`ctx.save_for_backward` are saved with their versions: an in-place write to one of them before
backward raises, as for the built-in ops. `backward` runs under grad mode when the engine builds
a higher-order graph (create_graph=True), so a backward written with lucid ops differentiates
again; `once_differentiable` marks one that can't. The newer style (forward without ctx plus a
`setup_context(ctx, inputs, output)` staticmethod) works too.
"""
import functools
import inspect

import lucid
from lucid import _C
from lucid._C import Tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The `ctx` of forward/backward. Attributes set on it in forward are readable in backward."""

    def __init__(self):
        self._to_save = ()
        self._saved = None           # set while backward runs: the unpacked saved tensors
        self._non_differentiable = ()
        self._dirty = ()
        self._materialize_grads = True
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save tensors or None, got {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        raise NotImplementedError("save_for_forward is not implemented in lucid (forward-mode AD is not built)")

    @property
    def saved_tensors(self):
        if self._saved is None:
            raise RuntimeError("saved_tensors can only be read inside backward (use save_for_backward in forward)")
        return self._saved

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def set_materialize_grads(self, value):
        self._materialize_grads = bool(value)


def _has_setup_context(cls):
    return cls.setup_context is not Function.setup_context


def _in(t, seq):
    return any(t is s for s in seq)


def _expandable(shape, to):
    """Whether `shape` broadcasts to `to` (a gradient of shape `to` is summed down to `shape`)."""
    if len(shape) > len(to):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(to)))


class Function:
    """Subclass with static `forward(ctx, *args, **kwargs)` and `backward(ctx, *grads)` and call
    `YourFunction.apply(*args, **kwargs)` (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__}: autograd.Function is not instantiated; "
                           f"call {type(self).__name__}.apply(...)")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not overridden")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("forward-mode AD (jvp) is not implemented in lucid")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        setup = _has_setup_context(cls)
        if setup:
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        grad_on = lucid.is_grad_enabled()
        ctx.needs_input_grad = tuple(grad_on and isinstance(a, Tensor) and a.requires_grad for a in args)
        with lucid.no_grad():
            if setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        if not any(ctx.needs_input_grad):
            return out
        return _attach(cls, ctx, args, out)


def _attach(cls, ctx, args, out):
    """Gives forward's tensor outputs one FunctionNode whose backward calls cls.backward."""
    single = not isinstance(out, tuple)
    outs = [out] if single else list(out)
    for d in ctx._dirty:
        if not _in(d, args):
            raise RuntimeError(f"{cls.__name__}: mark_dirty was given a tensor that is not an input of forward")
        if d.requires_grad and d.is_leaf:
            raise RuntimeError(f"{cls.__name__}: a leaf tensor that requires grad was modified in place in forward "
                               "(mark_dirty); wrap it in lucid.no_grad() or clone it first")
        if not _in(d, outs):
            raise RuntimeError(f"{cls.__name__}: a tensor marked dirty must be returned by forward")
    # An input returned as-is (not modified in place) becomes a new tensor sharing its memory,
    # so the input keeps its own history (as torch's view_as of it).
    orig = outs
    outs = [o.detach() if isinstance(o, Tensor) and _in(o, args) and not _in(o, ctx._dirty) else o for o in orig]
    diff = [isinstance(o, Tensor) and o.dtype.is_floating_point and not _in(o, ctx._non_differentiable) for o in orig]

    def as_output(t):  # a saved output is saved as the tensor the caller gets
        return next((n for o, n in zip(orig, outs) if t is o), t)

    saved = [as_output(t) for t in ctx._to_save]
    metas = [(tuple(o.shape), o.dtype, o.device) if isinstance(o, Tensor) else None for o in outs]
    n_in = len(args)
    tensor_in = [isinstance(a, Tensor) for a in args]
    in_meta = [(tuple(a.shape), a.dtype) if isinstance(a, Tensor) else None for a in args]
    name = cls.__name__
    ctx._to_save = ()

    user_backward = cls.vjp if cls.backward is Function.backward else cls.backward  # torch's alias

    def backward(grads, saved_now):
        if ctx._materialize_grads:
            grads = [lucid.zeros(m[0], dtype=m[1], device=m[2]) if g is None and m is not None else g
                     for g, m in zip(grads, metas)]
        ctx._saved = tuple(saved_now)
        try:
            r = user_backward(ctx, *grads)
        finally:
            ctx._saved = None
        r = r if isinstance(r, tuple) else (r,)
        if len(r) < n_in or any(g is not None for g in r[n_in:]):
            raise RuntimeError(f"function {name}Backward returned an incorrect number of gradients "
                               f"(expected {n_in}, got {len(r)})")
        out = []
        for i, g in enumerate(r[:n_in]):
            if g is None:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                raise TypeError(f"function {name}Backward returned a gradient of type {type(g).__name__} at "
                                f"index {i}; expected a Tensor or None")
            if not tensor_in[i]:
                raise RuntimeError(f"function {name}Backward returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Tensor")
            shape = in_meta[i][0]
            if tuple(g.shape) != shape and not _expandable(shape, tuple(g.shape)):
                raise RuntimeError(f"Function {name}Backward returned an invalid gradient at index {i} - got "
                                   f"{list(g.shape)} but expected shape compatible with {list(shape)}")
            out.append(g)
        return out

    node_outs = [o if isinstance(o, Tensor) else None for o in outs]
    _C._function_node(name, [a if isinstance(a, Tensor) else None for a in args], node_outs, diff, saved, backward)
    return outs[0] if single else tuple(outs)


def once_differentiable(fn):
    """Marks a backward that is not itself differentiable: it runs under no_grad, and a double
    backward through its results raises instead of silently giving wrong gradients."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with lucid.no_grad():
            outputs = fn(ctx, *args)
        if not lucid.is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = [outputs] if single else list(outputs)
        outs = [o.detach() if isinstance(o, Tensor) else o for o in outs]

        def fail(grads, saved):
            raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")

        _C._function_node("DelayedError", [], [o if isinstance(o, Tensor) else None for o in outs],
                          [True] * len(outs), [], fail)
        return outs[0] if single else tuple(outs)

    return wrapper
