"""lucid.nn.Parameter: a Tensor subclass that Modules register as a learnable parameter.

It aliases the storage of the tensor it is built from (like torch, `Parameter(t)` shares t's data)
but is a fresh autograd leaf with requires_grad=True by default.
"""
import copy

from lucid import _C
from lucid._C import Tensor


class Parameter(Tensor):
    """A Tensor that is registered automatically when assigned as a Module attribute."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C.empty((0,), None)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: argument 'data' expected a Tensor, got {type(data).__name__}")
        Tensor.__init__(self, data.detach())
        self.requires_grad_(requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __str__(self):
        return self.__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        if self.grad is not None:
            result.grad = copy.deepcopy(self.grad, memo)
        return result

    def __reduce_ex__(self, proto):
        # The data travels as a plain Tensor (lucid._tensor_pickle); the class and requires_grad here.
        return (_rebuild_parameter, (type(self), self.detach(), self.requires_grad))


def _rebuild_parameter(cls, data, requires_grad):
    """Unpickling entry point for Parameter (and subclasses)."""
    return cls(data, requires_grad)


class Buffer(Tensor):
    """Marker used by `Module.__setattr__` (like torch.nn.Buffer): assigning `module.x = Buffer(t)`
    registers `t` as a buffer."""

    def __init__(self, data, persistent=True):
        Tensor.__init__(self, data.detach())
        self.persistent = persistent


def is_parameter(x):
    return isinstance(x, Parameter)
