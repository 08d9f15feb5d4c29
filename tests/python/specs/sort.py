"""Spec rows for the sort family (Sort, TopK, Median, MedianDim; unique and unique_consecutive,
which are host computations without an OpDef), cumprod (Cumprod, CumprodBackward) and
multinomial (Multinomial). Index outputs are compared only on samples without ties (distinct
values), except for stable sorts, whose tie order torch defines; NaN samples check torch's order
(NaN as the largest value)."""
import numpy as np

from op_specs import OpSpec, Sample, arr

FLOATS = ("float32", "float64", "float16", "bfloat16")
NUMERIC = FLOATS + ("int64", "int32", "uint8", "int8")


def distinct(rng, shape, dt, scale=0.25):
    """Distinct values (a shuffled grid of step `scale`, exact in every dtype) of a lucid dtype name."""
    n = int(np.prod(shape)) if shape else 1
    v = rng.permutation(n).reshape(shape).astype(np.float64)
    if "float" in dt:
        out = (v - n // 2) * scale
        return np.asarray(out, dtype=np.float32 if dt != "float64" else np.float64)
    return np.asarray(v if dt == "uint8" else v - min(n // 2, 100), dtype=dt)


def ties(rng, shape, dt):
    return rng.integers(0, 4, size=shape).astype(np.float32 if "float" in dt and dt != "float64" else
                                                  (np.float64 if dt == "float64" else dt))


def with_nan(rng, dt, n_nan=1):
    a = distinct(rng, (3, 6), dt)
    a[0, 2] = np.nan
    a[1, 0] = np.inf
    a[2, 5] = -np.inf
    if n_nan > 1:
        a[2, 1] = np.nan
        a[0, 4] = np.nan
    return a


def with_zeros(rng, dt):
    a = distinct(rng, (3, 7), dt, 0.25) if "float" in dt else rng.integers(-3, 4, size=(3, 7)).astype(dt)
    if "float" in dt:
        a = a / 4 + 0.1
    a[0, 2] = 0
    a[1, 0] = 0
    a[1, 4] = 0
    a[2, 6] = 0
    return a


def _sort_samples(rng, dt):
    return [Sample([distinct(rng, (3, 4, 5), dt)]), Sample([distinct(rng, (3, 4, 5), dt)], {"dim": 1}),
            Sample([distinct(rng, (3, 4, 5), dt)], {"dim": 0, "descending": True}),
            Sample([distinct(rng, (7,), dt)], {"descending": True}), Sample([distinct(rng, (), dt)]),
            Sample([distinct(rng, (0, 3), dt)], {"dim": 0})]


def _topk_samples(rng, dt):
    return [Sample([distinct(rng, (3, 4, 5), dt), 2]), Sample([distinct(rng, (3, 4, 5), dt), 3], {"dim": 1}),
            Sample([distinct(rng, (3, 4, 5), dt), 1], {"dim": 0, "largest": False}),
            Sample([distinct(rng, (9,), dt), 9]), Sample([distinct(rng, (9,), dt), 0]),
            Sample([distinct(rng, (), dt), 1]), Sample([distinct(rng, (0, 3), dt), 2], {"dim": 1})]


def _large_rows(rng, dt):
    # partial_sort (small k), nth_element (large k) and many rows (parallel over rows).
    return [Sample([distinct(rng, (2, 3000), dt, 0.001), 5]), Sample([distinct(rng, (2, 3000), dt, 0.001), 2000]),
            Sample([distinct(rng, (400, 300), dt, 0.001), 7], {"dim": 0, "largest": False})]


def _median_samples(rng, dt):
    return [Sample([distinct(rng, (3, 5), dt)]), Sample([distinct(rng, (4, 6), dt)]),
            Sample([distinct(rng, (3, 4, 5), dt)], {"dim": 1}), Sample([distinct(rng, (3, 4, 6), dt)], {"dim": -1}),
            Sample([distinct(rng, (3, 4, 5), dt)], {"dim": 0, "keepdim": True}), Sample([distinct(rng, (), dt)], {"dim": 0}),
            Sample([distinct(rng, (), dt)]), Sample([distinct(rng, (0, 4), dt)], {"dim": 1})]


def _topk_unsorted(lib, a, k, **kw):
    v = lib.topk(a, k, sorted=False, **kw).values
    return v.sort(dim=kw.get("dim", -1)).values


def _multinomial_onehot(rng, dt):
    rows = np.zeros((4, 6), dtype=np.float32 if dt != "float64" else np.float64)
    rows[np.arange(4), rng.integers(0, 6, size=4)] = rng.uniform(0.5, 2.0, size=4)
    return [Sample([rows, 5, True]), Sample([rows, 1]), Sample([rows[1], 3, True])]


def _unique_samples(rng, dt):
    a = rng.integers(0, 5, size=(4, 6)).astype(dt if "float" not in dt else np.float32)
    rows = np.repeat(rng.integers(0, 3, size=(3, 2)), 2, axis=0)[[0, 3, 1, 4, 2, 5]].astype(a.dtype)
    return [Sample([a]), Sample([a], {"return_inverse": True, "return_counts": True}),
            Sample([a], {"sorted": False, "return_inverse": True}), Sample([rows], {"dim": 0, "return_inverse": True,
                                                                                    "return_counts": True}),
            Sample([rows.T.copy()], {"dim": 1, "return_counts": True}), Sample([a[:0]], {"return_counts": True}),
            Sample([np.array(3).astype(a.dtype)], {"return_inverse": True})]


def _unique_nan(rng, dt):
    return [Sample([np.array([3.0, np.nan, 1.0, np.nan, 3.0], dtype=np.float32)], {"return_inverse": True,
                                                                                   "return_counts": True})]


def _unique_consecutive_samples(rng, dt):
    a = np.repeat(rng.integers(0, 3, size=8), rng.integers(1, 3, size=8)).astype(dt if "float" not in dt else np.float32)
    rows = np.array([[1, 2], [1, 2], [0, 5], [1, 2]]).astype(a.dtype)
    return [Sample([a]), Sample([a], {"return_inverse": True, "return_counts": True}),
            Sample([rows], {"dim": 0, "return_inverse": True, "return_counts": True})]


SPECS = [
    OpSpec("sort", ["Sort"], lambda l, a, **k: l.sort(a, **k), lambda t, a, **k: t.sort(a, **k), _sort_samples,
           dtypes=NUMERIC),
    OpSpec("sort_method_fields", ["Sort"], lambda l, a: (a.sort(1, True).values, a.sort(dim=0).indices),
           lambda t, a: (a.sort(1, True).values, a.sort(dim=0).indices), lambda rng, dt: [Sample([distinct(rng, (4, 5), dt)])]),
    OpSpec("sort_noncontig", ["Sort"], lambda l, a: l.sort(a.transpose(0, 1), dim=0), lambda t, a: t.sort(a.transpose(0, 1), dim=0),
           lambda rng, dt: [Sample([distinct(rng, (4, 6), dt)])]),
    OpSpec("sort_large", ["Sort"], lambda l, a, **k: l.sort(a, **k), lambda t, a, **k: t.sort(a, **k),
           lambda rng, dt: [Sample([distinct(rng, (2, 5000), dt, 0.001)]),
                            Sample([distinct(rng, (400, 300), dt, 0.001)], {"dim": 0, "descending": True}),
                            Sample([ties(rng, (50, 3000), dt)], {"stable": True})], dtypes=("float32", "int64"), grad=False,
           # Not 16-bit on CUDA: its "distinct" values collide there, and an unstable sort orders ties freely.
           cuda_dtypes=("float32", "int64")),
    OpSpec("sort_stable_ties", ["Sort"], lambda l, a, **k: l.sort(a, stable=True, **k),
           lambda t, a, **k: t.sort(a, stable=True, **k),
           lambda rng, dt: [Sample([ties(rng, (3, 40), dt)]), Sample([ties(rng, (3, 40), dt)], {"descending": True}),
                            Sample([ties(rng, (30, 4), dt)], {"dim": 0})], dtypes=NUMERIC, fd=False),
    OpSpec("sort_nan", ["Sort"], lambda l, a, **k: l.sort(a, **k), lambda t, a, **k: t.sort(a, **k),
           lambda rng, dt: [Sample([with_nan(rng, dt)]), Sample([with_nan(rng, dt)], {"descending": True}),
                            Sample([with_nan(rng, dt, 3)], {"stable": True}),
                            Sample([with_nan(rng, dt, 3)], {"stable": True, "descending": True})], dtypes=FLOATS, fd=False,
           # torch 2.11's CUDA sort puts bfloat16 NaN first (its CPU sort and lucid put NaN last).
           cuda_dtypes=("float32", "float64", "float16")),
    OpSpec("sort_bool", ["Sort"], lambda l, a: l.sort(a, stable=True), lambda t, a: t.sort(a, stable=True),
           lambda rng, dt: [Sample([rng.integers(0, 2, size=(3, 9)).astype(bool)])], dtypes=("bool",), grad=False),
    OpSpec("argsort", ["Sort"], lambda l, a, **k: l.argsort(a, **k), lambda t, a, **k: t.argsort(a, **k),
           lambda rng, dt: [Sample([distinct(rng, (3, 4, 5), dt)], {"dim": 1}), Sample([distinct(rng, (6,), dt)], {"descending": True}),
                            Sample([ties(rng, (3, 30), dt)], {"stable": True})], dtypes=NUMERIC, grad=False),
    OpSpec("argsort_method", ["Sort"], lambda l, a: a.argsort(0, True), lambda t, a: a.argsort(0, True),
           lambda rng, dt: [Sample([distinct(rng, (5, 3), dt)])], grad=False),
    OpSpec("msort", ["Sort"], lambda l, a: (l.msort(a), a.msort()), lambda t, a: (t.msort(a), a.msort()),
           lambda rng, dt: [Sample([distinct(rng, (5, 3), dt)])], dtypes=("float32", "float64", "int64")),
    OpSpec("topk", ["TopK"], lambda l, a, k, **kw: l.topk(a, k, **kw), lambda t, a, k, **kw: t.topk(a, k, **kw),
           _topk_samples, dtypes=NUMERIC),
    OpSpec("topk_method_positional", ["TopK"], lambda l, a: (a.topk(2, 0, False, True), a.topk(k=3).values),
           lambda t, a: (a.topk(2, 0, False, True), a.topk(k=3).values), lambda rng, dt: [Sample([distinct(rng, (4, 5), dt)])]),
    OpSpec("topk_unsorted", ["TopK"], lambda l, a, k, **kw: _topk_unsorted(l, a, k, **kw),
           lambda t, a, k, **kw: _topk_unsorted(t, a, k, **kw),
           lambda rng, dt: [Sample([distinct(rng, (3, 50), dt), 7]), Sample([distinct(rng, (3, 50), dt), 40], {"largest": False})],
           dtypes=("float32", "float64", "int64")),
    OpSpec("topk_large", ["TopK"], lambda l, a, k, **kw: l.topk(a, k, **kw), lambda t, a, k, **kw: t.topk(a, k, **kw),
           _large_rows, dtypes=("float32", "float64"), fd=False),
    OpSpec("topk_nan", ["TopK"], lambda l, a, **kw: l.topk(a, 3, **kw), lambda t, a, **kw: t.topk(a, 3, **kw),
           lambda rng, dt: [Sample([with_nan(rng, dt)]), Sample([with_nan(rng, dt)], {"largest": False})], fd=False),
    OpSpec("median", ["Median", "MedianDim"], lambda l, a, **k: l.median(a, **k), lambda t, a, **k: t.median(a, **k),
           _median_samples, dtypes=NUMERIC),
    OpSpec("median_method_fields", ["MedianDim"], lambda l, a: (a.median(1).values, a.median(dim=0).indices, a.median()),
           lambda t, a: (a.median(1).values, a.median(dim=0).indices, a.median()),
           lambda rng, dt: [Sample([distinct(rng, (4, 5), dt)])]),
    OpSpec("median_ties_share_gradient", ["Median", "ReduceEqMask"], lambda l, a: l.median(a), lambda t, a: t.median(a),
           lambda rng, dt: [Sample([ties(rng, (3, 5), dt)])], fd=False),
    OpSpec("median_nan", ["Median", "MedianDim"], lambda l, a: (l.median(a), l.median(a, 1).values),
           lambda t, a: (t.median(a), t.median(a, 1).values), lambda rng, dt: [Sample([with_nan(rng, dt)])], grad=False),
    OpSpec("nanmedian", ["Median", "MedianDim"], lambda l, a, **k: l.nanmedian(a, **k), lambda t, a, **k: t.nanmedian(a, **k),
           lambda rng, dt: [Sample([with_nan(rng, dt)]), Sample([with_nan(rng, dt)], {"dim": 1}),
                            Sample([with_nan(rng, dt, 3)], {"dim": 0, "keepdim": True}),
                            Sample([np.full((2, 3), np.nan, dtype=np.float32)], {"dim": 1}),
                            Sample([distinct(rng, (3, 4), dt)], {"dim": 1})], dtypes=FLOATS, fd=False),
    OpSpec("nanmedian_int", ["Median", "MedianDim"], lambda l, a: (l.nanmedian(a), a.nanmedian(0)),
           lambda t, a: (t.nanmedian(a), a.nanmedian(0)), lambda rng, dt: [Sample([distinct(rng, (5, 3), dt)])],
           dtypes=("int64", "int32")),
    OpSpec("cumprod", ["Cumprod", "CumprodBackward"], lambda l, a, d, **k: l.cumprod(a, d, **k),
           lambda t, a, d, **k: t.cumprod(a, d, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 5), dt, 0.5, 1.5), 1]), Sample([arr(rng, (3, 4, 5), dt, -1.5, 1.5), -1]),
                            Sample([arr(rng, (6,), dt), 0]), Sample([arr(rng, (), dt), 0]), Sample([arr(rng, (0, 3), dt), 1])],
           dtypes=("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool")),
    OpSpec("cumprod_zeros", ["Cumprod", "CumprodBackward"], lambda l, a, d: a.cumprod(d), lambda t, a, d: a.cumprod(d),
           lambda rng, dt: [Sample([with_zeros(rng, dt), 1]), Sample([with_zeros(rng, dt).T.copy(), 0])],
           dtypes=("float32", "float64", "int64")),
    OpSpec("cumprod_dtype", ["Cumprod"], lambda l, a: a.cumprod(0, dtype=l.float64), lambda t, a: a.cumprod(0, dtype=t.float64),
           lambda rng, dt: [Sample([arr(rng, (5, 2), dt)])], dtypes=("float32", "int32")),
    OpSpec("multinomial_one_hot", ["Multinomial"], lambda l, a, n, r=False: l.multinomial(a, n, r),
           lambda t, a, n, r=False: t.multinomial(a, n, r), _multinomial_onehot, dtypes=("float32", "float64"), grad=False),
    OpSpec("unique", [], lambda l, a, **k: l.unique(a, **k), lambda t, a, **k: t.unique(a, **k), _unique_samples,
           dtypes=("float32", "int64", "uint8", "bool"), grad=False),
    OpSpec("unique_method_nan", [], lambda l, a, **k: a.unique(**k), lambda t, a, **k: a.unique(**k), _unique_nan,
           dtypes=("float32",), grad=False, cuda_dtypes=("float32",)),  # torch's CUDA unique orders bfloat16 NaNs apart
    OpSpec("unique_consecutive", [], lambda l, a, **k: l.unique_consecutive(a, **k),
           lambda t, a, **k: t.unique_consecutive(a, **k), _unique_consecutive_samples, dtypes=("float32", "int64"),
           grad=False),
]
