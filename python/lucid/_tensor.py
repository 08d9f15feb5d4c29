"""Python-level Tensor methods attached to the C++ class: repr, tolist, backward, to(device/dtype),
the device properties (Tensor.device is a lucid.device), cuda() and record_stream, .data and
type_as, and the Python-protocol conversions (__format__, __index__, __bool__, __float__, __int__)
with torch's rules and messages."""
import numpy as np

from lucid import _C
from lucid._C import Tensor
from lucid import _device
from lucid._missing import missing
from lucid.autograd import grad_mode


def _backward(self, gradient=None, retain_graph=None, create_graph=False):
    if retain_graph is None:
        retain_graph = create_graph
    self._backward(gradient, retain_graph, create_graph)


def _tolist(self):
    _C._host_read(self, "tolist")
    t = self.detach().cpu()
    if t.dtype == _C.dtype.bfloat16:
        t = _C.cast(t, _C.dtype.float32)
    return t.numpy().tolist()


def _repr(self):
    t = self.detach().cpu()
    if t.dtype == _C.dtype.bfloat16:
        t = _C.cast(t, _C.dtype.float32)
    arr = t.numpy()
    opts = {}
    if arr.dtype.kind == "f" and arr.size:
        finite = arr[np.isfinite(arr)].astype(np.float64)
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        big = finite.size and (np.abs(finite).max() >= 1e8 or (np.abs(finite[finite != 0]).min(initial=1) < 1e-4))
        if big:
            opts = {"formatter": {"float_kind": lambda v: f"{v:.4e}"}}
        elif not integral:
            opts = {"formatter": {"float_kind": lambda v: f"{v:.4f}"}}
    body = np.array2string(arr, separator=", ", prefix="tensor(", threshold=1000, edgeitems=3, **opts)
    extras = []
    if self._device != "cpu":
        extras.append(f"device='{self._device}'")
    default_dtypes = (_C.get_default_dtype(), _C.dtype.int64, _C.dtype.bool)
    if self.dtype not in default_dtypes or self.numel() == 0:
        extras.append(f"dtype={self.dtype!r}")
    if self.grad_fn is not None:
        extras.append(f"grad_fn={self.grad_fn!r}")
    elif self.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


def _to(self, *args, **kwargs):
    """Tensor.to(dtype) / to(device) / to(device, dtype) / to(other) / to(dtype=, device=, copy=,
    non_blocking=), as torch: self when nothing changes (and copy is False); a move to another device
    is differentiable (the gradient comes back to this tensor's device)."""
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    non_blocking = kwargs.pop("non_blocking", False)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"Tensor.to: unexpected keyword argument {next(iter(kwargs))!r}")
    flags = []  # positional non_blocking, copy, as in torch's to(device, dtype, non_blocking, copy)
    for a in args:
        if isinstance(a, _C.dtype):
            dtype = a
        elif isinstance(a, (str, _device.device)) or (isinstance(a, int) and not isinstance(a, bool) and device is None
                                                      and dtype is None and not flags):
            device = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, bool):
            flags.append(a)
        else:
            raise TypeError(f"Tensor.to: expected a dtype, a device (str or lucid.device) or a Tensor, got "
                            f"{type(a).__name__}")
    if len(flags) > 2:
        raise TypeError(f"Tensor.to: expected at most two positional flags (non_blocking, copy), got {len(flags)}")
    copy = copy or (len(flags) == 2 and flags[1])
    non_blocking = non_blocking or (len(flags) >= 1 and flags[0])
    if device is not None:
        if isinstance(device, int):
            device = _device.device("cuda", device)
        _device.check(device, "Tensor.to")
        target = _C._parse_device(str(device))
        if target != self._device:
            return self._to_device(target, self.dtype if dtype is None else dtype, bool(non_blocking))
    out = self.to_dtype(dtype) if dtype is not None else self
    if copy and out._is_same(self):
        out = self.clone()
    return out


def _cuda(self, device=None, non_blocking=False):
    """A copy on a CUDA device (the current one, cuda:0, by default); self when already there."""
    if device is None:
        device = "cuda"
    elif isinstance(device, int) and not isinstance(device, bool):
        device = _device.device("cuda", device)
    if _device.device(device).type != "cuda":
        raise RuntimeError(f"Tensor.cuda: invalid device, must be cuda device, got {device}")
    _device.check(device, "Tensor.cuda")
    return _to(self, device, non_blocking=non_blocking)


def _record_stream(self, stream):
    """torch's Tensor.record_stream: marks this CUDA tensor's memory as used by work queued on
    `stream` (a lucid.cuda.Stream of the tensor's device), so when the memory is freed it is not
    reused before the work queued on `stream` until then has finished (the caching allocator holds
    the block back until an event recorded on `stream` at the free completes;
    csrc/lucid/backends/cuda/cuda_allocator.h). Nothing for the stream the memory was allocated on,
    or memory lucid did not allocate (a DLPack import)."""
    from lucid import cuda
    if not isinstance(stream, cuda.Stream):
        raise TypeError(f"record_stream(): argument 'stream' must be lucid.cuda.Stream, not {type(stream).__name__}")
    if self._device == "cpu":
        raise NotImplementedError("record_stream: expected a CUDA tensor, got a tensor on cpu (torch: "
                                  "\"Could not run 'aten::record_stream' with arguments from the 'CPU' backend\")")
    index = _device.device(self._device).index
    if stream.device_index != index:
        raise RuntimeError(f"record_stream: the stream is on cuda:{stream.device_index}, but the tensor is on "
                           f"cuda:{index}")
    _C._cuda_record_stream(self, stream.cuda_stream)


