"""Spec rows for the elementwise math ops of elementwise_math.cpp (Tan, Asin, Acos, Atan, Sinh,
Cosh, Asinh, Acosh, Atanh, Erfc, Erfinv, Atan2, Lgamma, Digamma, Polygamma), each sampled inside its domain, plus the torch
aliases (arccos ...) and the in-place methods, which must give the same values. Integer inputs
promote to the default float."""
import numpy as np

from op_specs import OpSpec, Sample, arr

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int64", "int32")


def _in(low, high, shapes=((3, 4), (5, 37), ())):
    def gen(rng, dt):
        return [Sample([arr(rng, s, dt, low, high)]) for s in shapes]
    return gen


def U(name, op, low=-2.0, high=2.0, dtypes=FLOATS, **kw):
    return OpSpec(name, [op], lambda l, a: getattr(l, name)(a), lambda t, a: getattr(t, name)(a), _in(low, high),
                  dtypes=dtypes, **kw)


def _gamma(rng, dt):
    neg = arr(rng, (12,), dt, -3.9, -0.1)
    neg = neg[np.abs(neg - np.round(neg)) > 0.05]  # away from the poles
    return [Sample([arr(rng, (3, 4), dt, 0.2, 6.0)]), Sample([arr(rng, (40,), dt, 6.0, 40.0)]),
            Sample([neg], grad_args=[])]


def _polygamma(n):
    def gen(rng, dt):
        return [Sample([n, arr(rng, (3, 4), dt, 0.3, 5.0)]), Sample([n, arr(rng, (20,), dt, 5.0, 30.0)])]
    return gen


def _atan2(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)]),
            Sample([arr(rng, (2, 1, 4), dt), arr(rng, (3, 1), dt)])]


SPECS = [
    U("tan", "Tan", -1.2, 1.2, FLOATS + INTS),
    U("asin", "Asin", -0.9, 0.9),
    U("acos", "Acos", -0.9, 0.9),
    U("atan", "Atan", -3.0, 3.0, FLOATS + INTS),
    U("sinh", "Sinh", dtypes=FLOATS + INTS),
    U("cosh", "Cosh", dtypes=FLOATS + INTS),
    U("asinh", "Asinh", -3.0, 3.0, FLOATS + INTS),
    U("acosh", "Acosh", 1.2, 3.0),
    U("atanh", "Atanh", -0.9, 0.9),
    U("erfc", "Erfc", dtypes=FLOATS + INTS),
    U("erfinv", "Erfinv", -0.95, 0.95),
    OpSpec("erfinv_tails", ["Erfinv"], lambda l, a: l.erfinv(a), lambda t, a: t.erfinv(a),
           lambda rng, dt: [Sample([arr(rng, (40,), dt, 0.99, 0.999999)]), Sample([arr(rng, (40,), dt, -1.0, -0.99)])],
           dtypes=("float32", "float64"), grad=False),
    OpSpec("lgamma", ["Lgamma"], lambda l, a: l.lgamma(a), lambda t, a: t.lgamma(a), _gamma, dtypes=FLOATS + INTS),
    OpSpec("digamma", ["Digamma"], lambda l, a: l.digamma(a), lambda t, a: t.digamma(a), _gamma,
           dtypes=FLOATS + INTS),
    *[OpSpec(f"polygamma_{n}", ["Polygamma"], lambda l, n, a: l.polygamma(n, a), lambda t, n, a: t.polygamma(n, a),
             _polygamma(n), dtypes=("float32", "float64"), rtol=1e-5) for n in (0, 1, 2, 3)],
    OpSpec("polygamma_method", ["Polygamma"], lambda l, a: a.polygamma(2), lambda t, a: a.polygamma(2),
           _in(0.5, 4.0), dtypes=("float32", "float64")),
    OpSpec("atan2", ["Atan2"], lambda l, a, b: l.atan2(a, b), lambda t, a, b: t.atan2(a, b), _atan2,
           dtypes=FLOATS + INTS),
    OpSpec("arctan2_method", ["Atan2"], lambda l, a, b: a.arctan2(b), lambda t, a, b: a.arctan2(b), _atan2,
           dtypes=("float32", "float64")),
    OpSpec("arc_aliases", ["Asin", "Acos", "Atan", "Asinh", "Atanh"],
           lambda l, a: (l.arcsin(a), l.arccos(a), a.arctan(), l.arcsinh(a), a.arctanh()),
           lambda t, a: (t.arcsin(a), t.arccos(a), a.arctan(), t.arcsinh(a), a.arctanh()), _in(-0.9, 0.9),
           dtypes=("float32", "float64")),
    OpSpec("trig_inplace", ["Tan", "Sinh", "Atan"], lambda l, a: a.clone().sinh_().arctan_().tan_(),
           lambda t, a: a.clone().sinh_().arctan_().tan_(), _in(-1.0, 1.0), dtypes=("float32", "float64")),
]
