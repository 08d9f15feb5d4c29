"""lucid.autocast: torch.autocast's automatic mixed precision, as a context manager and decorator.

Inside `with lucid.autocast("cpu"):` matmul, linear, conv and attention run in bfloat16 (float16
with dtype=lucid.float16; on "cuda" float16 by default), losses and linear algebra in float32, and
cat in the widest of its inputs: torch's autocast op lists, applied by the engine's dispatch layer
(csrc/lucid/dispatch/autocast.{h,cpp} holds the lists and the semantics). This module keeps
torch's Python surface: the context manager with its nesting and cast cache, and the state
functions (is_autocast_enabled, get_autocast_dtype, ...). A compiled call keys on the autocast
state, so lucid.compile traces a function again when it is called under another one.
"""
import functools
import warnings

import lucid
from lucid import _C
from lucid._autocast_policy import cast_eligible

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
           "set_autocast_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype",
           "set_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "clear_autocast_cache",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "autocast_increment_nesting",
           "autocast_decrement_nesting", "custom_fwd", "custom_bwd"]

_DEVICE_TYPES = ("cpu", "cuda")


def _device_type(device_type, what):
    if not isinstance(device_type, str):
        raise ValueError(f"{what}: expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"{what}: unsupported autocast device_type '{device_type}'; expected one of "
                           + ", ".join(repr(d) for d in _DEVICE_TYPES))
    return device_type


def _dtype(dtype, device_type, what):
    if not isinstance(dtype, lucid.dtype):
        raise TypeError(f"{what}: expected `dtype` to be a lucid.dtype, got `{type(dtype).__name__}`")
    if dtype not in (lucid.bfloat16, lucid.float16):
        raise ValueError(f"{what}: dtype {dtype} is not supported for autocast on {device_type}; "
                         "expected lucid.bfloat16 or lucid.float16")
    return dtype


def is_autocast_available(device_type):
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type=None):
    """torch.is_autocast_enabled: without an argument, the CUDA state (torch's legacy form)."""
    return _C._autocast_enabled(_device_type("cuda" if device_type is None else device_type, "is_autocast_enabled"))


def set_autocast_enabled(device_type, enabled=None):
    """set_autocast_enabled(device_type, enabled), or torch's legacy set_autocast_enabled(enabled) for CUDA."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _C._autocast_set_enabled(_device_type(device_type, "set_autocast_enabled"), bool(enabled))


def get_autocast_dtype(device_type):
    return _C._autocast_dtype(_device_type(device_type, "get_autocast_dtype"))


def set_autocast_dtype(device_type, dtype):
    device_type = _device_type(device_type, "set_autocast_dtype")
    _C._autocast_set_dtype(device_type, _dtype(dtype, device_type, "set_autocast_dtype"))


def is_autocast_cpu_enabled():
    return _C._autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _C._autocast_set_enabled("cpu", bool(enabled))


def get_autocast_cpu_dtype():
    return _C._autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return _C._autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    set_autocast_dtype("cuda", dtype)


def clear_autocast_cache():
    _C._autocast_clear_cache()


def is_autocast_cache_enabled():
    return _C._autocast_cache_enabled()


def set_autocast_cache_enabled(enabled):
    _C._autocast_set_cache_enabled(bool(enabled))


def autocast_increment_nesting():
    return _C._autocast_increment_nesting()


def autocast_decrement_nesting():
    return _C._autocast_decrement_nesting()


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None).

    device_type is "cpu" or "cuda"; dtype defaults to the device type's autocast dtype
    (bfloat16 on the CPU, float16 on CUDA) and must be bfloat16 or float16. enabled=False turns
    autocast off inside the region (also inside an enclosing autocast). cache_enabled keeps the
    casts of parameters for the region (the default: is_autocast_cache_enabled()). Nestable, and
    usable as a decorator.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device = _device_type(device_type, "autocast")
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else _dtype(dtype, self.device, "autocast")
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: expected `enabled` to be a bool, got `{type(enabled).__name__}`")
        self._enabled = enabled
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        if self.device == "cuda" and enabled and not lucid.cuda.is_available():
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
            self._enabled = False

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = _C._autocast_enabled(self.device)
        self.prev_fastdtype = _C._autocast_dtype(self.device)
        _C._autocast_set_enabled(self.device, self._enabled)
        _C._autocast_set_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        autocast_decrement_nesting()  # clears the cast cache when the outermost region ends
        _C._autocast_set_enabled(self.device, self.prev)
        _C._autocast_set_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast

    def __repr__(self):
        return f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, enabled={self._enabled})"


def _state():
    """The autocast state a trace is made under: {device_type: dtype name} of the enabled ones."""
    return {d: str(_C._autocast_dtype(d)).replace("lucid.", "") for d in _DEVICE_TYPES if _C._autocast_enabled(d)}


class _restored:
    """Sets the autocast state saved by _state() for a scope (the artifact loader keys saved calls with it)."""

    def __init__(self, state):
        self.state = state or {}

    def __enter__(self):
        self.prev = {d: (_C._autocast_enabled(d), _C._autocast_dtype(d)) for d in _DEVICE_TYPES}
        for d in _DEVICE_TYPES:
            _C._autocast_set_enabled(d, d in self.state)
            if d in self.state:
                _C._autocast_set_dtype(d, getattr(lucid, self.state[d]))

    def __exit__(self, *exc):
        for d, (on, dt) in self.prev.items():
            _C._autocast_set_enabled(d, on)
            _C._autocast_set_dtype(d, dt)
        return False


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """torch.amp.custom_fwd for a custom autograd Function's forward: with cast_inputs, the
    forward runs with autocast off and its floating inputs cast to cast_inputs while autocast is on."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    device_type = _device_type(device_type, "custom_fwd")

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        on = _C._autocast_enabled(device_type)
        args[0]._fwd_used_autocast = on
        args[0]._dtype = _C._autocast_dtype(device_type)
        if cast_inputs is None or not on:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*cast_eligible(args, cast_inputs, device_type), **cast_eligible(kwargs, cast_inputs, device_type))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """torch.amp.custom_bwd: the backward runs under the autocast state its forward saw."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    device_type = _device_type(device_type, "custom_bwd")

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=getattr(ctx, "_fwd_used_autocast", False),
                      dtype=getattr(ctx, "_dtype", get_autocast_dtype(device_type))):
            return bwd(*args, **kwargs)
    return decorate_bwd