def _device_of(self):
    d = self._device
    return _device.CPU if d == "cpu" else _device.device(d)


def _data_get(self):
    """A detached alias sharing storage (torch's `.data`)."""
    return self.detach()


def _data_set(self, value):
    """`t.data = v`, as torch: t keeps its identity, requires_grad and autograd metadata and now
    shares v's storage, with v's shape, strides and dtype (so optimizers holding t update v's
    memory). A tensor that requires grad takes floating-point data only."""
    if not isinstance(value, Tensor):
        raise TypeError(f"Tensor.data: expected a Tensor, got {type(value).__name__}")
    if self.requires_grad and not value.dtype.is_floating_point:
        raise RuntimeError(f"Tensor.data: data set to a tensor that requires gradients must be floating point, "
                           f"got dtype {value.dtype}")
    self._set_data(value)


def _type_as(self, other):
    if not isinstance(other, Tensor):
        raise TypeError(f"Tensor.type_as: argument 'other' expected a Tensor, got {type(other).__name__}")
    return self.to_dtype(other.dtype)


def _scalar(self, what):
    if self.numel() != 1:
        raise ValueError(f"{what}: only one element tensors can be converted to Python scalars (this one has "
                         f"{self.numel()} elements)")
    return self.item()


# Each conversion tells a trace which one read the value (the fallback reason names it).
def _float(self):
    _C._host_read(self, "float")
    return float(_scalar(self, "float(Tensor)"))


def _int(self):
    _C._host_read(self, "int")
    return int(_scalar(self, "int(Tensor)"))


def _bool(self):
    _C._host_read(self, "bool")
    n = self.numel()
    if n != 1:
        raise RuntimeError("Boolean value of Tensor with " + ("no values" if n == 0 else "more than one value")
                           + " is ambiguous")
    return bool(self.item())


def _index(self):
    """Integer (or bool) one-element tensors are usable as indices: `range(t)`, `seq[t]`."""
    _C._host_read(self, "__index__")
    if self.dtype.is_floating_point or self.numel() != 1:
        raise TypeError("only integer tensors of a single element can be converted to an index (got dtype "
                        f"{self.dtype}, {self.numel()} elements)")
    return int(self.item())


def _format(self, spec):
    """As torch: a 0-d tensor formats as its Python number (f"{loss:.4f}"); any other tensor accepts
    only the empty spec (its str), and a non-empty spec raises TypeError. (torch also refuses a spec
    on a 0-d Parameter, a side effect of its subclass check; lucid formats it like any 0-d tensor.)"""
    if self.ndim == 0:
        _C._host_read(self, "format")
        return format(self.item(), spec)
    return object.__format__(self, spec)


def _getattr(self, name):
    """Only failed lookups get here: a torch Tensor method lucid lacks says so (lucid/_missing.py)."""
    raise missing("Tensor", "Tensor", name, self)


def _size(self, dim=None):
    return self.shape if dim is None else self.shape[dim]


Tensor.backward = _backward
Tensor.tolist = _tolist
Tensor.__repr__ = _repr
Tensor.__str__ = _repr
Tensor.to = _to
Tensor.size = _size
Tensor.device = property(_device_of)
Tensor.is_cuda = property(lambda self: self._device != "cpu")
Tensor.is_cpu = property(lambda self: self._device == "cpu")
Tensor.get_device = lambda self: -1 if self._device == "cpu" else _device.device(self._device).index  # torch's answers
Tensor.cuda = _cuda
Tensor.record_stream = _record_stream
Tensor.data = property(_data_get, _data_set)
Tensor.type_as = _type_as
Tensor.T = property(lambda self: self.permute(*reversed(range(self.ndim))))
Tensor.__len__ = lambda self: self.shape[0] if self.ndim else (_ for _ in ()).throw(TypeError("len() of a 0-d tensor"))
Tensor.__float__ = _float
Tensor.__int__ = _int
Tensor.__bool__ = _bool
Tensor.__index__ = _index
Tensor.__format__ = _format
Tensor.__array__ = lambda self, dtype=None, copy=None: np.asarray(self.detach().numpy(), dtype=dtype)
Tensor.float = lambda self: self.to_dtype(_C.dtype.float32)
Tensor.double = lambda self: self.to_dtype(_C.dtype.float64)
Tensor.half = lambda self: self.to_dtype(_C.dtype.float16)
Tensor.bfloat16 = lambda self: self.to_dtype(_C.dtype.bfloat16)
Tensor.long = lambda self: self.to_dtype(_C.dtype.int64)
Tensor.int = lambda self: self.to_dtype(_C.dtype.int32)
Tensor.bool = lambda self: self.to_dtype(_C.dtype.bool)
Tensor.type = lambda self, dtype=None: self.dtype if dtype is None else self.to_dtype(dtype)
Tensor.is_floating_point = lambda self: self.dtype.is_floating_point
Tensor.element_size = lambda self: self.dtype.itemsize
Tensor.cpu = lambda self, memory_format=None: _to(self, "cpu")
Tensor.expand_as = lambda self, other: self.expand(other.shape)
Tensor.__hash__ = object.__hash__
Tensor.__getattr__ = _getattr


# DLPack (Tensor.__dlpack__, __dlpack_device__) is bound in C++: python/src/dlpack_bind.cpp.
