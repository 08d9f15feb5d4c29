"""Targeted loss tests: target validation and error messages, 0-d targets, all-ignored batches,
legacy size_average/reduce, and larger inputs on the parallel paths. Reference: PyTorch (CPU)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lucid
from harness import as_numpy

rng = np.random.default_rng(3)


def L(a, rg=False):
    t = lucid.tensor(a)
    return t.requires_grad_(True) if rg else t


def T(a, rg=False):
    t = torch.from_numpy(np.array(a, copy=True))
    return t.requires_grad_(True) if rg else t


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(as_numpy(a).astype(np.float64), as_numpy(b).astype(np.float64), atol=tol, rtol=tol)


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_class_index_out_of_range(fn):
    x = L(rng.standard_normal((3, 5)))
    with pytest.raises(IndexError, match=rf"{fn}.*7.*5 classes"):
        getattr(lucid, fn)(x, lucid.tensor([0, 7, 1]))
    with pytest.raises(IndexError, match=fn):
        getattr(lucid, fn)(x, lucid.tensor([0, -3, 1]))
    # ignore_index itself is allowed even when out of range
    getattr(lucid, fn)(x, lucid.tensor([0, -100, 1]))


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_target_shape_and_dtype_errors(fn):
    x = L(rng.standard_normal((3, 5)))
    with pytest.raises(ValueError, match=fn):
        getattr(lucid, fn)(x, lucid.tensor([0, 1]))
    with pytest.raises(ValueError, match=fn):
        getattr(lucid, fn)(x, lucid.tensor([0, 1, 2]), weight=L(np.ones(4)))
    with pytest.raises(ValueError, match="reduction"):
        getattr(lucid, fn)(x, lucid.tensor([0, 1, 2]), reduction="avg")
    with pytest.raises(TypeError, match=fn):
        getattr(lucid, fn)(lucid.tensor([[1, 2]]), lucid.tensor([0]))


def test_probability_target_errors():
    x = L(rng.standard_normal((3, 5)))
    with pytest.raises(ValueError, match="cross_entropy"):
        lucid.cross_entropy(x, L(rng.random((3, 4))))
    with pytest.raises(TypeError, match="nll_loss"):
        lucid.nll_loss(x, L(rng.random((3, 5))))
    with pytest.raises(ValueError, match="label_smoothing"):
        lucid.cross_entropy(x, lucid.tensor([0, 1, 2]), label_smoothing=1.5)


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_1d_input_0d_target(fn):
    x = rng.standard_normal(5)
    lx, tx = L(x, True), T(x, True)
    lo = getattr(lucid, fn)(lx, lucid.tensor([2]).reshape(()))
    to = getattr(F, fn)(tx, torch.tensor(2))
    close(lo, to)
    lo.backward()
    to.backward()
    close(lx.grad, tx.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_all_ignored(reduction):
    x = rng.standard_normal((3, 4))
    t = np.full(3, -100)
    for fn in ("cross_entropy", "nll_loss"):
        lx, tx = L(x, True), T(x, True)
        lo, to = getattr(lucid, fn)(lx, L(t), reduction=reduction), getattr(F, fn)(tx, T(t), reduction=reduction)
        close(lo, to)
        lo.sum().backward()
        to.sum().backward()
        close(lx.grad, tx.grad)


def test_bce_errors():
    with pytest.raises(ValueError, match="between 0 and 1"):
        lucid.binary_cross_entropy(L(np.array([0.5, 1.5])), L(np.array([0.0, 1.0])))
    with pytest.raises(ValueError, match="binary_cross_entropy"):
        lucid.binary_cross_entropy(L(np.array([0.5, 0.5])), L(np.array([0.0, 1.0, 1.0])))
    with pytest.raises(ValueError, match="binary_cross_entropy_with_logits"):
        lucid.binary_cross_entropy_with_logits(L(np.zeros((2, 3))), L(np.zeros((3, 2))))
    with pytest.raises(TypeError):
        lucid.mse_loss(lucid.tensor([1, 2]), lucid.tensor([1, 2]))


def test_bce_clamps_log():
    x, t = np.array([0.0, 1.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0, 0.0])
    close(lucid.binary_cross_entropy(L(x), L(t), reduction="none"), F.binary_cross_entropy(T(x), T(t), reduction="none"))


def test_legacy_size_average_reduce():
    x, t = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for kw in ({"size_average": False}, {"reduce": False}, {"size_average": True, "reduce": True}):
        close(lucid.mse_loss(L(x), L(t), **kw), F.mse_loss(T(x), T(t), **kw))
        close(lucid.l1_loss(L(x), L(t), **kw), F.l1_loss(T(x), T(t), **kw))


def test_mixed_dtype_promotes():
    x, t = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4))
    lo = lucid.mse_loss(L(x), L(t))
    assert lo.dtype == lucid.float64


def test_cross_entropy_large_float32():
    x = rng.standard_normal((256, 1000)).astype(np.float32)
    t = rng.integers(0, 1000, 256)
    w = rng.random(1000).astype(np.float32) + 0.5
    for kw in ({}, {"weight": w, "label_smoothing": 0.1}, {"reduction": "none"}):
        lkw = {k: (L(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        tkw = {k: (T(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        lx, tx = L(x, True), T(x, True)
        lo, to = lucid.cross_entropy(lx, L(t), **lkw), F.cross_entropy(tx, T(t), **tkw)
        close(lo, to, 1e-5)
        lo.sum().backward()
        to.sum().backward()
        close(lx.grad, tx.grad, 1e-6)


def test_cross_entropy_spatial_large():
    x = rng.standard_normal((4, 21, 30, 30)).astype(np.float32)
    t = rng.integers(0, 21, (4, 30, 30))
    t[0, :5] = 255
    lx, tx = L(x, True), T(x, True)
    lo, to = lucid.cross_entropy(lx, L(t), ignore_index=255), F.cross_entropy(tx, T(t), ignore_index=255)
    close(lo, to, 1e-5)
    lo.backward()
    to.backward()
    close(lx.grad, tx.grad, 1e-7)


def test_pointwise_losses_large():
    x, t = rng.standard_normal((300, 400)).astype(np.float32), rng.standard_normal((300, 400)).astype(np.float32)
    for fn in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
        lx, tx = L(x, True), T(x, True)
        lo, to = getattr(lucid, fn)(lx, L(t)), getattr(F, fn)(tx, T(t))
        close(lo, to, 1e-5)
        lo.backward()
        to.backward()
        close(lx.grad, tx.grad, 1e-7)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_double_backward(reduction, weighted):
    x, t = rng.random((3, 4)) * 0.8 + 0.1, rng.random((3, 4))
    w = rng.random(4) + 0.5
    kw_l = {"weight": L(w)} if weighted else {}
    kw_t = {"weight": T(w)} if weighted else {}
    _double_backward(lambda a, b, **k: lucid.binary_cross_entropy(a, b, **kw_l, **k),
                     lambda a, b, **k: F.binary_cross_entropy(a, b, **kw_t, **k), x, t_grad=t, reduction=reduction)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("pos", [False, True])
def test_bce_with_logits_double_backward(reduction, pos):
    x, t = rng.standard_normal((3, 4)), rng.random((3, 4))
    pw, w = rng.random(4) + 0.5, rng.random((3, 4)) + 0.5
    kw_l = {"pos_weight": L(pw), "weight": L(w)} if pos else {}
    kw_t = {"pos_weight": T(pw), "weight": T(w)} if pos else {}
    _double_backward(lambda a, b, **k: lucid.binary_cross_entropy_with_logits(a, b, **kw_l, **k),
                     lambda a, b, **k: F.binary_cross_entropy_with_logits(a, b, **kw_t, **k), x, t_grad=t,
                     reduction=reduction)


@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_double_backward(log_target):
    x = np.log(rng.random((3, 4)) + 0.1)
    t = np.log(rng.random((3, 4)) + 0.1) if log_target else rng.random((3, 4)) + 0.1
    _double_backward(lucid.kl_div, F.kl_div, x, t_grad=t, reduction="sum", log_target=log_target)
def _double_backward(fn_l, fn_t, x, extra_l=(), extra_t=(), t_grad=None, **kw):
    """Second-order gradients of sum(grad_x(loss)^2) (+ target grads) vs torch."""
    res = []
    for lib, mk, grad, fn, extra in ((lucid, L, lucid.autograd.grad, fn_l, extra_l),
                                     (torch, T, torch.autograd.grad, fn_t, extra_t)):
        xx = mk(x, True)
        ins = [xx]
        tt = None
        if t_grad is not None:
            tt = mk(t_grad, True)
            ins.append(tt)
        loss = fn(xx, *([tt] if tt is not None else []), *extra, **kw)
        w = mk(np.linspace(0.5, 1.5, int(np.prod(loss.shape))).reshape(tuple(loss.shape)))
        gs = grad([(loss * w).sum()], ins, create_graph=True)
        z = sum((g * g * g).sum() for g in gs)
        res.append(list(gs) + list(grad([z], ins, allow_unused=True)))
    for a, b in zip(*res):
        if b is None or b._is_zerotensor():
            assert a is None or np.allclose(as_numpy(a), 0)
        else:
            close(a, b, 1e-8)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("fn", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_pointwise_double_backward(fn, reduction):
    x, t = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    _double_backward(getattr(lucid, fn), getattr(F, fn), x, t_grad=t, reduction=reduction)


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.2},
                                {"ignore_index": 1}, {"weight": True, "label_smoothing": 0.1}])
def test_cross_entropy_double_backward(kw):
    x = rng.standard_normal((4, 3, 2))
    t = rng.integers(0, 3, (4, 2))
    t[0, 0] = 1
    kl, kt = dict(kw), dict(kw)
    if kw.get("weight"):
        w = rng.random(3) + 0.5
        kl["weight"], kt["weight"] = L(w), T(w)
    res = []
    for lib, mk, grad, fn, k in ((lucid, L, lucid.autograd.grad, lucid.cross_entropy, kl),
                                 (torch, T, torch.autograd.grad, F.cross_entropy, kt)):
        xx = mk(x, True)
        loss = fn(xx, mk(t), **k)
        (g,) = grad([(loss * loss).sum()], [xx], create_graph=True)
        (gg,) = grad([(g * g * g).sum()], [xx])
        res.append((g, gg))
    close(res[0][0], res[1][0], 1e-8)
    close(res[0][1], res[1][1], 1e-8)


@pytest.mark.parametrize("kw", [{}, {"reduction": "none"}, {"label_smoothing": 0.3, "reduction": "sum"}])
def test_cross_entropy_prob_double_backward(kw):
    x = rng.standard_normal((3, 4))
    p = rng.random((3, 4))
    p /= p.sum(1, keepdims=True)
    _double_backward(lambda a, b, **k: lucid.cross_entropy(a, b, **k), lambda a, b, **k: F.cross_entropy(a, b, **k),
                     x, t_grad=p, **kw)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_double_backward(reduction):
    x = rng.standard_normal((5, 4))
    t = rng.integers(0, 4, 5)
    w = rng.random(4) + 0.5
    res = []
    for mk, grad, fn in ((L, lucid.autograd.grad, lucid.nll_loss), (T, torch.autograd.grad, F.nll_loss)):
        xx = mk(x, True)
        loss = fn(xx * xx, mk(t), weight=mk(w), reduction=reduction)
        (g,) = grad([(loss * loss).sum()], [xx], create_graph=True)
        (gg,) = grad([(g * g).sum()], [xx])
        res.append((g, gg))
    close(res[0][0], res[1][0], 1e-8)
    close(res[0][1], res[1][1], 1e-8)


@pytest.mark.parametrize("dtype", ["int32", "int8", "float32", "bool"])
def test_wrong_target_dtype_is_a_runtime_error_as_torch(dtype):
    # torch raises RuntimeError ("expected target dtype to be Long or Byte"); lucid's DTypeError is
    # both that and a TypeError, so code written for either catches it
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    tgt = np.array([1, 2, 0]).astype(dtype)
    with pytest.raises(RuntimeError):
        torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(tgt))
    with pytest.raises(RuntimeError, match="cross_entropy: argument 'target'") as ei:
        lucid.nn.functional.cross_entropy(lucid.tensor(x), lucid.tensor(tgt))
    assert isinstance(ei.value, TypeError) and isinstance(ei.value, lucid.DTypeError)
