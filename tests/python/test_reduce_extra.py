"""Reduce family: bad input (errors name the op), special values (NaN/inf), empty reductions,
named-tuple results, double backward and thread-count independence, all compared with PyTorch."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import lucid
from harness import assert_close


def _pair(a):
    return lucid.tensor(a), torch.from_numpy(np.array(a))


OUT_OF_RANGE = [
    ("mean", lambda l, x: l.mean(x, 3)),
    ("var", lambda l, x: l.var(x, -4)),
    ("std", lambda l, x: x.std((0, 5))),
    ("prod", lambda l, x: l.prod(x, 3)),
    ("logsumexp", lambda l, x: l.logsumexp(x, 7)),
    ("cumsum", lambda l, x: l.cumsum(x, 3)),
    ("amax", lambda l, x: l.amax(x, 3)),
    ("amin", lambda l, x: x.amin(-4)),
    ("max", lambda l, x: l.max(x, 3)),
    ("min", lambda l, x: x.min(3)),
    ("argmax", lambda l, x: l.argmax(x, 3)),
    ("argmin", lambda l, x: x.argmin(-5)),
    ("all", lambda l, x: l.all(x, 3)),
    ("any", lambda l, x: x.any(3)),
]


@pytest.mark.parametrize("name,fn", OUT_OF_RANGE, ids=[n for n, _ in OUT_OF_RANGE])
def test_dim_out_of_range_raises_index_error_naming_op(name, fn):
    x = lucid.tensor(np.ones((2, 3, 4), np.float32))
    with pytest.raises(IndexError, match=rf"^{name}: .*dim"):
        fn(lucid, x)
    with pytest.raises(IndexError):  # PyTorch agrees that it is an error of the same kind
        fn(torch, torch.ones(2, 3, 4))


def test_duplicate_dims_raise():
    x = lucid.ones(2, 3)
    with pytest.raises(ValueError, match="mean: dim 1 appears multiple times"):
        lucid.mean(x, (1, -1))
    with pytest.raises(ValueError, match="amax"):
        lucid.amax(x, (0, 0))


def test_integer_mean_and_var_raise_type_error():
    x = lucid.tensor([1, 2, 3])
    with pytest.raises(TypeError, match="mean"):
        x.mean()
    with pytest.raises(TypeError, match="var"):
        lucid.var(x)
    with pytest.raises(TypeError, match="std"):
        x.std()
    assert lucid.mean(x, dtype=lucid.float32).item() == pytest.approx(2.0)


def test_bad_argument_types():
    x = lucid.ones(2, 3)
    with pytest.raises(TypeError, match="cumsum: argument 'dim'"):
        lucid.cumsum(x, 1.5)
    with pytest.raises(TypeError, match="dim"):
        x.mean("a")
    with pytest.raises(TypeError, match="var"):
        lucid.var(x, 1, unbiased=True, correction=0)
    with pytest.raises(TypeError, match="logsumexp"):
        lucid.logsumexp(x, None)


def test_empty_reductions_match_torch():
    a = np.zeros((0, 3), np.float32)
    l, t = _pair(a)
    assert_close(l.sum(0), t.sum(0), 0, 0)
    assert_close(l.mean(0), t.mean(0), 0, 0)
    assert_close(l.prod(0), t.prod(0), 0, 0)
    assert_close(l.all(0), t.all(0), 0, 0)
    assert_close(l.any(0), t.any(0), 0, 0)
    assert_close(l.amax(1), t.amax(1), 0, 0)  # reduces a non-empty dim
    for fn in (lambda m, x: m.amax(x, 0), lambda m, x: x.max(0), lambda m, x: x.argmax(), lambda m, x: x.max()):
        with pytest.raises(IndexError):
            fn(lucid, l)
        with pytest.raises((IndexError, RuntimeError)):
            fn(torch, t)


def test_nan_and_inf_propagation_match_torch():
    a = np.array([[1.0, np.nan, 3.0, np.nan], [-np.inf, -np.inf, -np.inf, -np.inf], [np.inf, 1.0, 2.0, np.inf],
                  [2.0, 5.0, 5.0, -1.0]], np.float32)
    l, t = _pair(a)
    for fn in (lambda x: x.amax(1), lambda x: x.amin(1), lambda x: x.max(1).values, lambda x: x.max(1).indices,
               lambda x: x.min(1).indices, lambda x: x.argmax(1), lambda x: x.argmin(1), lambda x: x.argmax(),
               lambda x: x.logsumexp(1), lambda x: x.sum(1), lambda x: x.mean(1), lambda x: x.cumsum(1),
               lambda x: x.prod(1), lambda x: x.var(1), lambda x: x.max(), lambda x: x.all(1), lambda x: x.any(1)):
        assert_close(fn(l), fn(t), 1e-6, 1e-6)


def test_max_min_results_are_named_tuples():
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    l, t = _pair(a)
    r = lucid.max(l, 1, keepdim=True)
    values, indices = r
    assert r.values is values and r.indices is indices
    assert tuple(values.shape) == (3, 1) and indices.dtype == lucid.int64
    assert_close(r.values, torch.max(t, 1, keepdim=True).values, 0, 0)
    r = l.min(dim=0)
    assert_close(r.indices, t.min(dim=0).indices, 0, 0)
    assert_close(l.max(), t.max(), 0, 0)


def test_var_std_double_backward_matches_torch():
    a = np.random.default_rng(3).standard_normal((3, 5))
    for name in ("var", "std", "mean", "logsumexp", "amax"):
        x = lucid.tensor(a, requires_grad=True)
        xt = torch.tensor(a, requires_grad=True)
        y = getattr(x, name)(1)
        yt = getattr(xt, name)(1)
        (g,) = lucid.autograd.grad([(y * y).sum()], [x], create_graph=True)
        (gt,) = torch.autograd.grad([(yt * yt).sum()], [xt], create_graph=True)
        assert_close(g, gt, 1e-10, 1e-8, f"{name} grad")
        (gg,) = lucid.autograd.grad([(g * g).sum()], [x])
        (ggt,) = torch.autograd.grad([(gt * gt).sum()], [xt])
        assert_close(gg, ggt, 1e-9, 1e-7, f"{name} second derivative")


def test_prod_double_backward_is_an_explicit_error():
    x = lucid.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = lucid.autograd.grad([x.prod()], [x], create_graph=True)
    assert_close(g, torch.tensor([6.0, 3.0, 2.0]), 0, 0)
    with pytest.raises(NotImplementedError, match="prod"):
        lucid.autograd.grad([g.sum()], [x])


def test_float32_accuracy_on_long_rows():
    # Values with a large common offset: naive float32 accumulation loses digits here.
    a = (np.random.default_rng(5).standard_normal(1_000_000) + 1000).astype(np.float32)
    l, t = _pair(a)
    ref = a.astype(np.float64)
    assert abs(l.mean().item() - ref.mean()) < 1e-4
    assert abs(l.var().item() - ref.var(ddof=1)) / ref.var(ddof=1) < 1e-5
    assert_close(l.std(), t.double().std().float(), 1e-6, 1e-5)


_THREAD_SCRIPT = r"""
import numpy as np, lucid
lucid.manual_seed(123)
x = lucid.randn(3, 70001)
y = lucid.rand(200001, dtype=lucid.float64)
out = [x, y, x.sum(1), x.mean(), x.var(1), x.std(), x.logsumexp(1), x.amax(), x.argmax(), x.prod(0),
       x.cumsum(1), lucid.randint(0, 1000, (100000,)), lucid.zeros(50000).bernoulli_(0.3),
       lucid.empty(3, 40000).normal_(1, 2), lucid.randperm(100000), x.amax(0), x.logsumexp(0), x.var(0),
       x.max(1).indices, lucid.randn(5001, dtype=lucid.float64)]
np.savez(__import__("sys").argv[1], *[o.numpy() for o in out])
"""


def test_results_do_not_depend_on_thread_count(tmp_path):
    files = []
    for n in ("1", "2", "3"):
        env = dict(os.environ, OMP_NUM_THREADS=n)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        f = tmp_path / f"out{n}.npz"
        subprocess.run([sys.executable, "-c", _THREAD_SCRIPT, str(f)], check=True, env=env)
        files.append(np.load(f))
    for k in files[0].files:
        for other in files[1:]:
            np.testing.assert_array_equal(files[0][k], other[k], err_msg=k)


def test_max_min_with_a_tensor_are_elementwise():
    a = np.array([1.0, 5.0, np.nan, 3.0], np.float32)
    b = np.array([2.0, 1.0, 0.0, 3.0], np.float32)
    (la, ta), (lb, tb) = _pair(a), _pair(b)
    assert_close(lucid.max(la, lb), torch.max(ta, tb), 0, 0)
    assert_close(la.min(lb), ta.min(tb), 0, 0)
