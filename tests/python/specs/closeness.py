"""Spec rows for isclose / allclose (composites of elementwise ops, no OpDef of their own):
tolerances, broadcasting, infinities and NaN (equal_nan), integer and bool inputs."""
import numpy as np

from op_specs import OpSpec, Sample, arr

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8")


def _pairs(rng, dt):
    a = arr(rng, (4, 5), dt)
    b = a.copy()
    if "float" in dt:
        b = b + rng.choice([0.0, 1e-9, 1e-6, 1e-4, 1e-2], size=b.shape).astype(b.dtype)
        a[0, 0], b[0, 0] = np.inf, np.inf
        a[0, 1], b[0, 1] = np.inf, -np.inf
        a[1, 0], b[1, 0] = np.nan, np.nan
        a[1, 1], b[1, 1] = np.nan, 1.0
    else:
        b = (b + rng.integers(0, 2, size=b.shape)).astype(b.dtype)
    return [Sample([a, b]), Sample([a, b], {"rtol": 1e-3, "atol": 1e-5}), Sample([a, b], {"equal_nan": True}),
            Sample([a, b], {"rtol": 0.0, "atol": 0.0}), Sample([a, b], {"atol": 1.0}), Sample([a, b[0].copy()])]


def _bool(rng, dt):
    a = rng.integers(0, 2, size=(3, 4)).astype(bool)
    b = rng.integers(0, 2, size=(3, 4)).astype(bool)
    return [Sample([a, b]), Sample([a, b], {"atol": 1.0})]


SPECS = [
    OpSpec("isclose", [], lambda l, a, b, **k: l.isclose(a, b, **k), lambda t, a, b, **k: t.isclose(a, b, **k), _pairs,
           dtypes=DTYPES, grad=False),
    OpSpec("isclose_method", [], lambda l, a, b, **k: a.isclose(b, 1e-2, **{n: v for n, v in k.items() if n != "rtol"}),
           lambda t, a, b, **k: a.isclose(b, 1e-2, **{n: v for n, v in k.items() if n != "rtol"}), _pairs,
           dtypes=("float32",), grad=False),
    OpSpec("isclose_bool", [], lambda l, a, b, **k: l.isclose(a, b, **k), lambda t, a, b, **k: t.isclose(a, b, **k), _bool,
           dtypes=("bool",), grad=False),
    OpSpec("allclose", [], lambda l, a, b, **k: (l.allclose(a, b, **k), a.allclose(a), l.allclose(a, a + 0, equal_nan=True)),
           lambda t, a, b, **k: (t.allclose(a, b, **k), a.allclose(a), t.allclose(a, a + 0, equal_nan=True)), _pairs,
           dtypes=("float32", "float64", "int64"), grad=False),
]
