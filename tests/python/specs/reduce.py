"""Spec rows for the reduce ops (Mean, Var, Std, Prod, ProdOthers, LogSumExp, ExpSub, Cumsum,
Amax, Amin, MaxDim, MinDim, Argmax, Argmin, All, Any, ReduceEqMask, IndexMask)."""
import numpy as np

from op_specs import OpSpec, Sample, arr

FLOATS = ("float32", "float64", "float16", "bfloat16")
NUMERIC = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "int8")


def _dims(rng, dt, extra=()):
    """(3, 4, 5) over all dims, one dim, a negative dim, a tuple (keepdim), non-adjacent dims."""
    return [Sample([arr(rng, (3, 4, 5), dt)]),
            Sample([arr(rng, (3, 4, 5), dt)], {"dim": 1}),
            Sample([arr(rng, (3, 4, 5), dt)], {"dim": -1, "keepdim": True}),
            Sample([arr(rng, (3, 4, 5), dt)], {"dim": (0, 2), "keepdim": True}),
            Sample([arr(rng, (3, 4, 5), dt)], {"dim": (0, 1)}),
            Sample([arr(rng, (), dt)]),
            *extra]


def _large(rng, dt):
    # Long rows (split into fixed blocks) and many rows (parallel over rows).
    return [Sample([arr(rng, (3, 20000), dt)], {"dim": 1}), Sample([arr(rng, (50000,), dt)]),
            Sample([arr(rng, (300, 7, 40), dt)], {"dim": 1})]


def _ties(rng, dt):
    a = rng.integers(-2, 3, size=(4, 6)).astype(np.float64 if dt == "float64" else np.float32)
    return a


def _with_zero(rng, dt):
    a = arr(rng, (3, 4), dt, 0.5, 1.5)
    a[1, 2] = 0
    a[2, 0] = 0
    a[2, 3] = 0
    return a


def _noncontig(l_or_t, a):
    return a.transpose(0, 1)


