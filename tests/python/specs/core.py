"""Spec rows for the core ops (Copy, SumTo, Expand, Reshape, Add, Mul, Neg, Fill, Sub, Div,
Permute, Sum)."""
from op_specs import OpSpec, Sample, arr, positive

ALL = ("float32", "float64", "float16", "bfloat16", "int64", "int32")


def _bin(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)]),
            Sample([arr(rng, (2, 1, 4), dt), arr(rng, (3, 1), dt)]),
            Sample([arr(rng, (5,), dt), 2.5 if "float" in dt else 3])]


SPECS = [
    OpSpec("add", ["Add"], lambda l, a, b: l.add(a, b), lambda t, a, b: t.add(a, b), _bin, dtypes=ALL),
    OpSpec("mul", ["Mul"], lambda l, a, b: a * b, lambda t, a, b: a * b, _bin, dtypes=ALL),
    OpSpec("sub", ["Sub"], lambda l, a, b: a - b, lambda t, a, b: a - b, _bin, dtypes=ALL),
    OpSpec("div", ["Div"], lambda l, a, b: a / b, lambda t, a, b: a / b,
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), positive(rng, (3, 4), dt)]),
                            Sample([arr(rng, (2, 1, 4), dt), positive(rng, (3, 1), dt)])],
           dtypes=("float32", "float64", "float16", "bfloat16")),
    OpSpec("neg", ["Neg"], lambda l, a: -a, lambda t, a: -a,
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)])], dtypes=ALL),
    OpSpec("cast", ["Copy"], lambda l, a: l.cast(a, l.float64) * 1.0, lambda t, a: a.to(t.float64) * 1.0,
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)])], dtypes=("float32", "float16", "int32")),
    # A copy onto the input's own device (cpu -> cpu, cuda -> cuda); tests/python/test_cuda_devices.py
    # moves between devices.
    OpSpec("to_device", ["ToDevice"], lambda l, a: a._to_device(a._device, l.float64, False) * 1.0,
           lambda t, a: a.to(a.device, t.float64, copy=True) * 1.0,
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)])], dtypes=("float32", "float64", "int32")),
    OpSpec("expand", ["Expand", "SumTo"], lambda l, a: a.expand(2, 3, 4), lambda t, a: a.expand(2, 3, 4),
           lambda rng, dt: [Sample([arr(rng, (3, 1), dt)])]),
    OpSpec("reshape", ["Reshape"], lambda l, a: a.reshape(4, -1), lambda t, a: a.reshape(4, -1),
           lambda rng, dt: [Sample([arr(rng, (2, 3, 4), dt)])]),
    OpSpec("reshape_noncontig", ["Reshape", "Permute"], lambda l, a: a.permute(1, 0).reshape(-1),
           lambda t, a: a.permute(1, 0).reshape(-1), lambda rng, dt: [Sample([arr(rng, (3, 4), dt)])]),
    OpSpec("permute", ["Permute"], lambda l, a: a.permute(2, 0, 1) * 1.0, lambda t, a: a.permute(2, 0, 1) * 1.0,
           lambda rng, dt: [Sample([arr(rng, (2, 3, 4), dt)])]),
    OpSpec("sum", ["Sum"], lambda l, a, **k: l.sum(a, **k), lambda t, a, **k: t.sum(a, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 5), dt)]), Sample([arr(rng, (3, 4, 5), dt)], {"dim": 1}),
                            Sample([arr(rng, (3, 4, 5), dt)], {"dim": (0, 2), "keepdim": True})],
           dtypes=("float32", "float64", "int64")),
    OpSpec("as_strided", ["AsStrided"], lambda l, a: l.as_strided(a, (2, 3), (4, 1), 1) * 1.0,
           lambda t, a: t.as_strided(a, (2, 3), (4, 1), 1) * 1.0, lambda rng, dt: [Sample([arr(rng, (3, 4), dt)])]),
    OpSpec("as_strided_scatter", ["AsStridedScatter"], lambda l, a, b: l.as_strided_scatter(a, b, (2, 2), (4, 2), 1),
           lambda t, a, b: t.as_strided_scatter(a, b, (2, 2), (4, 2), 1),
           # torch 2.13's gradient for `input` is wrong (it keeps the overwritten region and zeroes
           # the rest); input 0's gradient is checked by test_autograd.py instead.
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), arr(rng, (2, 2), dt)], grad_args=[1])]),
    OpSpec("full", ["Fill"], lambda l: l.full((2, 3), 1.5), lambda t: t.full((2, 3), 1.5),
           lambda rng, dt: [Sample([])], dtypes=("float32",), grad=False),
]
