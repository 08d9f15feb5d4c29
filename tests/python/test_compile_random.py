"""Randomised differential test: random DAGs of supported ops over random shapes, compiled ==
eager. Each example builds a small program (a list of ops over earlier values, including views,
broadcasting, reductions, matmul and in-place writes), runs it eagerly and compiled (twice, so
the second run is the cached executable) on the same inputs, on every device of devices.DEVICES."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import lucid
from devices import DEVICES, to_numpy

UNARY = [
    ("relu", lambda a: a.relu()),
    ("exp", lambda a: (a * 0.1).exp()),
    ("tanh", lambda a: a.tanh()),
    ("sigmoid", lambda a: a.sigmoid()),
    ("neg", lambda a: -a),
    ("abs", lambda a: a.abs()),
    ("gelu", lambda a: lucid.nn.functional.gelu(a)),
    ("scale", lambda a: a * 0.5 + 1.0),
    ("softmax", lambda a: a.softmax(dim=-1)),
    ("transpose", lambda a: a.transpose(0, 1).contiguous().transpose(0, 1)),
    ("slice", lambda a: a[:, : max(1, a.shape[1] // 2)].sum(dim=1, keepdim=True) + a),
    ("cumsum", lambda a: a.cumsum(dim=1)),
    ("inplace", lambda a: (a * 1).mul_(2.0).add_(a)),
    ("setitem", lambda a: _setitem(a)),
]
BINARY = [
    ("add", lambda a, b: a + b),
    ("mul", lambda a, b: a * b),
    ("sub", lambda a, b: a - b),
    ("max", lambda a, b: lucid.maximum(a, b)),
    ("where", lambda a, b: lucid.where(a > b, a, b)),
    ("matmul", lambda a, b: a @ b.transpose(0, 1) @ b),
]
REDUCE = [
    ("rowsum", lambda a: a.sum(dim=1, keepdim=True)),
    ("colmean", lambda a: a.mean(dim=0, keepdim=True)),
    ("rowmax", lambda a: a.amax(dim=1, keepdim=True)),
]


def _setitem(a):
    b = a * 1
    b[0] = 0.0
    return b


@st.composite
def programs(draw):
    rows = draw(st.integers(1, 5))
    cols = draw(st.integers(1, 6))
    n_in = draw(st.integers(1, 3))
    steps = []
    n_vals = n_in
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["u", "b", "r"]))
        if kind == "u":
            steps.append(("u", draw(st.integers(0, len(UNARY) - 1)), draw(st.integers(0, n_vals - 1))))
        elif kind == "b":
            steps.append(("b", draw(st.integers(0, len(BINARY) - 1)), draw(st.integers(0, n_vals - 1)),
                          draw(st.integers(0, n_vals - 1))))
        else:
            steps.append(("r", draw(st.integers(0, len(REDUCE) - 1)), draw(st.integers(0, n_vals - 1))))
        n_vals += 1
    n_out = draw(st.integers(1, min(3, n_vals)))
    outs = draw(st.lists(st.integers(0, n_vals - 1), min_size=n_out, max_size=n_out))
    seed = draw(st.integers(0, 2**31 - 1))
    return rows, cols, n_in, steps, outs, seed


def run(steps, outs, inputs):
    vals = list(inputs)
    for s in steps:
        if s[0] == "u":
            v = UNARY[s[1]][1](vals[s[2]])
        elif s[0] == "b":
            v = BINARY[s[1]][1](vals[s[2]], vals[s[3]])
        else:
            # keep every value [rows, cols]: broadcast the reduction back
            v = REDUCE[s[1]][1](vals[s[2]]) + vals[s[2]] * 0
        vals.append(v)
    return tuple(vals[i] for i in outs)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_compiled_equal_eager(device, prog):
    rows, cols, n_in, steps, outs, seed = prog
    rng = np.random.default_rng(seed)
    inputs = [lucid.tensor(rng.standard_normal((rows, cols)).astype(np.float32)).to(device) for _ in range(n_in)]
    f = lucid.compile(lambda *xs: run(steps, outs, xs), strict=True)
    ref = run(steps, outs, inputs)
    for _ in range(2):
        got = f(*inputs)
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            assert g.device.type == device
            np.testing.assert_allclose(to_numpy(g), to_numpy(r), rtol=1e-5, atol=1e-5)
    assert f.cache_info()["entries"] == 1
