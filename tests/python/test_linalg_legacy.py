"""torch's pre-linalg functions (torch.cholesky, qr, svd, triangular_solve, nuclear_norm,
frobenius_norm; lucid/linalg/_legacy.py) against torch: values,
result types and field names, gradients in float64, Tensor methods, compiled == eager."""
import numpy as np
import pytest
import torch

import lucid

RNG = np.random.default_rng(0)


def _spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tri(n, upper, batch=()):
    a = RNG.standard_normal(batch + (n, n)) * 0.3 + 2 * np.eye(n)
    return np.triu(a) if upper else np.tril(a)


def _run(fn, arrays, weights_seed=1):
    """(outputs, gradients) of fn under torch and lucid, float64; gradient of a weighted sum."""
    res = []
    for lib in (torch, lucid):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        outs = fn(lib, *ts)
        outs = outs if isinstance(outs, tuple) else (outs,)
        w = np.random.default_rng(weights_seed)
        loss = sum((o * lib.tensor(w.standard_normal(tuple(o.shape)))).sum() for o in outs)
        res.append(([o.detach().numpy() for o in outs], [g.numpy() for g in lib.autograd.grad([loss], ts)], outs))
    return res


def _close(res, rtol=1e-9):
    (to, tg, _), (lo, lg, _) = res
    for a, b in zip(lo + lg, to + tg):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-10)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    _close(_run(lambda m, x: m.cholesky(x, upper), [_spd(4, (2,))]))


@pytest.mark.parametrize("some", [True, False])
def test_qr_matches_torch(some):
    a = RNG.standard_normal((5, 3))
    lt, tt = lucid.qr(lucid.tensor(a), some), torch.qr(torch.tensor(a), some)
    assert type(lt).__name__ == "qr" and lt._fields == ("Q", "R")
    for x, y in zip(lt, tt):  # signs follow LAPACK in both
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-9, atol=1e-10)
    if some:  # torch: not differentiable for complete mode with more rows than columns
        _close(_run(lambda m, x: m.qr(x, some), [a]))


@pytest.mark.parametrize("some", [True, False])
def test_svd_returns_v_not_vh(some):
    a = RNG.standard_normal((4, 3))
    l = lucid.svd(lucid.tensor(a), some)
    t = torch.svd(torch.tensor(a), some)
    assert l._fields == ("U", "S", "V") and l.U.shape == t.U.shape and l.V.shape == t.V.shape
    np.testing.assert_allclose(l.S.numpy(), t.S.numpy(), rtol=1e-12)
    k = min(a.shape)
    recon = (l.U[:, :k] * l.S) @ l.V[:, :k].mT
    np.testing.assert_allclose(recon.numpy(), a, rtol=1e-10, atol=1e-12)
    lz, tz = lucid.svd(lucid.tensor(a), compute_uv=False), torch.svd(torch.tensor(a), compute_uv=False)
    assert lz.U.shape == tz.U.shape and not lz.U.numpy().any() and lz.V.shape == tz.V.shape
    np.testing.assert_allclose(lz.S.numpy(), tz.S.numpy(), rtol=1e-12)


@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False), (False, False, False), (True, True, False),
                                                  (False, True, True)])
def test_triangular_solve(upper, transpose, unit):
    a, b = _tri(4, upper), RNG.standard_normal((4, 2))
    res = _run(lambda m, x, y: m.triangular_solve(x, y, upper, transpose, unit), [b, a])
    _close(res)
    assert res[1][2]._fields == ("solution", "cloned_coefficient")


def test_norms_and_tensor_methods_and_compile():
    a = RNG.standard_normal((2, 3, 4))
    _close(_run(lambda m, x: m.nuclear_norm(x[0]), [a]), rtol=1e-8)
    _close(_run(lambda m, x: m.frobenius_norm(x, (1, 2)), [a]))
    s = _spd(3)
    assert np.allclose(lucid.tensor(s).cholesky().numpy(), torch.tensor(s).cholesky().numpy())
    f = lucid.compile(lambda x, b: lucid.triangular_solve(b, lucid.cholesky(x), upper=False).solution, strict=True)
    b = RNG.standard_normal((3, 2))
    np.testing.assert_allclose(f(lucid.tensor(s), lucid.tensor(b)).numpy(),
                               np.linalg.solve(np.linalg.cholesky(s), b), rtol=1e-10)
