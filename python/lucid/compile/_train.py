"""Compiled training entry points built on CompiledModule: make_step (forward + loss + backward
as one executable per signature) and compiled_step (a cached one-call convenience over it).
The optimizer update joins the executable in compile_optimizer (_optim.py) and fused_step
(_fused.py)."""
import types
import weakref

from lucid._C import Tensor
from lucid.compile._compiled import CompiledModule

__all__ = ["make_step", "compiled_step"]


def make_step(model, loss_fn, *, dynamic=False, strict=False):
    """Returns `step(*args)` computing `loss_fn(model(args[0]), *args[1:])` (a tuple `args[0]` is
    unpacked as the model's inputs). Under grad mode the forward, the loss and the backward run as
    one executable per signature; the returned loss has a grad_fn, and `loss.backward()`
    accumulates the gradients into `.grad` exactly as eager would (so gradient accumulation over
    several steps works). `step.cache_info()`, `step.clear_cache()` as on CompiledModule."""
    if not callable(model) or not callable(loss_fn):
        raise TypeError("make_step: model and loss_fn must be callable")

    def step(*args):
        if not args:
            raise TypeError("make_step: step() needs the model's input as its first argument")
        inp = args[0]
        out = model(*inp) if type(inp) is tuple else model(inp)  # a namedtuple (PackedSequence) is one input
        return loss_fn(out, *args[1:])

    step.__name__ = f"step[{type(model).__name__}]"
    return CompiledModule(step, dynamic=dynamic, strict=strict, _step=True)  # watches the captured model


_steps = weakref.WeakKeyDictionary()  # model -> {loss_fn code object: compiled step}


def _cell(v):
    return (lambda: v).__closure__[0]


def compiled_step(model, x, loss_fn):
    """One training step's forward + backward: `loss = loss_fn(model(x))`, then `loss.backward()`
    (gradients accumulate into .grad); returns the loss, detached. Cached per (model, loss_fn's
    code): a fresh `lambda out: F.cross_entropy(out, y)` every call reuses the compiled step, and
    the tensors it reads through its closure or module globals (`y`) are passed as inputs, never
    frozen into the executable."""
    code = loss_fn.__code__
    cells = loss_fn.__closure__ or ()
    glb = loss_fn.__globals__
    gnames = tuple(n for n in code.co_names if isinstance(glb.get(n), Tensor))
    per_model = _steps.setdefault(model, {})
    key = (code, id(glb), loss_fn.__defaults__, gnames)
    step = per_model.get(key)
    if step is None:
        name, defaults, ncells = loss_fn.__name__, loss_fn.__defaults__, len(cells)

        def run(x, *values):  # runs only while tracing: later calls feed `values` to the executable
            g2 = dict(glb)
            g2.update(zip(gnames, values[ncells:]))
            f = types.FunctionType(code, g2, name, defaults, tuple(_cell(v) for v in values[:ncells]))
            return f(model(*x) if type(x) is tuple else model(x))

        run.__name__ = f"compiled_step[{type(model).__name__}]"
        per_model[key] = step = CompiledModule(run, _step=True)  # watches the captured model
    loss = step(x, *[c.cell_contents for c in cells], *[glb[n] for n in gnames])
    loss.backward()
    return loss.detach()
