"""Targeted tests of the nn ops beyond the op-spec table: dropout masks and statistics, running
statistics of batch_norm, argument errors, 0-d indices, double backward, larger inputs that take
the parallel paths. Reference: PyTorch (CPU)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lucid
from harness import as_numpy

rng = np.random.default_rng(0)


def L(a, rg=False):
    t = lucid.tensor(a)
    return t.requires_grad_(True) if rg else t


def T(a, rg=False):
    t = torch.from_numpy(np.array(a, copy=True))
    return t.requires_grad_(True) if rg else t


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(as_numpy(a).astype(np.float64), as_numpy(b).astype(np.float64), atol=tol, rtol=tol)


# ---- dropout --------------------------------------------------------------------------------
def test_dropout_statistics_and_scale():
    x = lucid.tensor(np.ones((200, 100)))
    y = lucid.dropout(x, 0.3).numpy()
    frac = (y == 0).mean()
    assert abs(frac - 0.3) < 0.02
    np.testing.assert_allclose(y[y != 0], 1 / 0.7, rtol=1e-6)


def test_dropout_identity_cases_and_errors():
    x = L(rng.standard_normal((3, 4)))
    assert lucid.dropout(x, 0.5, training=False)._is_same(x)
    assert lucid.dropout(x, 0.0)._is_same(x)
    assert np.all(lucid.dropout(x, 1.0).numpy() == 0)
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError):
            lucid.dropout(x, p)


def test_dropout_grad_uses_same_mask():
    x = L(rng.standard_normal((50, 40)), True)
    y = lucid.dropout(x, 0.4)
    y.sum().backward()
    keep = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), keep / 0.6, rtol=1e-6)


def test_dropout_masks_differ_between_calls():
    x = lucid.tensor(np.ones((64, 64)))
    assert not np.array_equal(lucid.dropout(x, 0.5).numpy(), lucid.dropout(x, 0.5).numpy())


def test_dropout_mask_validation():
    x = L(rng.standard_normal((3, 4)))
    with pytest.raises(ValueError):
        lucid._C._nn_dropout(x, lucid.tensor(np.ones((4, 3), bool)), 0.5)
    with pytest.raises(TypeError):
        lucid._C._nn_dropout(x, lucid.tensor(np.ones((3, 4), np.int64)), 0.5)


def test_sdpa_dropout_with_given_mask_matches_manual_torch():
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 3))
    m = rng.random((2, 3, 5)) > 0.3
    lq, lk, lv = L(q, True), L(k, True), L(v, True)
    lo = lucid._C._nn_sdpa(lq, lk, lv, None, lucid.tensor(m), 0.3, False, None)
    tq, tk, tv = T(q, True), T(k, True), T(v, True)
    att = torch.softmax(tq @ tk.transpose(-1, -2) / 2.0, -1) * T(m).double() / 0.7
    to = att @ tv
    close(lo, to)
    w = rng.standard_normal(tuple(to.shape))
    (lo * L(w)).sum().backward()
    (to * T(w)).sum().backward()
    for a, b in ((lq, tq), (lk, tk), (lv, tv)):
        close(a.grad, b.grad)


def test_sdpa_dropout_draws_mask():
    q = L(rng.standard_normal((2, 8, 4)))
    a = lucid.scaled_dot_product_attention(q, q, q, dropout_p=0.5).numpy()
    b = lucid.scaled_dot_product_attention(q, q, q).numpy()
    assert not np.allclose(a, b)


# ---- batch_norm -----------------------------------------------------------------------------
def test_batch_norm_updates_running_stats_in_place():
    x = rng.standard_normal((6, 3, 4))
    rm, rv = L(np.zeros(3)), L(np.ones(3))
    v0 = rm._version
    lucid.batch_norm(L(x), rm, rv, training=True, momentum=0.1)
    assert rm._version > v0 and rv._version > v0
    trm, trv = T(np.zeros(3)), T(np.ones(3))
    F.batch_norm(T(x), trm, trv, training=True, momentum=0.1)
    close(rm, trm)
    close(rv, trv)


def test_batch_norm_training_grad_does_not_trip_version_check():
    x = L(rng.standard_normal((4, 3)), True)
    rm, rv = L(np.zeros(3)), L(np.ones(3))
    y = lucid.batch_norm(x, rm, rv, training=True)
    (y * y).sum().backward()
    assert x.grad is not None and not rm.requires_grad


def test_batch_norm_errors():
    x = L(rng.standard_normal((4, 3)))
    with pytest.raises(ValueError):
        lucid.batch_norm(x, None, None, training=False)
    with pytest.raises(ValueError):
        lucid.batch_norm(L(rng.standard_normal((1, 3))), None, None, training=True)
    with pytest.raises(ValueError):
        lucid.batch_norm(x, L(np.zeros(4)), L(np.ones(4)), training=True)


def test_norm_argument_errors():
    x = L(rng.standard_normal((2, 6, 3)))
    with pytest.raises(ValueError):
        lucid.layer_norm(x, (4,))
    with pytest.raises(ValueError):
        lucid.layer_norm(x, (3,), L(np.ones(4)))
    with pytest.raises(ValueError):
        lucid.group_norm(x, 4)
    with pytest.raises(TypeError):
        lucid.layer_norm(lucid.tensor(np.ones((2, 3), np.int64)), (3,))


def _norm_case(name, lib):
    Fn = lucid if lib is lucid else F
    if name == "bn_train":
        return lambda x, w, b: Fn.batch_norm(x, None, None, w, b, training=True), (4, 3, 5), (3,)
    if name == "bn_eval":
        rm, rv = np.linspace(-1, 1, 3), np.linspace(0.5, 2, 3)
        mk = L if lib is lucid else T
        return lambda x, w, b: Fn.batch_norm(x, mk(rm), mk(rv), w, b, training=False), (4, 3, 5), (3,)
    if name == "layer_norm":
        return lambda x, w, b: Fn.layer_norm(x, (2, 5), w, b), (3, 2, 5), (2, 5)
    if name == "group_norm":
        return lambda x, w, b: Fn.group_norm(x, 2, w, b), (2, 6, 3), (6,)
    return lambda x, w, b: Fn.rms_norm(x, (5,), w, 1e-5) * 1.0 + 0.0 * b.sum(), (3, 4, 5), (5,)


@pytest.mark.parametrize("name", ["bn_train", "bn_eval", "layer_norm", "group_norm", "rms_norm"])
def test_norm_double_backward_matches_torch(name):
    res = []
    for lib, mk, grad in ((lucid, L, lucid.autograd.grad), (torch, T, torch.autograd.grad)):
        f, xs, ws = _norm_case(name, lib)
        r = np.random.default_rng(5)
        x, w, b = mk(r.standard_normal(xs), True), mk(r.standard_normal(ws), True), mk(r.standard_normal(ws), True)
        y = f(x, w, b)
        wy = mk(r.standard_normal(xs))
        gx, gw = grad([(y * wy).sum()], [x, w], create_graph=True)
        z = (gx * gx).sum() + (gw * gw * gw).sum()
        res.append((gx, gw) + tuple(grad([z], [x, w, b], allow_unused=True)))
    for a, b in zip(res[0], res[1]):
        if b is None:
            assert a is None or np.allclose(as_numpy(a), 0)
        else:
            close(a, b, 1e-8)


@pytest.mark.parametrize("shape,ns", [((64, 33, 130), (130,)), ((16, 3000), (3000,))])
def test_layer_norm_large(shape, ns):
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(ns).astype(np.float32)
    lx, tx = L(x, True), T(x, True)
    lo, to = lucid.layer_norm(lx, ns, L(w)), F.layer_norm(tx, ns, T(w))
    close(lo, to, 2e-4)
    g = rng.standard_normal(shape).astype(np.float32)
    (lo * L(g)).sum().backward()
    (to * T(g)).sum().backward()
    close(lx.grad, tx.grad, 2e-3)


def test_batch_norm_large():
    x = rng.standard_normal((32, 16, 20, 20)).astype(np.float32)
    lx, tx = L(x, True), T(x, True)
    lw, tw = L(np.ones(16, np.float32), True), T(np.ones(16, np.float32), True)
    lo = lucid.batch_norm(lx, None, None, lw, None, training=True)
    to = F.batch_norm(tx, None, None, tw, None, training=True)
    close(lo, to, 2e-4)
    g = rng.standard_normal(x.shape).astype(np.float32)
    (lo * L(g)).sum().backward()
    (to * T(g)).sum().backward()
    close(lx.grad, tx.grad, 2e-3)
    close(lw.grad, tw.grad, 2e-2)


# ---- softmax --------------------------------------------------------------------------------
def test_softmax_dtype_and_default_dim():
    x = rng.standard_normal((2, 3)).astype(np.float32)
    lo = lucid.softmax(L(x), 1, dtype=lucid.float64)
    assert lo.dtype == lucid.float64
    close(lo, F.softmax(T(x), 1, dtype=torch.float64))
    close(lucid.softmax(L(x)), F.softmax(T(x), dim=1))
    with pytest.raises(TypeError):
        lucid.softmax(lucid.tensor(np.ones((2, 3), np.int64)), 1)
    with pytest.raises(IndexError):
        lucid.softmax(L(x), 2)


def test_softmax_double_backward():
    x = rng.standard_normal((3, 5))
    w = rng.standard_normal((3, 5))
    res = []
    for lib, mk, grad in ((lucid, L, lucid.autograd.grad), (torch, T, torch.autograd.grad)):
        xx = mk(x, True)
        y = (lib.log_softmax(xx, 1) * mk(w)).sum() + (lib.softmax(xx, 0) * mk(w)).sum()
        (g,) = grad([y], [xx], create_graph=True)
        (gg,) = grad([(g * g).sum()], [xx])
        res.append((g, gg))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


def test_softmax_large_and_extreme():
    x = (rng.standard_normal((8, 50000)) * 30).astype(np.float32)
    close(lucid.softmax(L(x), -1), F.softmax(T(x), -1), 1e-5)
    close(lucid.log_softmax(L(x), -1), F.log_softmax(T(x), -1), 1e-4)
    x = rng.standard_normal((40, 70, 30)).astype(np.float32)
    close(lucid.softmax(L(x), 1), F.softmax(T(x), 1), 1e-6)
    ext = np.array([[-np.inf, 0.0, 1.0], [1000.0, 1000.0, -1000.0]])
    close(lucid.softmax(L(ext), 1), F.softmax(T(ext), 1))


# ---- embedding ------------------------------------------------------------------------------
def test_embedding_index_errors_and_0d():
    w = L(rng.standard_normal((5, 3)))
    with pytest.raises(IndexError, match="embedding.*5.*5"):
        lucid.embedding(lucid.tensor([1, 5]), w)
    with pytest.raises(IndexError):
        lucid.embedding(lucid.tensor([-1]), w)
    with pytest.raises(TypeError):
        lucid.embedding(lucid.tensor([1.0]), w)
    idx = lucid.tensor([3]).reshape(())
    out = lucid.embedding(idx, w)
    assert out.shape == (3,)
    close(out, T(w.numpy()[3]))


def test_embedding_padding_grad_and_double_backward():
    w = rng.standard_normal((6, 4))
    idx = np.array([[0, 2, 2], [5, 2, 1]])
    lw, tw = L(w, True), T(w, True)
    gw = rng.standard_normal((2, 3, 4))
    lo = lucid.embedding(lucid.tensor(idx), lw, padding_idx=2)
    to = F.embedding(T(idx), tw, padding_idx=2)
    (lg,) = lucid.autograd.grad([(lo * L(gw)).sum()], [lw], create_graph=True)
    (tg,) = torch.autograd.grad([(to * T(gw)).sum()], [tw], create_graph=True)
    close(lg, tg)
    assert np.all(lg.detach().numpy()[2] == 0)


# ---- interpolate ----------------------------------------------------------------------------
def test_interpolate_errors():
    x = L(rng.standard_normal((1, 2, 3, 3)))
    with pytest.raises(ValueError):
        lucid.interpolate(x, size=4, mode="nearest", align_corners=True)
    with pytest.raises(ValueError):
        lucid.interpolate(x, size=4, scale_factor=2)
    with pytest.raises(ValueError):
        lucid.interpolate(x)
    with pytest.raises(NotImplementedError):
        lucid.interpolate(L(rng.standard_normal((2, 3, 3))), size=4, mode="bilinear")
    with pytest.raises(NotImplementedError):
        lucid.interpolate(x, size=4, mode="area")


def test_interpolate_double_backward_matches_torch():
    x = rng.standard_normal((1, 2, 3, 4))
    w = rng.standard_normal((1, 2, 5, 7))
    out = []
    for mk, Fn, grad in ((L, lucid, lucid.autograd.grad), (T, F, torch.autograd.grad)):
        xx = mk(x, True)
        y = (Fn.interpolate(xx, size=(5, 7), mode="bilinear") * mk(w)).sum()
        (g,) = grad([y], [xx], create_graph=True)
        out.append(g)
    close(out[0], out[1])


def test_interpolate_large_float32():
    x = rng.standard_normal((4, 8, 33, 47)).astype(np.float32)
    for kw in ({"scale_factor": 2, "mode": "bilinear"}, {"size": (20, 61), "mode": "bilinear", "align_corners": True},
               {"scale_factor": 3, "mode": "nearest"}, {"size": (50, 13), "mode": "nearest"}):
        close(lucid.interpolate(L(x), **kw), F.interpolate(T(x), **kw), 1e-5)


# ---- attention ------------------------------------------------------------------------------
def test_sdpa_errors_and_fully_masked_rows():
    q = L(rng.standard_normal((2, 3, 4)), True)
    with pytest.raises(ValueError):
        lucid.scaled_dot_product_attention(q, q, q, attn_mask=lucid.tensor(np.ones((3, 3), bool)), is_causal=True)
    with pytest.raises(ValueError):
        lucid.scaled_dot_product_attention(q, L(rng.standard_normal((2, 3, 5))), q)
    m = np.ones((3, 3), bool)
    m[0] = False
    out = lucid.scaled_dot_product_attention(q, q, q, attn_mask=lucid.tensor(m))
    assert np.all(out.detach().numpy()[:, 0] == 0)
    out.sum().backward()
    assert np.all(np.isfinite(q.grad.numpy()))


def test_sdpa_larger_float32():
    q = rng.standard_normal((2, 4, 40, 16)).astype(np.float32)
    k = rng.standard_normal((2, 4, 50, 16)).astype(np.float32)
    v = rng.standard_normal((2, 4, 50, 8)).astype(np.float32)
    lq, tq = L(q, True), T(q, True)
    lo = lucid.scaled_dot_product_attention(lq, L(k), L(v), is_causal=True)
    to = F.scaled_dot_product_attention(tq, T(k), T(v), is_causal=True)
    close(lo, to, 1e-5)
    (lo * lo).sum().backward()
    (to * to).sum().backward()
    close(lq.grad, tq.grad, 1e-4)


# ---- non-contiguous and empty inputs --------------------------------------------------------
def test_noncontiguous_inputs():
    x = rng.standard_normal((4, 5, 6))
    lx, tx = L(x).permute(2, 0, 1), T(x).permute(2, 0, 1)  # (6, 4, 5), strided
    close(lucid.softmax(lx, 1), F.softmax(tx, 1))
    close(lucid.log_softmax(lx, -1), F.log_softmax(tx, -1))
    close(lucid.layer_norm(lx, (5,)), F.layer_norm(tx, (5,)))
    close(lucid.group_norm(lx, 2), F.group_norm(tx, 2))
    close(lucid.batch_norm(lx, None, None, training=True), F.batch_norm(tx, None, None, training=True))
    t = rng.integers(0, 4, (6, 5))
    close(lucid.cross_entropy(lx, L(t)), F.cross_entropy(tx, T(t)))
    close(lucid.nll_loss(lx, L(t)), F.nll_loss(tx, T(t)))
    close(lucid.mse_loss(lx, lx * 0.5), F.mse_loss(tx, tx * 0.5))
    x4 = rng.standard_normal((2, 5, 4, 3))
    l4, t4 = L(x4).permute(0, 3, 1, 2), T(x4).permute(0, 3, 1, 2)
    close(lucid.interpolate(l4, size=(7, 5), mode="bilinear"), F.interpolate(t4, size=(7, 5), mode="bilinear"))
    w = rng.standard_normal((3, 7))
    lw, tw = L(w).permute(1, 0), T(w).permute(1, 0)
    idx = rng.integers(0, 7, (4,))
    close(lucid.embedding(L(idx), lw), F.embedding(T(idx), tw))
    q = rng.standard_normal((2, 4, 3))
    lq, tq = L(q).transpose(1, 2), T(q).transpose(1, 2)
    close(lucid.scaled_dot_product_attention(lq, lq, lq), F.scaled_dot_product_attention(tq, tq, tq))


def test_noncontiguous_grad_outputs():
    x = rng.standard_normal((3, 4))
    lx, tx = L(x, True), T(x, True)
    g = rng.standard_normal((4, 3))
    (lucid.layer_norm(lx, (4,)) * L(g).permute(1, 0)).sum().backward()
    (F.layer_norm(tx, (4,)) * T(g).permute(1, 0)).sum().backward()
    close(lx.grad, tx.grad)


def test_empty_inputs():
    e = np.zeros((0, 5))
    close(lucid.softmax(L(e), 1), F.softmax(T(e), 1))
    close(lucid.layer_norm(L(e), (5,)), F.layer_norm(T(e), (5,)))
    close(lucid.mse_loss(L(e), L(e), reduction="sum"), F.mse_loss(T(e), T(e), reduction="sum"))
    close(lucid.cross_entropy(L(e), L(np.zeros(0, np.int64)), reduction="sum"),
          F.cross_entropy(T(e), T(np.zeros(0, np.int64)), reduction="sum"))
    close(lucid.embedding(L(np.zeros((0,), np.int64)), L(rng.standard_normal((3, 2)))),
          F.embedding(T(np.zeros((0,), np.int64)), T(rng.standard_normal((3, 2)))))


def test_tensor_softmax_methods_with_dtype():
    x = rng.standard_normal((2, 3)).astype(np.float32)
    close(L(x).softmax(1, dtype=lucid.float64), T(x).softmax(1, dtype=torch.float64))
    close(L(x).log_softmax(dim=0), T(x).log_softmax(dim=0))


def test_dropout_inplace():
    a = L(np.ones((40, 50)), True)
    x = a * 1.0
    y = lucid.dropout(x, 0.5, inplace=True)
    assert y._is_same(x)
    keep = x.detach().numpy() != 0
    assert 0.3 < keep.mean() < 0.7
    x.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), keep * 2.0)


def test_channel_dropout_zeroes_whole_channels():
    x = lucid.ones(8, 16, 5, 5)
    y = lucid.dropout2d(x, 0.5).numpy()
    per_channel = y.reshape(8, 16, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert 0.2 < (per_channel[..., 0] == 0).mean() < 0.8
    y1 = lucid.dropout1d(lucid.ones(4, 6, 7), 0.5).numpy()
    assert np.all((y1 == 0).all(-1) | (y1 == 2.0).all(-1))
    x5 = x.reshape(8, 16, 5, 5, 1)
    assert lucid.dropout3d(x5, 0.5, training=False)._is_same(x5)
    with pytest.raises(ValueError):
        lucid.dropout2d(lucid.ones(3, 4), 0.5)


def test_alpha_dropout_keeps_moments():
    x = lucid.tensor(rng.standard_normal((400, 500)))
    y = lucid.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    assert lucid.alpha_dropout(x, 0.2)._is_same(x)  # training=False by default, like torch


def test_gumbel_softmax():
    logits = L(rng.standard_normal((6, 5)), True)
    y = lucid.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(y.detach().numpy().sum(-1), 1.0, rtol=1e-6)
    yh = lucid.gumbel_softmax(logits, hard=True)
    h = yh.detach().numpy()
    assert np.all(h.sum(-1) == 1) and set(np.unique(h)) <= {0.0, 1.0}
    (yh * L(rng.standard_normal((6, 5)))).sum().backward()
    assert logits.grad is not None and np.any(logits.grad.numpy() != 0)
