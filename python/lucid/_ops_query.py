"""torch.* predicates, dtype queries, small factories and global switches that lucid builds in
Python: is_tensor/is_floating_point/is_nonzero/..., equal, numel, can_cast, typename, clone and
detach as functions, fill, scalar_tensor, range (torch's inclusive form), logspace, the signal
windows (hann, hamming, blackman, bartlett, kaiser: functions of their length only, computed in
float64 on the host), empty_strided, asarray/frombuffer/empty_permuted, and the switches seed
utilities call (use_deterministic_algorithms and the debug mode: lucid's CPU kernels are
deterministic, so every mode holds;
set_float32_matmul_precision: CPU GEMMs are always full float32, as torch's on CPU; 'high' and
'medium' let CUDA float32 GEMMs use TF32, the setting lucid.backends.cuda.matmul.allow_tf32 shows);
and lucid.Size, torch.Size's tuple."""
from lucid._C import ArgumentError  # a ValueError and a RuntimeError, as torch raises
import builtins
import math

import numpy as np

from lucid import _C
from lucid._creation import tensor
from lucid._C import Tensor
from lucid import _device

_KIND = {"bool": 0, "uint8": 1, "int8": 1, "int32": 1, "int64": 1, "float16": 2, "bfloat16": 2, "float32": 2,
         "float64": 2}
_TYPENAME = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int32": "Int", "int64": "Long", "float16": "Half",
             "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}


def need_tensor(x, op, arg="input", ndim=None):
    """x, checked to be a Tensor (of ndim dims when given); TypeError/ValueError naming op and arg.
    The argument check of every breadth module."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: argument '{arg}' expected a Tensor, got {type(x).__name__}")
    if ndim is not None and x.ndim != ndim:
        raise ArgumentError(f"{op}: argument '{arg}' expected a {ndim}-D tensor, got {x.ndim}-D with shape "
                         f"{tuple(x.shape)}")
    return x


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return need_tensor(input, "is_floating_point").dtype.is_floating_point


def is_complex(input):
    need_tensor(input, "is_complex")
    return False  # lucid has no complex dtypes


def is_signed(input):
    return need_tensor(input, "is_signed").dtype.is_signed


def is_nonzero(input):
    n = need_tensor(input, "is_nonzero").numel()
    if n != 1:
        raise RuntimeError("Boolean value of Tensor with " + ("no values" if n == 0 else "more than one value")
                           + " is ambiguous")
    return builtins.bool(input.item() != 0)


def is_same_size(input, other):
    return tuple(need_tensor(input, "is_same_size").shape) == tuple(need_tensor(other, "is_same_size", "other").shape)


def equal(input, other):
    """True when both tensors have the same shape and the same values."""
    need_tensor(input, "equal"), need_tensor(other, "equal", "other")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool((input == other).all().item())


def numel(input):
    return need_tensor(input, "numel").numel()


def can_cast(from_, to):
    """Whether torch's in-place/out= casting allows from_ -> to: never to a lower kind (float -> int,
    int -> bool)."""
    return _KIND[from_.name] <= _KIND[to.name]


def typename(obj):
    if isinstance(obj, Tensor):
        return f"lucid.{_TYPENAME[obj.dtype.name]}Tensor"
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def clone(input, *, memory_format=None):
    return need_tensor(input, "clone").clone()


def detach(input):
    return need_tensor(input, "detach").detach()


def fill(input, value):
    return _C.full_like(need_tensor(input, "fill"), value)


def scalar_tensor(s, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False):
    out = _C._full_factory([], s, dtype=dtype or _C.get_default_dtype(), device=device)
    return out.requires_grad_() if requires_grad else out


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):  # noqa: A001
    """torch.range: start to end inclusive (deprecated in torch in favour of arange)."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ArgumentError("range: step must be nonzero")
    n = builtins.max(int(math.floor((end - start) / step)) + 1, 0)
    out = _C.arange(n, dtype=_C.dtype.float64, device=device) * step + start
    out = out.to_dtype(dtype or _C.get_default_dtype())
    return out.requires_grad_() if requires_grad else out


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    exps = _C.linspace(start, end, steps, dtype=_C.dtype.float64, device=device)
    out = _C.pow(float(base), exps).to_dtype(dtype or _C.get_default_dtype())
    return out.requires_grad_() if requires_grad else out


