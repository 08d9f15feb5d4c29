"""Tensor.register_hook with torch's contract (returns a handle whose remove() unregisters the
hook) and what lucid.compile needs to stay correct around tensor hooks:

- a hook that runs inside a trace (a hook on an intermediate tensor, or on a parameter, during
  the traced backward of compile/make_step/fused_step) tells the tracer, which makes that
  signature run eagerly with the reason: a cached call would never run the hook's Python code
  (its side effects, or its effect on the gradient a second time in the engine);
- registering or removing a hook bumps the compile epoch, and the number of live hooks on each
  parameter is part of a watched module's Python state (compile/_compiled.py), so a hook added
  to a parameter after compiling re-keys the call and is honoured (by falling back) instead of
  being skipped by the cached executable.
"""
import contextlib
import threading

from lucid import _C
from lucid._C import Tensor

_register = Tensor.register_hook
_local = threading.local()


@contextlib.contextmanager
def speculative_backward():
    """A backward run only to be recorded (compile's joint graph of a forward, whose real
    backward runs later): hooks that would run are noted as a fallback reason and skipped, so
    their side effects happen once per real backward, not once more at the trace."""
    prev = getattr(_local, "speculative", False)
    _local.speculative = True
    try:
        yield
    finally:
        _local.speculative = prev


class RemovableHandle:
    def __init__(self, tensor):
        # the tensor's attribute dict, not the tensor: the tensor's hook holds this handle, and
        # a reference back to the tensor would be a cycle through C++ that never gets freed
        self._attrs = tensor.__dict__
        self.live = True

    def remove(self):
        if self.live:
            self.live = False
            self._attrs["_n_hooks"] -= 1
            _C._compile_epoch_bump()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_hook(self, hook):
    """hook(grad) -> Tensor or None, run when the gradient of this tensor is computed; a returned
    tensor replaces the gradient. Returns a handle with remove()."""
    if not callable(hook):
        raise TypeError(f"register_hook: hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(self)

    def run(grad):
        if not handle.live:
            return None
        _C._note_untraced_callback("a hook registered with Tensor.register_hook")
        if getattr(_local, "speculative", False):
            return None
        return hook(grad)

    _register(self, run)
    d = self.__dict__
    d["_n_hooks"] = d.get("_n_hooks", 0) + 1
    _C._compile_epoch_bump()
    return handle


def live_hooks(t):
    """How many hooks registered through register_hook are live on tensor t."""
    return t.__dict__.get("_n_hooks", 0)


Tensor.register_hook = register_hook
