"""copy.deepcopy and pickle for the engine's objects: lucid.Tensor (torch's semantics) and the
engine's functions, so checkpoints held in memory (`copy.deepcopy(model.state_dict())`), deep-copied
modules (TransformerEncoder copies its layer, which holds `F.gelu`), DataLoader workers and
multiprocessing queues can carry them.

An engine function (a nanobind `nb_func` such as lucid._C.gelu, which F.gelu is) pickles and
deep-copies by reference, as Python functions do: by module and name.

A tensor pickles as its dtype, shape, requires_grad, a contiguous host copy of its elements (a
NumPy array; bfloat16, which NumPy lacks, travels as float32, which holds every bfloat16 value
exactly) and, for a tensor on a device other than the CPU, that device, where it unpickles (as
torch's). Storage sharing between distinct tensors is not preserved: a view unpickles as a
contiguous tensor with the view's values. As in torch, deepcopy keeps requires_grad and deep-copies
`.grad`, pickling drops `.grad`, and only graph leaves can be deep-copied.
"""
import copy
import copyreg
import importlib

from lucid import _C
from lucid._C import Tensor

__all__ = []


def _host_array(t):
    t = t.detach()
    if t.dtype == _C.dtype.bfloat16:
        t = _C.cast(t, _C.dtype.float32)
    return t.cpu().contiguous().numpy().copy()


def _rebuild(array, dtype_name, requires_grad, device=None):
    """Unpickling entry point (kept stable: pickles name it by module path; `device` is absent from
    pickles of CPU tensors and of those written before tensors had devices)."""
    t = _C.from_numpy(array).clone()
    dtype = getattr(_C.dtype, dtype_name)
    if t.dtype != dtype:
        t = _C.cast(t, dtype)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_ex(self, protocol):
    _C._host_read(self, "pickle")
    args = (_host_array(self), self.dtype.name, self.requires_grad)
    return (_rebuild, args if self.device.type == "cpu" else args + (str(self.device),))


def _deepcopy(self, memo):
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol "
                           "at the moment (this tensor has grad_fn "
                           f"{self.grad_fn!r}; deep-copy its .detach() instead)")
    if id(self) in memo:
        return memo[id(self)]
    if type(self) is Tensor:
        new = self.detach().clone()
    else:
        new = type(self).__new__(type(self))
        Tensor.__init__(new, self.detach().clone())
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
    if self.requires_grad:
        new.requires_grad_(True)
    memo[id(self)] = new
    if self.grad is not None:
        new.grad = _deepcopy(self.grad, memo)
    return new


def _resolve_function(module, name):
    """Unpickling entry point for engine functions."""
    return getattr(importlib.import_module(module), name)


def _reduce_function(fn):
    module, name = getattr(fn, "__module__", None), getattr(fn, "__name__", None)
    try:
        found = _resolve_function(module, name) is fn
    except (ImportError, AttributeError, TypeError):
        found = False
    if not found:
        raise TypeError(f"cannot pickle engine function {fn!r}: it is not reachable as {module}.{name}")
    return (_resolve_function, (module, name))


copyreg.pickle(type(_C.gelu), _reduce_function)
Tensor.__reduce_ex__ = _reduce_ex
Tensor.__deepcopy__ = _deepcopy