def _window(values, dtype, device, requires_grad):
    """A window computed on the host (float64 NumPy) as a tensor of `dtype` on `device`."""
    out = tensor(np.asarray(values, dtype=np.float64), device=device).to_dtype(dtype or _C.get_default_dtype())
    return out.requires_grad_() if requires_grad else out


def _window_n(n, periodic, op):
    if n < 0:
        raise ArgumentError(f"{op}: requires non-negative window_length, got window_length={n}")
    return n + 1 if periodic and n > 1 else n


def _cosine_window(window_length, periodic, coeffs, dtype, device, requires_grad, op):
    m = _window_n(window_length, periodic, op)
    if window_length == 1:
        return _window(np.ones(1), dtype, device, requires_grad)
    k = np.arange(m)
    w = sum((-1) ** i * c * np.cos(2 * np.pi * i * k / builtins.max(m - 1, 1)) for i, c in enumerate(coeffs))
    return _window(w[:window_length], dtype, device, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, device=None, layout=None, requires_grad=False):
    return _cosine_window(window_length, periodic, (0.5, 0.5), dtype, device, requires_grad, "hann_window")


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, device=None, layout=None,
                   requires_grad=False):
    return _cosine_window(window_length, periodic, (alpha, beta), dtype, device, requires_grad, "hamming_window")


def blackman_window(window_length, periodic=True, *, dtype=None, device=None, layout=None, requires_grad=False):
    return _cosine_window(window_length, periodic, (0.42, 0.5, 0.08), dtype, device, requires_grad, "blackman_window")


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None, layout=None, requires_grad=False):
    m = _window_n(window_length, periodic, "bartlett_window")
    if window_length == 1:
        return _window(np.ones(1), dtype, device, requires_grad)
    k = np.arange(m)
    w = 1 - np.abs(2 * k / (m - 1) - 1)
    return _window(w[:window_length], dtype, device, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None, layout=None,
                  requires_grad=False):
    m = _window_n(window_length, periodic, "kaiser_window")
    if window_length == 1:
        return _window(np.ones(1), dtype, device, requires_grad)
    return _window(np.kaiser(m, beta)[:window_length], dtype, device, requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False):
    """An uninitialised tensor with the given strides over a storage just big enough for them."""
    size, stride = list(size), list(stride)
    if len(size) != len(stride):
        raise ArgumentError(f"empty_strided: size ({len(size)} dims) and stride ({len(stride)} dims) must have the same "
                         "length")
    extent = 0 if 0 in size else 1 + builtins.sum((s - 1) * st for s, st in zip(size, stride))
    storage = _C._empty_factory([extent], dtype=dtype or _C.get_default_dtype(), device=device)
    out = _C.as_strided(storage, size, stride, 0)
    return out.requires_grad_() if requires_grad else out


_deterministic = {"mode": False, "warn_only": False}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode, *, warn_only=False):
    _deterministic.update(mode=builtins.bool(mode), warn_only=builtins.bool(warn_only))
    _C._cudnn_set_flag("deterministic_algorithms", builtins.bool(mode))  # cuDNN then takes deterministic engines


def are_deterministic_algorithms_enabled():
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """0/'default', 1/'warn' or 2/'error', as torch: the same switch as use_deterministic_algorithms."""
    mode = _DEBUG_MODES.get(debug_mode, debug_mode)
    if mode not in (0, 1, 2):
        raise ArgumentError(f"set_deterministic_debug_mode: expected 0, 1, 2, 'default', 'warn' or 'error', got "
                         f"{debug_mode!r}")
    use_deterministic_algorithms(mode != 0, warn_only=mode == 1)