SPECS = [
    OpSpec("mean", ["Mean"], lambda l, a, **k: a.mean(**k), lambda t, a, **k: a.mean(**k),
           lambda rng, dt: _dims(rng, dt), dtypes=FLOATS),
    OpSpec("mean_large", ["Mean"], lambda l, a, **k: l.mean(a, **k), lambda t, a, **k: t.mean(a, **k),
           _large, dtypes=("float32", "float64"), fd=False),
    OpSpec("mean_noncontig", ["Mean"], lambda l, a: _noncontig(l, a).mean(1), lambda t, a: _noncontig(t, a).mean(1),
           lambda rng, dt: [Sample([arr(rng, (4, 5, 3), dt)])]),
    OpSpec("mean_dtype", ["Mean"], lambda l, a: a.mean(1, dtype=l.float64), lambda t, a: a.mean(1, dtype=t.float64),
           lambda rng, dt: [Sample([arr(rng, (4, 5), dt)])], dtypes=("float32", "int64"), grad=False),
    OpSpec("var", ["Var"], lambda l, a, **k: a.var(**k), lambda t, a, **k: a.var(**k),
           lambda rng, dt: _dims(rng, dt)[:5] + [Sample([arr(rng, (3, 4, 5), dt)], {"dim": 2, "correction": 0}),
                                                 Sample([arr(rng, (3, 4, 5), dt)], {"dim": 0, "unbiased": False})],
           dtypes=FLOATS),
    OpSpec("var_large", ["Var"], lambda l, a, **k: l.var(a, **k), lambda t, a, **k: t.var(a, **k),
           _large, dtypes=("float32", "float64"), fd=False),
    OpSpec("std", ["Std"], lambda l, a, **k: a.std(**k), lambda t, a, **k: a.std(**k),
           lambda rng, dt: _dims(rng, dt)[:5] + [Sample([arr(rng, (3, 4, 5), dt)], {"dim": 2, "correction": 0})],
           dtypes=FLOATS),
    OpSpec("std_positional", ["Std"], lambda l, a: l.std(a, 1, False, True), lambda t, a: t.std(a, 1, False, True),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)])]),
    OpSpec("var_mean", ["Var", "Std", "Mean"], lambda l, a, **k: (l.var_mean(a, **k), l.std_mean(a, **k)),
           lambda t, a, **k: (t.var_mean(a, **k), t.std_mean(a, **k)),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)], {"dim": 1}), Sample([arr(rng, (3, 4), dt)], {"correction": 0}),
                            Sample([arr(rng, (3, 4), dt)], {"dim": 0, "keepdim": True})]),
    OpSpec("std_constant_rows", ["Std", "ReduceEqMask"], lambda l, a: a.std(1), lambda t, a: a.std(1),
           lambda rng, dt: [Sample([arr(rng, (3, 1), dt).repeat(4, axis=1)])], fd=False),
    OpSpec("prod", ["Prod", "ProdOthers"], lambda l, a, **k: a.prod(**k), lambda t, a, **k: a.prod(**k),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt, 0.5, 1.5)]), Sample([arr(rng, (3, 4, 5), dt, 0.5, 1.5)], {"dim": 1}),
                            Sample([arr(rng, (3, 4), dt, 0.5, 1.5)], {"dim": 0, "keepdim": True})],
           dtypes=("float32", "float64", "int64", "int32")),
    OpSpec("prod_zeros", ["Prod", "ProdOthers"], lambda l, a, **k: a.prod(**k), lambda t, a, **k: a.prod(**k),
           lambda rng, dt: [Sample([_with_zero(rng, dt)], {"dim": 1}), Sample([_with_zero(rng, dt)])]),
    OpSpec("prod_nonadjacent", ["Prod", "ProdOthers"], lambda l, a: a.prod((0, 2)),
           lambda t, a: a.prod(2).prod(0), lambda rng, dt: [Sample([arr(rng, (2, 3, 4), dt, 0.5, 1.5)])]),
    OpSpec("logsumexp", ["LogSumExp", "ExpSub"], lambda l, a, **k: l.logsumexp(a, **k),
           lambda t, a, **k: t.logsumexp(a, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 5), dt, -20, 20)], {"dim": 1}),
                            Sample([arr(rng, (3, 4, 5), dt)], {"dim": (0, 2), "keepdim": True}),
                            Sample([arr(rng, (3, 4, 5), dt)], {"dim": -1})], dtypes=FLOATS),
    OpSpec("logsumexp_int", ["LogSumExp"], lambda l, a: a.logsumexp(0), lambda t, a: a.logsumexp(0),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)])], dtypes=("int64",), grad=False),
    OpSpec("cumsum", ["Cumsum"], lambda l, a, **k: l.cumsum(a, **k), lambda t, a, **k: t.cumsum(a, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 5), dt)], {"dim": 1}), Sample([arr(rng, (3, 4, 5), dt)], {"dim": -1}),
                            Sample([arr(rng, (6,), dt)], {"dim": 0})],
           dtypes=("float32", "float64", "float16", "int64", "int32", "bool")),
    OpSpec("cumsum_dtype", ["Cumsum"], lambda l, a: a.cumsum(0, dtype=l.float64), lambda t, a: a.cumsum(0, dtype=t.float64),
           lambda rng, dt: [Sample([arr(rng, (5, 2), dt)])], dtypes=("float32", "int32")),
    OpSpec("amax", ["Amax", "ReduceEqMask"], lambda l, a, **k: l.amax(a, **k), lambda t, a, **k: t.amax(a, **k),
           lambda rng, dt: _dims(rng, dt), dtypes=NUMERIC),
    OpSpec("amin", ["Amin", "ReduceEqMask"], lambda l, a, **k: a.amin(**k), lambda t, a, **k: a.amin(**k),
           lambda rng, dt: _dims(rng, dt), dtypes=NUMERIC),
    OpSpec("amax_ties", ["Amax", "ReduceEqMask"], lambda l, a, **k: a.amax(**k), lambda t, a, **k: a.amax(**k),
           lambda rng, dt: [Sample([_ties(rng, dt)], {"dim": 1}), Sample([_ties(rng, dt)])], fd=False),
    OpSpec("max_all_ties", ["Amax", "Amin", "ReduceEqMask"], lambda l, a: (a.max(), l.min(a)), lambda t, a: (a.max(), t.min(a)),
           lambda rng, dt: [Sample([_ties(rng, dt)])], fd=False),
    OpSpec("max_dim", ["MaxDim", "IndexMask"], lambda l, a, **k: a.max(**k), lambda t, a, **k: a.max(**k),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 5), dt)], {"dim": 1}), Sample([arr(rng, (3, 4, 5), dt)], {"dim": -1, "keepdim": True}),
                            Sample([arr(rng, (3, 4, 5), dt)], {"dim": 0}), Sample([arr(rng, (), dt)], {"dim": 0})],
           dtypes=NUMERIC),
    OpSpec("min_dim", ["MinDim", "IndexMask"], lambda l, a, **k: l.min(a, **k), lambda t, a, **k: t.min(a, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 5), dt)], {"dim": 2}), Sample([arr(rng, (3, 4, 5), dt)], {"dim": 1, "keepdim": True})],
           dtypes=NUMERIC),
    OpSpec("max_dim_ties", ["MaxDim", "MinDim", "IndexMask"], lambda l, a: (a.max(1), a.min(0)), lambda t, a: (a.max(1), a.min(0)),
           lambda rng, dt: [Sample([_ties(rng, dt)])], fd=False),
    OpSpec("max_dim_fields", ["MaxDim"], lambda l, a: (a.max(1).values, a.max(dim=1).indices),
           lambda t, a: (a.max(1).values, a.max(dim=1).indices), lambda rng, dt: [Sample([arr(rng, (3, 4), dt)])]),
    OpSpec("argmax", ["Argmax"], lambda l, a, **k: a.argmax(**k), lambda t, a, **k: a.argmax(**k),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 5), dt)]), Sample([arr(rng, (3, 4, 5), dt)], {"dim": 1}),
                            Sample([arr(rng, (3, 4, 5), dt)], {"dim": -1, "keepdim": True}),
                            Sample([arr(rng, (3, 4, 5), dt)], {"keepdim": True})],
           dtypes=NUMERIC, grad=False),
    OpSpec("argmin", ["Argmin"], lambda l, a, **k: l.argmin(a, **k), lambda t, a, **k: t.argmin(a, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 5), dt)]), Sample([arr(rng, (3, 4, 5), dt)], {"dim": 0})],
           dtypes=NUMERIC, grad=False),
    OpSpec("all", ["All"], lambda l, a, **k: a.all(**k), lambda t, a, **k: a.all(**k),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)]), Sample([arr(rng, (3, 4), dt)], {"dim": 1}),
                            Sample([arr(rng, (3, 4), dt)], {"dim": 0, "keepdim": True})],
           dtypes=("bool", "float32", "int64", "uint8"), grad=False),
    OpSpec("any", ["Any"], lambda l, a, **k: l.any(a, **k), lambda t, a, **k: t.any(a, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)]), Sample([arr(rng, (3, 4), dt)], {"dim": 1})],
           dtypes=("bool", "float32", "int64", "uint8"), grad=False),
]
