"""lucid.return_types: the named tuples ops return where torch returns torch.return_types.*
(fields `values` and `indices`; they unpack and index as tuples). The types are made by the
bindings (python/src/sort_bind.cpp, reduce_bind.cpp); this module names them, so results pickle. The Python composites' result types (aminmax, cummax,
cummin, histogram: lucid/_ops_reduce_extra.py) are defined here."""
import collections

from lucid import _C

sort = _C._sort_result
topk = _C._topk_result
median = _C._median_result
nanmedian = _C._nanmedian_result
max = _C._max_result  # noqa: A001
min = _C._min_result  # noqa: A001

aminmax = collections.namedtuple("aminmax", ["min", "max"], module=__name__)
cummax = collections.namedtuple("cummax", ["values", "indices"], module=__name__)
cummin = collections.namedtuple("cummin", ["values", "indices"], module=__name__)
histogram = collections.namedtuple("histogram", ["hist", "bin_edges"], module=__name__)

__all__ = ["sort", "topk", "median", "nanmedian", "max", "min", "aminmax", "cummax", "cummin", "histogram"]