def get_deterministic_debug_mode():
    if not _deterministic["mode"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


def set_float32_matmul_precision(precision):
    if precision not in ("highest", "high", "medium"):
        raise ArgumentError(f"set_float32_matmul_precision: expected 'highest', 'high' or 'medium', got {precision!r}")
    _C._set_float32_matmul_precision(precision)


def get_float32_matmul_precision():
    return _C._get_float32_matmul_precision()



def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor, sharing memory when it can (a tensor of the right dtype, a NumPy array)
    unless copy=True; copy=False raises where a copy is needed."""
    from lucid._creation import as_tensor, tensor as _tensor
    if device is not None:
        _device.check(device, "asarray")
    if isinstance(obj, Tensor):
        out = obj if dtype is None or dtype == obj.dtype else obj.to_dtype(dtype)
        if copy and out is obj:
            out = obj.clone()
        elif copy is False and out is not obj:
            raise ArgumentError(f"asarray: can't convert {obj.dtype} to {dtype} without a copy (copy=False)")
    elif copy:
        out = _tensor(obj, dtype=dtype)
    else:
        out = as_tensor(obj, dtype=dtype)
    want = None if device is None else _device.device(device)
    if want is not None and (out.device.type != want.type or want.index not in (None, out.device.index)):
        if copy is False:
            raise ArgumentError(f"asarray: can't move the data from {out.device} to {device} without a copy "
                                "(copy=False)")
        out = out.to(device)
    return out.requires_grad_() if requires_grad else out


_NP_OF = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int32": np.int32, "int64": np.int64,
          "float16": np.float16, "float32": np.float32, "float64": np.float64}


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over an object with the buffer protocol, sharing its memory (as torch.frombuffer)."""
    from lucid._creation import from_numpy
    if dtype.name not in _NP_OF:
        raise TypeError(f"frombuffer: dtype {dtype} has no buffer layout NumPy can read")
    out = from_numpy(np.frombuffer(buffer, dtype=_NP_OF[dtype.name], count=count, offset=offset))
    return out.requires_grad_() if requires_grad else out


def empty_permuted(size, physical_layout, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size` laid out in memory in the dim order physical_layout."""
    size, layout = list(size), list(physical_layout)
    if sorted(layout) != list(builtins.range(len(size))):
        raise ArgumentError(f"empty_permuted: physical_layout must be a permutation of range({len(size)}), got {layout}")
    out = _C._empty_factory([size[d] for d in layout], dtype=dtype or _C.get_default_dtype(), device=device)
    out = out.permute(*[layout.index(d) for d in builtins.range(len(size))])
    return out.requires_grad_() if requires_grad else out


get_default_device = _device.get_default_device
set_default_device = _device.set_default_device


def get_device(input):
    return need_tensor(input, "get_device").get_device()  # -1 on the CPU, the index on a GPU


def to_dlpack(tensor):
    """A DLPack capsule of the tensor (CPU, zero-copy), as torch.utils.dlpack.to_dlpack."""
    return need_tensor(tensor, "to_dlpack", "tensor").__dlpack__()


def is_inference_mode_enabled():
    return False  # lucid has no inference mode; no_grad is its equivalent


def is_inference(input):
    need_tensor(input, "is_inference")
    return False


# Real tensors only (lucid has no complex dtypes): conjugation is the identity.
def conj(input):
    return need_tensor(input, "conj")


def resolve_conj(input):
    return need_tensor(input, "resolve_conj")


def resolve_neg(input):
    return need_tensor(input, "resolve_neg")


def conj_physical(input):
    return need_tensor(input, "conj_physical").clone()


def is_conj(input):
    need_tensor(input, "is_conj")
    return False


def is_neg(input):
    need_tensor(input, "is_neg")
    return False

class Size(tuple):
    """torch.Size: a tuple of dimension sizes with numel(). (Tensor.shape is a plain tuple in lucid,
    so it compares equal to a Size but is not an instance of it.)"""

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __repr__(self):
        return f"lucid.Size({list(self)})"


__all__ = ["Size", "is_tensor", "is_floating_point", "is_complex", "is_signed", "is_nonzero", "is_same_size", "equal",
           "numel", "can_cast", "typename", "clone", "detach", "fill", "scalar_tensor", "range", "logspace",
           "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window", "empty_strided",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "set_deterministic_debug_mode", "get_deterministic_debug_mode",
           "get_device", "to_dlpack", "asarray", "frombuffer", "empty_permuted", "get_default_device",
           "set_default_device", "is_inference_mode_enabled", "is_inference", "conj", "resolve_conj", "resolve_neg",
           "conj_physical", "is_conj", "is_neg"]
