"""lucid.return_types: the named tuples ops return where torch returns torch.return_types.*
(fields `values` and `indices`; they unpack and index as tuples). The types are made by the
bindings (python/src/sort_bind.cpp, reduce_bind.cpp); this module names them, so results pickle.
lucid.linalg's results, the legacy torch.qr/svd/triangular_solve results and the Python composites' results (aminmax, cummax, cummin, histogram:
lucid/_ops_reduce_extra.py) are plain namedtuples with torch's type and field names, defined here."""
from collections import namedtuple

from lucid import _C

sort = _C._sort_result
topk = _C._topk_result
median = _C._median_result
nanmedian = _C._nanmedian_result
max = _C._max_result  # noqa: A001
min = _C._min_result  # noqa: A001

linalg_qr = namedtuple("linalg_qr", ["Q", "R"])
linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"])
linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_slogdet = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
linalg_lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
aminmax = namedtuple("aminmax", ["min", "max"])
cummax = namedtuple("cummax", ["values", "indices"])
cummin = namedtuple("cummin", ["values", "indices"])
histogram = namedtuple("histogram", ["hist", "bin_edges"])
qr = namedtuple("qr", ["Q", "R"])
svd = namedtuple("svd", ["U", "S", "V"])
triangular_solve = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])

__all__ = ["sort", "topk", "median", "nanmedian", "max", "min", "linalg_qr", "linalg_svd", "linalg_eigh",
           "linalg_slogdet", "linalg_lstsq", "aminmax", "cummax", "cummin", "histogram", "qr", "svd",
           "triangular_solve"]
