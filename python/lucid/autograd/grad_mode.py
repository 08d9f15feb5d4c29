"""Grad-mode context managers and decorators, like torch.no_grad / enable_grad."""
import functools

from lucid import _C

is_grad_enabled = _C.is_grad_enabled


class _GradMode:
    _enabled = True

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    _enabled = False


class enable_grad(_GradMode):
    _enabled = True


class inference_mode(_GradMode):
    """torch.inference_mode(mode=True): lucid has no separate inference tensors, so it is no_grad
    (mode=False: grad mode left as it is). Usable as a context manager and as a decorator, with
    or without the call: @inference_mode and @inference_mode()."""

    def __new__(cls, mode=True):
        if callable(mode):  # @inference_mode without parentheses
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self._mode = bool(mode)

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        if self._mode:
            _C._set_grad_enabled(False)
        return self

    def __call__(self, fn):
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper


class set_grad_enabled:
    def __init__(self, mode: bool):
        self._prev = _C.is_grad_enabled()
        self._mode = bool(mode)
        _C._set_grad_enabled(self._mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False
