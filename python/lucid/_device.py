"""lucid.device: a device object shaped like torch.device, and the device argument parser.

`lucid.device("cpu")`, `lucid.device("cuda", 0)`, `lucid.device("cuda:1")` build a small immutable,
hashable, picklable value with `.type`, `.index` and torch's `str()`/`repr()`. Only the CPU backend
is built: a CUDA (or MPS) device can be *described*, so the usual
`device = lucid.device("cuda" if lucid.cuda.is_available() else "cpu")` idiom runs, but handing
one to an op, a factory or `.to()` raises the engine's NotImplementedError ("no CUDA backend").

One deliberate difference from torch: a device compares equal to its string form
(`t.device == "cpu"` is True, as it was when `Tensor.device` was a string), where
`torch.device("cpu") == "cpu"` is False.
"""
import builtins

from lucid import _C

__all__ = ["device"]

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
            raise RuntimeError("device: an integer device means an accelerator index, but this build of lucid has "
                               "no CUDA backend; use lucid.device('cpu')")
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
    """Validates a device argument (a string or lucid.device) for an operation that runs on the
    CPU backend; a CUDA/MPS device raises the engine's NotImplementedError naming the backend."""
    if not isinstance(spec, (str, device)):
        raise TypeError(f"{where}: argument 'device' expected a str or lucid.device, got {type(spec).__name__}")
    if str(spec).startswith("mps"):
        raise NotImplementedError(f"{where}: device '{spec}' requested, but this build of lucid has no MPS backend; "
                                  "use device='cpu'")
    _C._parse_device(str(spec))


# lucid.Generator is bound in C++ with a string `device`; report the same device object as tensors do.
_C.Generator.device = property(lambda self: CPU)
