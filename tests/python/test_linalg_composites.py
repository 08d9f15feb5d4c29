"""lucid.linalg's composites (cross, diagonal, vander, tensorinv, tensorsolve) against
torch.linalg: values and gradients in float64, compiled == eager, and the bad arguments."""
import numpy as np
import pytest
import torch

import lucid

RNG = np.random.default_rng(0)


def _pair(shape):
    a = RNG.standard_normal(shape)  # Gaussian matrices of these sizes are invertible with probability 1
    return (lucid.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True))


def _check(lfn, tfn, *shapes):
    pairs = [_pair(s) for s in shapes]
    lo, to = lfn(*[p[0] for p in pairs]), tfn(*[p[1] for p in pairs])
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = RNG.standard_normal(tuple(to.shape))
    lg = lucid.autograd.grad([(lo * lucid.tensor(w)).sum()], [p[0] for p in pairs])
    tg = torch.autograd.grad([(to * torch.tensor(w)).sum()], [p[1] for p in pairs])
    for a, b in zip(lg, tg):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-10)
    f = lucid.compile(lambda *xs: lfn(*xs), strict=True)
    np.testing.assert_allclose(f(*[p[0].detach() for p in pairs]).numpy(), lo.detach().numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("sa,sb", [((4, 3), (4, 3)), ((2, 4, 3), (1, 4, 3)), ((1, 3), (5, 3))])
def test_cross(sa, sb):
    _check(lambda a, b: lucid.linalg.cross(a, b), lambda a, b: torch.linalg.cross(a, b), sa, sb)


@pytest.mark.parametrize("offset,d1,d2", [(0, -2, -1), (1, -2, -1), (-1, 0, 2), (2, 1, 0)])
def test_diagonal(offset, d1, d2):
    _check(lambda a: lucid.linalg.diagonal(a, offset=offset, dim1=d1, dim2=d2),
           lambda a: torch.linalg.diagonal(a, offset=offset, dim1=d1, dim2=d2), (3, 4, 5))


@pytest.mark.parametrize("shape,N", [((4,), None), ((2, 3), 5), ((2, 4), 2)])
def test_vander(shape, N):
    _check(lambda x: lucid.linalg.vander(x, N=N), lambda x: torch.linalg.vander(x, N=N), shape)


def test_vander_gradient_at_zero_is_finite_as_torch():
    lx, tx = lucid.tensor([0.0, 2.0], dtype=lucid.float64, requires_grad=True), torch.tensor([0.0, 2.0], dtype=torch.float64, requires_grad=True)
    lucid.linalg.vander(lx, N=4).sum().backward()
    torch.linalg.vander(tx, N=4).sum().backward()
    np.testing.assert_array_equal(lx.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("shape,ind", [((4, 6, 8, 3), 2), ((6, 2, 3), 1)])
def test_tensorinv(shape, ind):
    _check(lambda a: lucid.linalg.tensorinv(a, ind=ind), lambda a: torch.linalg.tensorinv(a, ind=ind), shape)


@pytest.mark.parametrize("sa,sb,dims", [((2, 3, 6), (2, 3), None), ((6, 2, 3), (2, 3), (0,)), ((2, 3, 2, 3), (2, 3), None)])
def test_tensorsolve(sa, sb, dims):
    _check(lambda a, b: lucid.linalg.tensorsolve(a, b, dims), lambda a, b: torch.linalg.tensorsolve(a, b, dims), sa, sb)


def test_bad_arguments_raise_as_torch():
    for lib in (torch, lucid):
        with pytest.raises(RuntimeError):
            lib.linalg.tensorinv(lib.ones(2, 3, 4), ind=1)
        with pytest.raises(RuntimeError):
            lib.linalg.tensorsolve(lib.ones(2, 3, 5), lib.ones(2, 3))
        with pytest.raises(RuntimeError):
            lib.linalg.vander(lib.tensor(1.0))
        with pytest.raises(RuntimeError):
            lib.linalg.cross(lib.ones(4, 2), lib.ones(4, 2))
        with pytest.raises(RuntimeError):
            lib.linalg.cross(lib.ones(3), lib.ones(4, 3))
        with pytest.raises(RuntimeError):
            lib.linalg.vander(lib.ones(3), N=1)
    with pytest.raises(RuntimeError, match="tensorinv: argument 'ind'"):
        lucid.linalg.tensorinv(lucid.ones(2, 2), ind=0)
