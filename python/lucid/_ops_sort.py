"""Python names of the sort family (owned by the sort family). The functions are C++
(python/src/sort_bind.cpp); this module only exports them."""
from lucid import _C

sort = _C.sort
argsort = _C.argsort
msort = _C.msort
topk = _C.topk
median = _C.median
nanmedian = _C.nanmedian
unique = _C.unique
unique_consecutive = _C.unique_consecutive

__all__ = ["sort", "argsort", "msort", "topk", "median", "nanmedian", "unique", "unique_consecutive"]
