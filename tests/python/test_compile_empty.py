"""Empty tensors through every pass and the runtime of lucid.compile: small functions, each aimed
at one pass (simplify, const_fold, cse, bn_fold, epilogue, ew_group, scatter_cat, the memory plan,
the block interpreter), called on inputs with a 0 in each position the function allows, forward
and under grad mode (compiled backward): compiled == eager bit for bit, or the same error type
where eager raises.

Why: a graph of two or more ops on an empty input segfaulted (the arena of a plan holding only
empty values was never allocated), and a fused group with an empty output such as [3, 0] was
rejected (an empty tensor did not count as contiguous). The model set and the random-program
fuzzer cover empty batches; these cases put the 0 in the other dims too.
"""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from harness import assert_same_values

lucid.manual_seed(0)
W5 = nn.Linear(5, 3)
CONV = nn.Conv2d(3, 2, 3, padding=1)
BN = nn.BatchNorm2d(2).eval()

# name -> (fn, shapes): each shape has a 0 somewhere.
CASES = {
    "reduce_then_add": (lambda x: x.sum(1) + 1, [(0, 4), (3, 0), (0, 0)]),
    "ew_chain": (lambda x: (x * 2 + 1).relu().exp() - x, [(0, 4), (3, 0), (2, 0, 3), (0,)]),
    "mean_all": (lambda x: x.mean() * 2, [(0, 4), (3, 0)]),              # NaN, as eager
    "mean_dim": (lambda x: x.mean(1) * 2 + x.sum(1), [(0, 4), (3, 0)]),
    "simplify": (lambda x: (x * 1 + 0) / 1 - (-(-x)), [(0, 4), (3, 0)]),
    "cse": (lambda x: (x * 3).exp() + (x * 3).exp(), [(0, 4), (4, 0)]),
    "const_fold": (lambda x: x + lucid.zeros(0).sum() + lucid.ones(x.shape[1]) * 2, [(0, 4), (2, 0)]),
    "empty_consts": (lambda x: x * lucid.ones(0, 4) + lucid.zeros(0, 4), [(0, 4), (1, 4)]),
    "where_clamp": (lambda x: lucid.where(x > 0, x, x * 0.5).clamp(0, 1) * 3, [(0, 4), (4, 0)]),
    "matmul": (lambda x: (x @ x.transpose(-1, -2)).relu() + 1, [(0, 3), (3, 0), (2, 0, 4)]),
    "linear_relu": (lambda x: F.relu(W5(x)) * 2 + W5(x), [(0, 5), (2, 0, 5)]),
    "conv_bn_relu": (lambda x: F.relu(BN(CONV(x))) + 1, [(0, 3, 5, 5)]),
    "conv_relu_res": (lambda x: F.relu(CONV(x) + x[:, :2]) * 2, [(0, 3, 5, 5)]),
    "cat_softmax": (lambda x: lucid.cat([x, x * 2], 0).softmax(-1), [(0, 4), (2, 0)]),
    "chunk_cat": (lambda x: lucid.cat(list(x.chunk(2, 1))[::-1], 1) * 2, [(0, 4), (3, 4)]),
    "views": (lambda x: x.reshape(-1, 2).t().contiguous() * 2, [(0, 4), (4, 0)]),
    "amax": (lambda x: x.amax(1) + 1, [(0, 4), (3, 0)]),                  # eager raises on (3, 0)
    "layer_norm": (lambda x: F.layer_norm(x, (4,)) * 2 + 1, [(0, 4), (2, 0, 4)]),
    "inplace": (lambda x: x.clone().mul_(2).add_(1).relu_(), [(0, 4), (3, 0)]),
}
PARAMS = [pytest.param(name, shape, id=f"{name}-{'x'.join(map(str, shape))}")
          for name, (fn, shapes) in CASES.items() for shape in shapes]


def _run(fn, x):
    try:
        return fn(x), None
    except Exception as e:  # noqa: BLE001 - compared with the compiled call's
        return None, e


@pytest.mark.parametrize("name,shape", PARAMS)
def test_forward_with_an_empty_dim_equals_eager(name, shape):
    fn = CASES[name][0]
    cm = lucid.compile(fn)
    rng = np.random.default_rng(0)
    with lucid.no_grad():
        for call in range(3):  # traced, then the cached executable
            x = lucid.tensor(rng.standard_normal(shape).astype(np.float32))
            want, err = _run(fn, x)
            if err is not None:
                with pytest.raises(type(err)):
                    cm(x)
                return
            assert_same_values(cm(x), want, f"{name} call {call}")
    assert not cm.cache_info()["eager_only"], cm.cache_info()["eager_only"]


@pytest.mark.parametrize("name,shape", PARAMS)
def test_backward_with_an_empty_dim_equals_eager(name, shape):
    fn = CASES[name][0]
    params = [p for m in (W5, CONV, BN) for p in m.parameters()]
    cm = lucid.compile(fn)
    rng = np.random.default_rng(1)
    for call in range(3):
        a = rng.standard_normal(shape).astype(np.float32)
        results = []
        for f in (fn, cm):
            for p in params:
                p.grad = None
            x = lucid.tensor(a).requires_grad_(True)
            y, err = _run(f, x)
            if err is None:
                (y * 1.5).sum().backward()
            results.append((y, err, x.grad, [p.grad for p in params]))
        (ye, erre, gxe, gpe), (yc, errc, gxc, gpc) = results
        if erre is not None:
            assert errc is not None and type(errc) is type(erre), f"{name}: eager raised {erre!r}, compiled {errc!r}"
            return
        assert errc is None, f"{name}: compiled raised {errc!r}"
        assert_same_values(yc, ye, f"{name} call {call}: output")
        assert_same_values(gxc, gxe, f"{name} call {call}: input gradient")
        for k, (c, e) in enumerate(zip(gpc, gpe)):
            assert (c is None) == (e is None), f"{name} call {call}: parameter {k}"
            if e is not None:
                assert_same_values(c, e, f"{name} call {call}: parameter gradient {k}")
    assert not cm.cache_info()["eager_only"], cm.cache_info()["eager_only"]
