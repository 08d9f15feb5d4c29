"""Spec rows for composites torch defines by other ops (lucid/_ops_matrix.py, _ops_math.py, _ops_query.py) (outer, baddbmm, meshgrid,
nan_to_num, cdist, equal, Tensor.sum_to_size): no OpDef of their own (`ops` is empty), checked against torch
forward and backward like every other row."""
import numpy as np

from op_specs import OpSpec, Sample, arr

FLOATS = ("float32", "float64")


def _outer(rng, dt):
    return [Sample([arr(rng, (3,), dt), arr(rng, (4,), dt)]), Sample([arr(rng, (1,), dt), arr(rng, (5,), dt)])]


def _baddbmm(rng, dt):
    b1, b2 = arr(rng, (2, 3, 4), dt), arr(rng, (2, 4, 5), dt)
    return [Sample([arr(rng, (2, 3, 5), dt), b1, b2]),
            Sample([arr(rng, (3, 5), dt), b1, b2], {"beta": 0.5, "alpha": 2.0}),
            Sample([arr(rng, (1, 5), dt), b1, b2], {"beta": 0.0}),
            Sample([arr(rng, (2, 1, 1), dt), b1, b2], {"alpha": -1.0})]


def _meshgrid(rng, dt):
    return [Sample([arr(rng, (3,), dt), arr(rng, (4,), dt)], {"indexing": "ij"}),
            Sample([arr(rng, (3,), dt), arr(rng, (4,), dt), arr(rng, (2,), dt)], {"indexing": "xy"}),
            Sample([arr(rng, (5,), dt)], {"indexing": "ij"})]


def _nan_to_num(rng, dt):
    x = arr(rng, (3, 4), dt)
    x[0, 0], x[1, 1], x[2, 2] = np.nan, np.inf, -np.inf
    return [Sample([x]), Sample([x], {"nan": 1.5, "posinf": 7.0, "neginf": -7.0}), Sample([arr(rng, (2, 3), "int64")])]


def _sum_to_size(rng, dt):
    x = arr(rng, (2, 3, 4), dt)
    return [Sample([x, (3, 1)]), Sample([x, (1, 3, 4)]), Sample([x, (4,)]), Sample([x, ()])]  # same size: self (test_torch_utilities)


SPECS = [
    OpSpec("outer", [], lambda m, a, b: m.outer(a, b), lambda m, a, b: m.outer(a, b), _outer, dtypes=FLOATS),
    OpSpec("outer_method", [], lambda m, a, b: a.outer(b), lambda m, a, b: a.outer(b), _outer, dtypes=FLOATS),
    OpSpec("baddbmm", [], lambda m, i, a, b, **k: m.baddbmm(i, a, b, **k), lambda m, i, a, b, **k: m.baddbmm(i, a, b, **k),
           _baddbmm, dtypes=FLOATS),
    OpSpec("baddbmm_method", [], lambda m, i, a, b, **k: i.baddbmm(a, b, **k),
           lambda m, i, a, b, **k: i.baddbmm(a, b, **k), _baddbmm, dtypes=FLOATS),
    OpSpec("meshgrid", [], lambda m, *t, **k: m.meshgrid(*t, **k), lambda m, *t, **k: m.meshgrid(*t, **k), _meshgrid,
           dtypes=FLOATS),
    OpSpec("nan_to_num", [], lambda m, x, **k: m.nan_to_num(x, **k), lambda m, x, **k: m.nan_to_num(x, **k),
           _nan_to_num, dtypes=FLOATS, grad=False),
    OpSpec("sum_to_size", [], lambda m, x, s: x.sum_to_size(s), lambda m, x, s: x.sum_to_size(s), _sum_to_size,
           dtypes=FLOATS),
]


def _cdist(rng, dt):
    a, b = arr(rng, (4, 3), dt), arr(rng, (5, 3), dt)
    return [Sample([a, b]), Sample([a, b], {"p": 1.0}), Sample([a, b], {"p": 3.0}), Sample([a, b], {"p": float("inf")}),
            Sample([arr(rng, (2, 4, 3), dt), arr(rng, (2, 5, 3), dt)])]


def _equal(rng, dt):
    x = arr(rng, (3, 4), dt)
    return [Sample([x, x.copy()]), Sample([x, x + 1]), Sample([x, x[:2]])]


SPECS += [
    OpSpec("cdist", [], lambda m, a, b, **k: m.cdist(a, b, **k), lambda m, a, b, **k: m.cdist(a, b, **k), _cdist,
           dtypes=FLOATS),
    OpSpec("equal", [], lambda m, a, b: m.tensor(m.equal(a, b)), lambda m, a, b: m.tensor(m.equal(a, b)), _equal,
           dtypes=FLOATS, grad=False),
]
