"""lucid.linalg and einsum beyond the spec rows (tests/python/specs/linalg_decomp.py): compiled
equals eager (forward, and training through every decomposition's VJP with make_step), torch's
errors (LinAlgError for singular / non-positive-definite input, argument errors naming the
argument and shape, malformed einsum equations) and zero-size batches against torch."""
import math

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from harness import assert_close


def _wc(shape, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, size=shape) + 4 * np.eye(shape[-1])
    return lucid.tensor(a.astype(np.float32))


def _rand(shape, seed=0):
    return lucid.tensor(np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(np.float32))


def _spd(n, batch=(), seed=0):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal(batch + (n, n))
    return lucid.tensor((m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(np.float32))


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=tol, rtol=tol)


L = lucid.linalg
FORWARD = {
    "solve": (lambda a, b: L.solve(a, b), lambda: (_wc((2, 3, 3)), _wc((2, 3, 3), 1)[..., :2])),
    "solve_vec": (lambda a, b: L.solve(a, b) * 2, lambda: (_wc((3, 3)), _wc((3, 3), 1)[0])),
    "solve_triangular": (lambda a, b: L.solve_triangular(a, b, upper=True), lambda: (_wc((3, 3)), _wc((3, 3), 1))),
    "inv": (lambda a: L.inv(a) + 1, lambda: (_wc((2, 4, 4)),)),
    "det": (lambda a: L.det(a) * 2, lambda: (_wc((2, 3, 3)),)),
    "slogdet": (lambda a: tuple(L.slogdet(a)), lambda: (_wc((3, 3)),)),
    "cholesky": (lambda a: L.cholesky(a), lambda: (_spd(4, (2,)),)),
    "qr": (lambda a: tuple(L.qr(a)), lambda: (_rand((5, 3)),)),
    "qr_complete": (lambda a: tuple(L.qr(a, mode="complete")), lambda: (_rand((3, 4)),)),
    "svd": (lambda a: tuple(L.svd(a, full_matrices=False)), lambda: (_rand((4, 3)),)),
    "svdvals": (lambda a: L.svdvals(a), lambda: (_rand((2, 3, 4)),)),
    "eigh": (lambda a: tuple(L.eigh(a)), lambda: (_spd(3),)),
    "eigvalsh": (lambda a: L.eigvalsh(a, UPLO="U"), lambda: (_spd(3, (2,)),)),
    "lstsq": (lambda a, b: L.lstsq(a, b).solution, lambda: (_rand((5, 3)), _rand((5, 2), 1))),
    "pinv": (lambda a: L.pinv(a), lambda: (_rand((4, 3)),)),
    "norms": (lambda a: (L.vector_norm(a, 3, -1), L.matrix_norm(a, "nuc"), L.matrix_norm(a, -math.inf), a.norm(),
                         L.norm(a, 2)), lambda: (_wc((3, 3)),)),
    "einsum": (lambda a, b: lucid.einsum("bij,bjk->bik", a, b) + lucid.einsum("bii->bi", a).sum(),
               lambda: (_wc((2, 3, 3)), _wc((2, 3, 3), 1))),
}


@pytest.mark.parametrize("name", list(FORWARD))
def test_compiled_equals_eager_without_fallback(name):
    fn, make = FORWARD[name]
    args = make()
    cf = lucid.compile(fn, strict=True)
    for _ in range(2):
        got, want = cf(*args), fn(*args)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            _close(g, w)
    assert cf.cache_info()["eager_only"] == {}


