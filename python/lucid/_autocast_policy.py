"""Autocast policies for ops lucid writes as Python composites.

The engine's dispatch layer casts the inputs of its own ops by torch's autocast lists
(csrc/lucid/dispatch/autocast.cpp). A function written here in Python over several ops (cdist,
the margin losses, baddbmm...) is one op in torch's lists, so it gets its policy as a whole: its
floating inputs (not float64) on the autocast device type are cast, and its body runs with
autocast off for that device type, as torch runs an op's implementation below its autocast key.
Policies per device type: "lower" (the autocast dtype), "fp32", "promote" (the widest input).
"""
import functools

from lucid import _C

__all__ = ["autocast_policy", "cast_eligible"]


def _first_device_type(args):
    for a in args:
        if isinstance(a, _C.Tensor):
            return a.device.type
        if isinstance(a, (list, tuple)):
            d = _first_device_type(a)
            if d is not None:
                return d
    return None


def _eligible(t, dev):
    return isinstance(t, _C.Tensor) and t.is_floating_point() and t.dtype != _C.dtype.float64 and t.device.type == dev


def _widest(args, dev, acc=None):
    for a in args:
        if _eligible(a, dev):
            acc = a.dtype if acc is None else _C.promote_types(acc, a.dtype)
        elif isinstance(a, (list, tuple)):
            acc = _widest(a, dev, acc)
    return acc


def cast_eligible(a, dtype, dev):
    """a with its floating tensors (not float64) of device type dev cast to dtype, through lists,
    tuples and dicts: autocast's cast of an op's arguments (also torch.amp.custom_fwd's)."""
    if _eligible(a, dev):
        return a if a.dtype == dtype else _C.cast(a, dtype)
    if isinstance(a, (list, tuple)):
        return type(a)(cast_eligible(v, dtype, dev) for v in a)
    if isinstance(a, dict):
        return {k: cast_eligible(v, dtype, dev) for k, v in a.items()}
    return a


def autocast_policy(cpu=None, cuda=None):
    """Decorates a composite with its autocast policy on "cpu" and on "cuda" (None: no policy)."""
    policies = {"cpu": cpu, "cuda": cuda}

    def wrap(fn):
        @functools.wraps(fn)
        def with_policy(*args, **kwargs):
            if not (_C._autocast_enabled("cpu") or _C._autocast_enabled("cuda")):
                return fn(*args, **kwargs)
            dev = _first_device_type(args)
            p = policies.get(dev)
            if p is None or not _C._autocast_enabled(dev):
                return fn(*args, **kwargs)
            to = _C._autocast_dtype(dev) if p == "lower" else _C.dtype.float32 if p == "fp32" else _widest(args, dev)
            if to is not None:
                args, kwargs = cast_eligible(args, to, dev), cast_eligible(kwargs, to, dev)
            _C._autocast_set_enabled(dev, False)
            try:
                return fn(*args, **kwargs)
            finally:
                _C._autocast_set_enabled(dev, True)
        return with_policy
    return wrap
