"""lucid.return_types: the named tuples ops return where torch returns torch.return_types.*
(fields `values` and `indices`; they unpack and index as tuples). The types are made by the
bindings (python/src/sort_bind.cpp, reduce_bind.cpp); this module names them, so results pickle."""
from lucid import _C

sort = _C._sort_result
topk = _C._topk_result
median = _C._median_result
nanmedian = _C._nanmedian_result
max = _C._max_result  # noqa: A001
min = _C._min_result  # noqa: A001

__all__ = ["sort", "topk", "median", "nanmedian", "max", "min"]