class _Decomp(nn.Module):
    """Uses every differentiable decomposition on one weight, so one compiled training step
    runs all their VJPs."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(3)
        self.w = nn.Parameter(lucid.tensor((rng.uniform(-1, 1, (4, 4)) + 4 * np.eye(4)).astype(np.float32)))

    def forward(self, x):
        w = self.w
        spd = w @ w.transpose(0, 1) + lucid.eye(4)
        q, r = L.qr(w)
        u, s, vh = L.svd(w)
        ev, V = L.eigh(spd)
        y = L.solve(w, x) + L.inv(w) @ x + L.cholesky(spd) @ x + L.det(w) * x + L.slogdet(w).logabsdet * x
        y = y + (q * q.sign()) @ x + r.abs() @ x + (u @ vh) @ x + s.sum() * x + (V * ev) @ V.transpose(0, 1) @ x
        y = y + L.lstsq(w[:, :3], x).solution.sum() + L.solve_triangular(w, x, upper=False)
        return lucid.einsum("ij,jk->ik", y, x.transpose(0, 1)) + L.matrix_norm(w, "nuc") + L.vector_norm(y, 3)


def test_training_step_through_every_vjp_matches_eager():
    m, ref = _Decomp(), _Decomp()
    step = lucid.compile.make_step(m, lambda out, y: ((out - y) ** 2).mean(), strict=True)
    rng = np.random.default_rng(4)
    for _ in range(2):
        x = lucid.tensor(rng.standard_normal((4, 2)).astype(np.float32))
        y = lucid.tensor(rng.standard_normal((4, 4)).astype(np.float32))
        loss = step(x, y)
        loss_ref = ((ref(x) - y) ** 2).mean()
        _close(loss, loss_ref, 1e-4)
        loss.backward()
        loss_ref.backward()
        np.testing.assert_allclose(m.w.grad.numpy(), ref.w.grad.numpy(), rtol=1e-3, atol=1e-3)
    assert step.cache_info()["eager_only"] == {}


def test_gradients_of_the_composite_match_torch():
    # the same composite in float64 against torch: a check of the VJPs together
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (4, 4)) + 4 * np.eye(4)
    la, ta = lucid.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)

    def f(lib, w):
        ln = lib.linalg
        q, r = ln.qr(w)
        u, s, vh = ln.svd(w)
        spd = w @ w.transpose(0, 1) + lib.eye(4, dtype=w.dtype)
        return (ln.det(w) + ln.inv(w).sum() + (r * r).sum() + (u @ vh).sum() + s.prod() + ln.cholesky(spd).sum()
                + ln.eigvalsh(spd).pow(2).sum() + ln.matrix_norm(w, 2) + lib.einsum("ii", w))

    (g,), (h,) = lucid.autograd.grad([f(lucid, la)], [la]), torch.autograd.grad([f(torch, ta)], [ta])
    assert_close(g, h, 1e-8, 1e-8, "composite gradient")


def test_strided_and_expanded_inputs_match_torch():
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (2, 4, 4)) + 4 * np.eye(4)
    la, ta = lucid.tensor(a), torch.tensor(a)
    assert_close(L.inv(la.transpose(-1, -2)), torch.linalg.inv(ta.transpose(-1, -2)), 1e-10, 1e-10, "transposed")
    assert_close(L.det(la[:, ::2, ::2]), torch.linalg.det(ta[:, ::2, ::2]), 1e-10, 1e-10, "sliced")
    assert_close(L.cholesky(lucid.eye(3).expand(5, 3, 3) * 4), torch.linalg.cholesky(torch.eye(3).expand(5, 3, 3) * 4),
                 1e-6, 1e-6, "expanded")


@pytest.mark.parametrize("upper", [False, True])
def test_solve_triangular_with_a_zero_diagonal_gives_inf_nan_as_torch(upper):
    a = np.array([[1.0, 0, 0], [2, 0, 0], [1, 2, 3]])
    a = a[::-1, ::-1].copy() if upper else a
    b = np.array([[1.0], [2], [3]])
    got = L.solve_triangular(lucid.tensor(a), lucid.tensor(b), upper=upper)
    want = torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=upper)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---- errors ---------------------------------------------------------------------------------
def test_linalg_error_is_a_runtime_error():
    assert issubclass(lucid.linalg.LinAlgError, RuntimeError)


@pytest.mark.parametrize("fn", [lambda a: L.inv(a), lambda a: L.solve(a, lucid.ones(3, 1))], ids=["inv", "solve"])
def test_singular_matrix_raises_linalg_error(fn):
    a = lucid.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]])
    with pytest.raises(lucid.linalg.LinAlgError, match="singular"):
        fn(a)
    with pytest.raises(lucid.linalg.LinAlgError, match="singular"):
        lucid.compile(fn)(a)  # the compiled call raises the same type


def test_batched_singular_names_the_batch_element():
    a = lucid.stack([lucid.eye(2), lucid.zeros(2, 2)])
    with pytest.raises(lucid.linalg.LinAlgError, match=r"\(Batch element 1\).*singular"):
        L.inv(a)


def test_cholesky_of_non_pd_names_the_minor():
    a = lucid.tensor([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(lucid.linalg.LinAlgError, match="leading minor of order 2 is not positive-definite"):
        L.cholesky(a)
    with pytest.raises(torch.linalg.LinAlgError, match="leading minor of order 2"):
        torch.linalg.cholesky(torch.tensor(a.numpy()))


@pytest.mark.parametrize("fn,name", [(L.inv, "linalg.inv"), (L.det, "linalg.det"), (L.cholesky, "linalg.cholesky"),
                                     (L.eigh, "linalg.eigh"), (lambda a: L.solve(a, lucid.ones(2)), "linalg.solve")])
def test_non_square_names_argument_and_shape(fn, name):
    with pytest.raises(ValueError, match=rf"{name}: argument 'A' .*square.*2 by 3.*\[2, 3\]"):
        fn(lucid.ones(2, 3))


def test_bad_dtype_and_rank_name_the_argument():
    with pytest.raises(TypeError, match="linalg.inv: argument 'A' expected a float32 or float64 tensor, got int64"):
        L.inv(lucid.ones(2, 2, dtype=lucid.int64))
    with pytest.raises(ValueError, match="linalg.qr: argument 'A' expected a tensor with at least 2 dimensions"):
        L.qr(lucid.ones(3))
    with pytest.raises(ValueError, match="linalg.solve: argument 'B' expected 3 rows"):
        L.solve(lucid.eye(3), lucid.ones(2, 2))
    with pytest.raises(ValueError, match="argument 'mode'"):
        L.qr(lucid.eye(3), mode="full")
    with pytest.raises(ValueError, match="argument 'UPLO'"):
        L.eigh(lucid.eye(3), UPLO="X")


def test_qr_backward_errors_as_torch():
    a = lucid.randn(4, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > ncols"):
        L.qr(a, mode="complete").Q.sum().backward()


@pytest.mark.parametrize("equation,shapes,match", [
    ("ij,jk->ik", [(2, 3)], "names 2 operand"),
    ("ij,jk", [(2, 3), (3, 4), (4,)], "names 2 operand"),
    ("ijk", [(2, 3)], "subscripts 'ijk' for 3 dims, but it has 2"),
    ("i1", [(2, 3)], "invalid subscript '1'"),
    ("ij->k", [(2, 3)], "output subscript 'k', which appears in no input"),
    ("ij->ii", [(2, 3)], "output subscript 'i' more than once"),
    ("ij,jk", [(2, 3), (4, 5)], "size 4 for subscript 'j', which has size 3"),
    ("i->i->i", [(2,)], "more than one '->'"),
    ("...i...", [(2, 3)], "more than one '...'"),
])
def test_malformed_einsum_names_the_argument(equation, shapes, match):
    with pytest.raises(ValueError, match="einsum\\(\\).*" + match):
        lucid.einsum(equation, *[lucid.ones(*s) for s in shapes])


def test_einsum_operand_type_error():
    with pytest.raises(TypeError, match="einsum\\(\\): operand 1 expected a Tensor"):
        lucid.einsum("i,i", lucid.ones(2), [1.0, 2.0])


# ---- zero-size batches ----------------------------------------------------------------------
ZERO = {
    "inv": lambda m, a: m.linalg.inv(a),
    "det": lambda m, a: m.linalg.det(a),
    "slogdet": lambda m, a: tuple(m.linalg.slogdet(a)),
    "solve": lambda m, a: m.linalg.solve(a, a[..., :1]),
    "cholesky": lambda m, a: m.linalg.cholesky(a),
    "qr": lambda m, a: tuple(m.linalg.qr(a)),
    "svdvals": lambda m, a: m.linalg.svdvals(a),
    "eigvalsh": lambda m, a: m.linalg.eigvalsh(a),
    "matrix_norm": lambda m, a: m.linalg.matrix_norm(a),
    "einsum": lambda m, a: m.einsum("bij,bjk->bik", a, a),
}


@pytest.mark.parametrize("name", list(ZERO))
@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0)], ids=["empty_batch", "empty_matrix"])
def test_zero_size_as_torch(name, shape):
    lo = ZERO[name](lucid, lucid.zeros(*shape))
    to = ZERO[name](torch, torch.zeros(*shape))
    lo = lo if isinstance(lo, tuple) else (lo,)
    to = to if isinstance(to, tuple) else (to,)
    for a, b in zip(lo, to):
        assert_close(a, b, 1e-6, 1e-6, name)


# ---- double backward: the VJPs are written with differentiable ops ---------------------------
SECOND = {
    "inv": lambda m, a: m.linalg.inv(a),
    "det": lambda m, a: m.linalg.det(a),
    "slogdet": lambda m, a: m.linalg.slogdet(a).logabsdet,
    "solve": lambda m, a: m.linalg.solve(a, a[:, :1] * 2 + 1),
    "cholesky": lambda m, a: m.linalg.cholesky(a @ a.transpose(0, 1)),
    "eigvalsh": lambda m, a: m.linalg.eigvalsh(a + a.transpose(0, 1)),
    "svdvals": lambda m, a: m.linalg.svdvals(a),
    "qr": lambda m, a: m.linalg.qr(a).R.abs(),
}


@pytest.mark.parametrize("name", list(SECOND))
def test_second_order_gradient_matches_torch(name):
    rng = np.random.default_rng(6)
    a = rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)
    w = rng.standard_normal((3, 3))
    out = []
    for m, t in ((lucid, lucid.tensor(a, requires_grad=True)), (torch, torch.tensor(a, requires_grad=True))):
        y = SECOND[name](m, t)
        grad = lucid.autograd.grad if m is lucid else torch.autograd.grad
        (g,) = grad([(y * y).sum()], [t], create_graph=True)
        (h,) = grad([(g * m.tensor(w)).sum()], [t])
        out.append(h)
    assert_close(out[0], out[1], 1e-7, 1e-7, f"{name} second-order gradient")
