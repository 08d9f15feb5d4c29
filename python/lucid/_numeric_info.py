"""lucid.finfo / lucid.iinfo: the numeric limits of a dtype, with torch.finfo / torch.iinfo's
fields (bits, eps, max, min, tiny, smallest_normal, resolution, dtype). NumPy supplies the
values; bfloat16, which NumPy lacks, is float32's exponent range with an 8-bit significand."""
import numpy as np

from lucid._C import dtype, get_default_dtype

__all__ = ["finfo", "iinfo"]

_NP_FLOAT = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
_NP_INT = {"uint8": np.uint8, "int8": np.int8, "int32": np.int32, "int64": np.int64}


class finfo:
    """Limits of a floating dtype (default: the default dtype), as torch.finfo."""

    def __init__(self, type=None):  # noqa: A002  (torch's argument name)
        type = get_default_dtype() if type is None else type
        if not isinstance(type, dtype) or not type.is_floating_point:
            raise TypeError(f"finfo: argument 'type' expected a floating-point lucid.dtype, got {type!r}")
        self.dtype = type
        if type.name == "bfloat16":
            f32 = np.finfo(np.float32)
            self.bits, self.eps, self.resolution = 16, 2.0 ** -7, 0.01
            self.max = float.fromhex("0x1.fep127")
            self.min, self.tiny = -self.max, float(f32.tiny)
        else:
            f = np.finfo(_NP_FLOAT[type.name])
            self.bits, self.eps, self.resolution = int(f.bits), float(f.eps), 10.0 ** -int(f.precision)
            self.max, self.min, self.tiny = float(f.max), float(f.min), float(f.tiny)
        self.smallest_normal = self.tiny

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype.name})")


class iinfo:
    """Limits of an integer dtype, as torch.iinfo."""

    def __init__(self, type):  # noqa: A002
        if not isinstance(type, dtype) or type.name not in _NP_INT:  # torch.iinfo refuses bool too
            raise TypeError(f"iinfo: argument 'type' expected an integer lucid.dtype, got {type!r}")
        self.dtype = type
        i = np.iinfo(_NP_INT[type.name])
        self.bits, self.min, self.max = int(i.bits), int(i.min), int(i.max)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype.name})"
