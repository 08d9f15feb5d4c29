"""lucid.device: a device object shaped like torch.device, and the device argument parser.

`lucid.device("cpu")`, `lucid.device("cuda", 0)`, `lucid.device("cuda:1")`, `lucid.device(0)` (cuda:0)
build a small immutable, hashable, picklable value with `.type`, `.index` and torch's
`str()`/`repr()`. A device can always be *described*; handing one to an op, a factory or `.to()`
needs a backend and a device for it: a CPU-only build raises NotImplementedError ("no CUDA
backend"), a CUDA build without a GPU RuntimeError ("no CUDA device is available"), cuda:N past the
last GPU RuntimeError ("invalid device ordinal"). MPS is never built.

As a context manager (`with lucid.device("cuda"):`), a device is the factory device of its block:
factories without a device= argument (zeros, randn, arange...) create their tensors there, as
torch's device context manager; `set_default_device` sets it until changed.

One deliberate difference from torch: a device compares equal to its string form
(`t.device == "cpu"` is True, as it was when `Tensor.device` was a string), where
`torch.device("cpu") == "cpu"` is False.
"""
import builtins
import threading

from lucid import _C

__all__ = ["device", "set_default_device", "get_default_device"]

_TYPES = ("cpu", "cuda", "mps")


class device:  # noqa: N801  (torch's name)
    """A device description: type ('cpu', 'cuda', 'mps') and an optional index."""

    __slots__ = ("_type", "_index")

    def __init__(self, type, index=None):  # noqa: A002  (torch's argument name)
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device: an index cannot be given together with a device object")
            type, index = type.type, type.index
        elif isinstance(type, builtins.int) and not isinstance(type, builtins.bool):
            if index is not None:
                raise TypeError("device: an integer device cannot be given together with an index")
            if type < 0:
                raise RuntimeError(f"device: index must not be negative, got {type}")
            type, index = "cuda", type  # torch.device(0) is cuda:0
        elif not isinstance(type, str):
            raise TypeError("device: argument 'type' expected a str or lucid.device, got "
                            f"{builtins.type(type).__name__}")
        else:
            type, parsed = _split(type)
            if parsed is not None:
                if index is not None:
                    raise RuntimeError(f"device: type (string) must not include an index because index was passed "
                                       f"explicitly: {type}:{parsed}")
                index = parsed
        if index is not None:
            if isinstance(index, builtins.bool) or not isinstance(index, builtins.int):
                raise TypeError(f"device: argument 'index' expected an int, got {builtins.type(index).__name__}")
            if index < 0:
                raise RuntimeError(f"device: index must not be negative, got {index}")
        object.__setattr__(self, "_type", type)
        object.__setattr__(self, "_index", index)

    @property
    def type(self):  # noqa: A003
        return self._type

    @property
    def index(self):
        return self._index

    def __setattr__(self, name, value):
        raise AttributeError("lucid.device is immutable")

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (TypeError, ValueError, RuntimeError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self._type == other._type and self._index == other._index

    def __hash__(self):
        return hash((self._type, self._index))

    def __reduce__(self):
        return (device, (self._type, self._index))

    def __enter__(self):
        check(self, "device")
        prev = _C._factory_device()
        _C._set_factory_device(_C._parse_device(str(self)))
        _entered().append(prev)
        return self

    def __exit__(self, *exc):
        _C._set_factory_device(_entered().pop())
        return False


_THREAD = threading.local()


def _entered():
    """This thread's factory devices that `with device(...)` blocks replaced, innermost last (the
    factory device is per thread, as the engine's)."""
    if not hasattr(_THREAD, "stack"):
        _THREAD.stack = []
    return _THREAD.stack


def set_default_device(dev):
    """The device factories use when given none (torch.set_default_device); None means the CPU."""
    spec = "cpu" if dev is None else (f"cuda:{dev}" if isinstance(dev, builtins.int) else str(dev))
    check(spec, "set_default_device")
    _C._set_factory_device(_C._parse_device(spec))


def get_default_device():
    """The device factories use when given none (torch.get_default_device)."""
    return device(_C._factory_device())


def _split(spec):
    """'cuda:1' -> ('cuda', 1); 'cpu' -> ('cpu', None); bad strings raise RuntimeError as torch does."""
    kind, sep, idx = spec.partition(":")
    if kind not in _TYPES:
        raise RuntimeError(f"device: expected one of {', '.join(_TYPES)} device type at start of device string: "
                           f"{spec!r}")
    if not sep:
        return kind, None
    if not idx.isdigit() or (len(idx) > 1 and idx[0] == "0"):
        raise RuntimeError(f"device: invalid device string: {spec!r}")
    return kind, builtins.int(idx)


CPU = device("cpu")


def check(spec, where):
    """Validates a device argument (a string or lucid.device): raises unless this build and machine
    can hold tensors there (see the module docstring for the errors)."""
    if not isinstance(spec, (str, device)):
        raise TypeError(f"{where}: argument 'device' expected a str or lucid.device, got {type(spec).__name__}")
    if str(spec).startswith("mps"):
        raise NotImplementedError(f"{where}: device '{spec}' requested, but this build of lucid has no MPS backend; "
                                  "use device='cpu'")
    _C._parse_device(str(spec))


# lucid.Generator is bound in C++ with a string `device`; report the same device object as tensors do.
_C.Generator.device = property(lambda self: CPU)
