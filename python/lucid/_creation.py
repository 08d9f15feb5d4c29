"""lucid.tensor / as_tensor: Python data in (NumPy at the boundary only), lucid tensors out."""
import builtins
import warnings

import numpy as np

from lucid import _C
from lucid import _device

_NP_TO_LUCID = {np.dtype(np.bool_): "bool", np.dtype(np.uint8): "uint8", np.dtype(np.int8): "int8",
                np.dtype(np.int32): "int32", np.dtype(np.int64): "int64", np.dtype(np.float16): "float16",
                np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}


def _to_array(data, dtype):
    if isinstance(data, _C.Tensor):
        return None
    if isinstance(data, np.ndarray):
        arr = data
    else:
        if isinstance(data, (list, tuple)) and any(isinstance(e, _C.Tensor) for e in _flatten(data)):
            data = _tensors_to_python(data)
        arr = np.asarray(data)
        if arr.dtype == np.float64 and dtype is None:
            arr = arr.astype(np.float32 if _C.get_default_dtype() == _C.dtype.float32 else np.float64)
    _check_int64(arr)
    if arr.dtype not in _NP_TO_LUCID:
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float64)
        elif arr.dtype.kind in "iu":
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"tensor: argument 'data' has unsupported element type {arr.dtype}")
    return arr


_INT64 = (-(2**63), 2**63 - 1)


def _check_int64(arr):
    """Integers beyond int64 (lucid's widest integer type) raise instead of wrapping or becoming
    'object' (PyTorch raises the same ValueError, "Overflow when unpacking long")."""
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > _INT64[1]:
        raise ValueError(f"tensor: Overflow when unpacking long: value {int(arr.max())} does not fit int64")
    if arr.dtype == object:
        for e in arr.flat:
            if isinstance(e, int) and not _INT64[0] <= e <= _INT64[1]:
                raise ValueError(f"tensor: Overflow when unpacking long: value {e} does not fit int64")


_NP_NAMES = ", ".join(f"numpy.{d.type.__name__}" for d in _NP_TO_LUCID)


def from_numpy(array):
    """A tensor sharing memory with a NumPy array (as torch.from_numpy). A read-only array is
    copied, with a warning: a tensor writing into a read-only buffer would corrupt the producer
    (PyTorch shares it and warns that writes are undefined behaviour)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(array).__name__})")
    if array.dtype not in _NP_TO_LUCID:
        raise TypeError(f"from_numpy: can't convert np.ndarray of type numpy.{array.dtype.type.__name__}. "
                        f"The only supported types are: {_NP_NAMES}.")
    if not array.flags.writeable:
        warnings.warn("from_numpy: the given NumPy array is not writable; lucid copies it (the tensor does not "
                      "share its memory)", UserWarning, stacklevel=2)
        array = array.copy()
    return _C.from_numpy(array)


def _flatten(x):
    for e in x:
        if isinstance(e, (list, tuple)):
            yield from _flatten(e)
        else:
            yield e


def _tensors_to_python(x):
    if isinstance(x, _C.Tensor):
        return x.item() if x.numel() == 1 and x.ndim == 0 else x.detach().cpu().numpy().tolist()
    return [_tensors_to_python(e) for e in x]


def tensor(data, dtype=None, device=None, requires_grad=False):
    """Copy `data` (nested lists, scalars, NumPy arrays or tensors) into a new tensor."""
    if device is not None:
        _device.check(device, "tensor")
    if isinstance(data, _C.Tensor):
        t = data.detach().clone()
    else:
        if device is None:  # the factory device (`with lucid.device(...)`), as the other factories
            factory = _C._factory_device()
            device = None if factory == "cpu" else factory
        arr = _to_array(data, dtype)
        t = _C.from_numpy(np.require(arr, requirements=["C", "W"]))
        if device is None or _device.device(device).type == "cpu":
            t = t.clone()
    if dtype is not None and t.dtype != dtype:
        t = _C.cast(t, dtype)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None):
    """Like tensor(), but shares memory with a NumPy array or tensor when the dtype allows."""
    if isinstance(data, _C.Tensor):
        return data if dtype is None or data.dtype == dtype else _C.cast(data, dtype)
    if isinstance(data, np.ndarray) and data.dtype in _NP_TO_LUCID:
        t = from_numpy(data)
        return t if dtype is None or t.dtype == dtype else _C.cast(t, dtype)
    return tensor(data, dtype=dtype, device=device)


_ = builtins


def from_dlpack(ext):
    """Zero-copy import of a DLPack producer (a tensor of torch, NumPy, JAX, CuPy ..., CPU or CUDA) or a
    DLPack capsule. For a CUDA producer the handshake of the array-API standard orders the
    producer's queued work before lucid's current stream (python/src/dlpack_bind.cpp)."""
    if isinstance(ext, _C.Tensor):
        return ext
    return _C._from_dlpack(ext)
