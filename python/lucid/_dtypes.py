"""dtype objects: lucid.float32 etc. are members of the C++ DType enum with a torch-like repr."""
from lucid._C import dtype, _itemsize

dtype.__repr__ = lambda self: f"lucid.{self.name}"
dtype.__str__ = dtype.__repr__
dtype.is_floating_point = property(lambda self: self.name in ("float16", "bfloat16", "float32", "float64"))
dtype.itemsize = property(lambda self: _itemsize(self))
dtype.is_signed = property(lambda self: self.name not in ("bool", "uint8"))

bool_ = dtype.bool
uint8 = dtype.uint8
int8 = dtype.int8
int32 = dtype.int32
int64 = dtype.int64
float16 = dtype.float16
bfloat16 = dtype.bfloat16
float32 = dtype.float32
float64 = dtype.float64
half = float16
float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
