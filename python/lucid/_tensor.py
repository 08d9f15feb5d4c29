"""Python-level Tensor methods (repr, tolist, backward, to, ...) attached to the C++ class."""
import numpy as np

from lucid import _C
from lucid._C import Tensor


def _backward(self, gradient=None, retain_graph=None, create_graph=False):
    if retain_graph is None:
        retain_graph = create_graph
    self._backward(gradient, retain_graph, create_graph)


def _tolist(self):
    _C._host_read(self, "tolist")
    t = self.detach()
    if t.dtype == _C.dtype.bfloat16:
        t = _C.cast(t, _C.dtype.float32)
    return t.numpy().tolist()


def _repr(self):
    t = self.detach()
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
    default_dtypes = (_C.get_default_dtype(), _C.dtype.int64, _C.dtype.bool)
    if self.dtype not in default_dtypes or self.numel() == 0:
        extras.append(f"dtype={self.dtype!r}")
    if self.grad_fn is not None:
        extras.append(f"grad_fn={self.grad_fn!r}")
    elif self.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


def _to(self, *args, **kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    for a in args:
        if isinstance(a, _C.dtype):
            dtype = a
        elif isinstance(a, str):
            device = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
    if device is not None:
        _C._parse_device(str(device))
    out = self.to_dtype(dtype) if dtype is not None else self
    if copy and out._is_same(self):
        out = self.clone()
    return out


def _size(self, dim=None):
    return self.shape if dim is None else self.shape[dim]


Tensor.backward = _backward
Tensor.tolist = _tolist
Tensor.__repr__ = _repr
Tensor.__str__ = _repr
Tensor.to = _to
Tensor.size = _size
Tensor.device = property(lambda self: "cpu")
Tensor.is_cuda = property(lambda self: False)
Tensor.T = property(lambda self: self.permute(*reversed(range(self.ndim))))
Tensor.__len__ = lambda self: self.shape[0] if self.ndim else (_ for _ in ()).throw(TypeError("len() of a 0-d tensor"))
Tensor.__float__ = lambda self: float(self.item())
Tensor.__int__ = lambda self: int(self.item())
Tensor.__bool__ = lambda self: bool(self.item())
Tensor.__index__ = lambda self: int(self.item()) if not self.dtype.is_floating_point else (_ for _ in ()).throw(TypeError("only integer tensors can be converted to an index"))
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
Tensor.cpu = lambda self: self
Tensor.expand_as = lambda self, other: self.expand(other.shape)
Tensor.__hash__ = object.__hash__



# DLPack: zero-copy through NumPy's DLPack support (CPU only; bfloat16 is not expressible).
def _dlpack(self, stream=None, **kwargs):
    return self.detach().numpy().__dlpack__(**kwargs)


Tensor.__dlpack__ = _dlpack
Tensor.__dlpack_device__ = lambda self: (1, 0)  # kDLCPU, device 0
