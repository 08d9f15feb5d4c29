"""Python names of the reduce ops (owned by the reduce family). The functions are C++
(python/src/reduce_bind.cpp); this module only exports them."""
from lucid import _C

mean = _C.mean
var = _C.var
std = _C.std
var_mean = _C.var_mean
std_mean = _C.std_mean
prod = _C.prod
logsumexp = _C.logsumexp
cumsum = _C.cumsum
cumprod = _C.cumprod
amax = _C.amax
amin = _C.amin
max = _C.max  # noqa: A001
min = _C.min  # noqa: A001
argmax = _C.argmax
argmin = _C.argmin
all = _C.all  # noqa: A001
any = _C.any  # noqa: A001

__all__ = ["mean", "var", "std", "var_mean", "std_mean", "prod", "logsumexp", "cumsum", "cumprod", "amax", "amin", "max", "min", "argmax", "argmin",
           "all", "any"]
