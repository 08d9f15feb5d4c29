"""Targeted linalg tests beyond the op-spec rows: the oneDNN float32/bfloat16 paths of the
backward kernels (the spec grad checks run in float64, which uses the direct loops), strided and
broadcast operands, larger shapes, the primitive cache, the fused epilogue and argument errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lucid
from harness import as_numpy

RNG = np.random.default_rng(123)


def _pair(shape, dtype=np.float32, requires_grad=False):
    a = RNG.standard_normal(shape).astype(dtype)
    lt, tt = lucid.tensor(a), torch.from_numpy(a.copy())
    if requires_grad:
        lt.requires_grad_(True)
        tt.requires_grad_(True)
    return lt, tt


def _close(a, b, tol):
    np.testing.assert_allclose(as_numpy(a).astype(np.float64), as_numpy(b).astype(np.float64), atol=tol, rtol=tol)


def _check_grads(lfn, tfn, shapes, tol=2e-4, dtype=np.float32):
    pairs = [_pair(s, dtype, True) if s is not None else (None, None) for s in shapes]
    lo = lfn(*[p[0] for p in pairs])
    to = tfn(*[p[1] for p in pairs])
    _close(lo, to, tol)
    w = RNG.standard_normal(tuple(to.shape)).astype(dtype)
    (lo * lucid.tensor(w)).sum().backward()
    (to * torch.from_numpy(w)).sum().backward()
    for i, (lp, tp) in enumerate(pairs):
        if lp is None:
            continue
        assert lp.grad is not None, f"no gradient for input {i}"
        _close(lp.grad, tp.grad, tol * 10)


CONV2D = [((2, 8, 12, 11), (16, 8, 3, 3), (16,), {}),
          ((2, 8, 12, 11), (16, 4, 3, 3), (16,), {"stride": 2, "padding": 1, "groups": 2}),
          ((1, 16, 10, 10), (16, 1, 3, 3), None, {"padding": "same", "groups": 16}),
          ((2, 6, 9, 9), (4, 6, 4, 2), (4,), {"padding": "same"}),
          ((1, 4, 13, 9), (6, 2, 3, 3), (6,), {"dilation": (2, 3), "stride": (1, 2), "padding": (2, 1), "groups": 2})]


@pytest.mark.parametrize("xs,ws,bs,kw", CONV2D)
def test_conv2d_float32_grads(xs, ws, bs, kw):
    _check_grads(lambda x, w, b: lucid.conv2d(x, w, b, **kw), lambda x, w, b: F.conv2d(x, w, b, **kw), [xs, ws, bs])


def test_conv1d_float32_grads():
    kw = {"stride": 2, "padding": 2, "dilation": 2, "groups": 3}
    _check_grads(lambda x, w, b: lucid.conv1d(x, w, b, **kw), lambda x, w, b: F.conv1d(x, w, b, **kw),
                 [(2, 6, 20), (9, 2, 3), (9,)])


@pytest.mark.parametrize("xs,ws,kw", [((2, 8, 6, 5), (8, 4, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
                                      ((1, 6, 5, 5), (6, 2, 4, 3), {"stride": (2, 1), "groups": 3, "dilation": (1, 2)}),
                                      ((2, 4, 7), (4, 3, 5), {"stride": 3, "padding": 2, "output_padding": 2})])
def test_conv_transpose_float32_grads(xs, ws, kw):
    f_l = lucid.conv_transpose1d if len(xs) == 3 else lucid.conv_transpose2d
    f_t = F.conv_transpose1d if len(xs) == 3 else F.conv_transpose2d
    oc = ws[1] * kw.get("groups", 1)
    _check_grads(lambda x, w, b: f_l(x, w, b, **kw), lambda x, w, b: f_t(x, w, b, **kw), [xs, ws, (oc,)])


def test_conv2d_bfloat16_forward():
    x, tx = _pair((2, 16, 14, 14))
    w, tw = _pair((32, 16, 3, 3))
    lo = lucid.conv2d(x.bfloat16(), w.bfloat16(), padding=1).float()
    to = F.conv2d(tx.bfloat16(), tw.bfloat16(), padding=1).float()
    _close(lo, to, 0.15)


def test_conv2d_noncontiguous_input():
    x, tx = _pair((2, 9, 9, 4))
    w, tw = _pair((5, 4, 3, 3))
    lo = lucid.conv2d(x.permute(0, 3, 1, 2), w, stride=2)
    to = F.conv2d(tx.permute(0, 3, 1, 2), tw, stride=2)
    _close(lo, to, 1e-4)


def test_conv2d_double_backward_float32():
    x, tx = _pair((1, 4, 7, 7), requires_grad=True)
    w, tw = _pair((6, 4, 3, 3), requires_grad=True)
    gl = lucid.autograd.grad([lucid.conv2d(x, w, padding=1).sum()],
                             [x], create_graph=True)[0]
    gt = torch.autograd.grad([F.conv2d(tx, tw, padding=1).sum()], [tx], create_graph=True)[0]
    _close(gl, gt, 1e-4)
    wl = lucid.autograd.grad([(gl * gl).sum()], [w])[0]
    wt = torch.autograd.grad([(gt * gt).sum()], [tw])[0]
    _close(wl, wt, 1e-3)


# ---- matmul ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb", [((64, 96), (96, 80)), ((3, 33, 17), (17, 5)), ((4, 1, 8, 16), (3, 16, 7)),
                                   ((16,), (4, 16, 9)), ((5, 7, 16), (16,)), ((1, 40), (40, 1))])
def test_matmul_float32_grads(sa, sb):
    _check_grads(lambda a, b: lucid.matmul(a, b), lambda a, b: torch.matmul(a, b), [sa, sb], tol=1e-4)


def test_matmul_strided_operands():
    a, ta = _pair((6, 32, 20))
    b, tb = _pair((6, 24, 32))
    # a^T and b^T views (column-major matrices), and a batch-permuted view.
    _close(a.transpose(-1, -2) @ b.transpose(-1, -2), ta.transpose(-1, -2) @ tb.transpose(-1, -2), 1e-4)
    _close(b.permute(1, 0, 2).transpose(0, 1) @ a, tb.permute(1, 0, 2).transpose(0, 1) @ ta, 1e-4)
    c, tc = _pair((32, 5))
    _close(a.transpose(-1, -2) @ c.expand(6, 32, 5), ta.transpose(-1, -2) @ tc.expand(6, 32, 5), 1e-4)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_matmul_low_precision(dtype):
    a, ta = _pair((2, 24, 40))
    b, tb = _pair((40, 16))
    lo = (a.to(getattr(lucid, dtype)) @ b.to(getattr(lucid, dtype))).float()
    to = (ta.to(getattr(torch, dtype)) @ tb.to(getattr(torch, dtype))).float()
    _close(lo, to, 0.1)


def test_matmul_float64_large_blocks():
    a, ta = _pair((70, 300), np.float64)
    b, tb = _pair((300, 530), np.float64)
    _close(a @ b, ta @ tb, 1e-10)


def test_matmul_double_backward():
    a, ta = _pair((3, 4), np.float64, True)
    b, tb = _pair((4, 5), np.float64, True)
    ga = lucid.autograd.grad([(a @ b).sum()], [a], create_graph=True)[0]
    gt = torch.autograd.grad([(ta @ tb).sum()], [ta], create_graph=True)[0]
    _close(ga, gt, 1e-12)
    _close(lucid.autograd.grad([(ga * ga).sum()], [b])[0], torch.autograd.grad([(gt * gt).sum()], [tb])[0], 1e-10)


def test_matmul_primitive_cache_reused():
    a, _ = _pair((13, 29))
    b, _ = _pair((29, 41))
    a @ b
    n = lucid._C._matmul_cache_size()
    for _ in range(5):
        a @ b
    assert lucid._C._matmul_cache_size() == n


def test_linear_fused_float32_epilogues():
    x, tx = _pair((7, 33, 64))
    w, tw = _pair((48, 64))
    b, tb = _pair((48,))
    r, tr = _pair((7, 33, 48))
    lo = lucid._C._linear_fused(x, w, b, r, activation="gelu")
    to = F.gelu(F.linear(tx, tw, tb)) + tr
    _close(lo, to, 1e-4)
    lo = lucid._C._linear_fused(x, w, b, r, activation="relu", residual_first=True)
    _close(lo, torch.relu(F.linear(tx, tw, tb) + tr), 1e-4)


def test_rmatmul_and_method():
    a, ta = _pair((3, 4))
    b, tb = _pair((4, 2))
    _close(a.matmul(b), ta.matmul(tb), 1e-5)
    _close(b.__rmatmul__(a), ta @ tb, 1e-5)
    assert a.__matmul__(3) is NotImplemented


# ---- errors ---------------------------------------------------------------------------------
def Z(shape, dtype=None):
    return lucid.full(shape, 0.0, dtype=dtype)


def _raises(exc, fn, *words):
    with pytest.raises(exc) as e:
        fn()
    for w in words:
        assert w in str(e.value), f"{w!r} not in {e.value}"


def test_conv_errors():
    x = Z((1, 3, 8, 8))
    _raises(ValueError, lambda: lucid.conv2d(x, Z((4, 2, 3, 3))), "conv2d", "'input'", "expected 2 channels", "got 3")
    _raises(ValueError, lambda: lucid.conv2d(Z((1, 4, 8, 8)), Z((3, 2, 3, 3)), groups=2),
            "conv2d", "'groups'", "out_channels 3")
    _raises(ValueError, lambda: lucid.conv2d(x, Z((6, 1, 3, 3)), groups=2), "conv2d", "'groups'",
            "in_channels 3")
    _raises(ValueError, lambda: lucid.conv2d(Z((1, 1, 3, 8, 8)), Z((4, 3, 3, 3))), "conv2d",
            "'input'", "4-D", "got 5-D")
    _raises(ValueError, lambda: lucid.conv2d(x, Z((4, 3, 3))), "conv2d", "'weight'", "4-D", "got 3-D")
    _raises(ValueError, lambda: lucid.conv2d(x, Z((4, 3, 3, 3)), Z((5,))), "conv2d", "'bias'",
            "[4]", "[5]")
    _raises(ValueError, lambda: lucid.conv2d(x, Z((4, 3, 9, 9))), "conv2d", "kernel size")
    _raises(ValueError, lambda: lucid.conv2d(x, Z((4, 3, 3, 3)), stride=2, padding="same"), "conv2d", "same")
    _raises(ValueError, lambda: lucid.conv2d(x, Z((4, 3, 3, 3)), padding="full"), "conv2d", "'padding'")
    _raises(TypeError, lambda: lucid.conv2d(x, Z((4, 3, 3, 3), dtype=lucid.float64)), "conv2d", "'weight'",
            "float32", "float64")
    _raises(ValueError, lambda: lucid.conv1d(Z((1, 3, 8)), Z((4, 2, 3))), "conv1d", "'input'",
            "expected 2 channels")
    _raises(ValueError, lambda: lucid.conv_transpose2d(x, Z((4, 2, 3, 3))), "conv_transpose2d", "'input'",
            "expected 4 channels", "got 3")
    _raises(ValueError, lambda: lucid.conv_transpose2d(x, Z((3, 2, 3, 3)), stride=2, output_padding=2),
            "conv_transpose2d", "'output_padding'")


def test_matmul_errors():
    _raises(ValueError, lambda: lucid.matmul(Z((2, 3)), Z((4, 5))), "matmul", "'other'", "3", "4")
    _raises(ValueError, lambda: lucid.matmul(Z((2, 2, 3)), Z((3, 3, 4))), "matmul")
    _raises(TypeError, lambda: lucid.matmul(Z((2, 3)), Z((3, 4), dtype=lucid.float64)), "matmul",
            "float32", "float64")
    _raises(ValueError, lambda: lucid.matmul(Z(()), Z((3,))), "matmul")
    _raises(ValueError, lambda: lucid.bmm(Z((2, 3)), Z((2, 3, 4))), "bmm", "'input'", "3-D")
    _raises(ValueError, lambda: lucid.mm(Z((2, 3, 4)), Z((4, 4))), "mm", "'input'", "2-D")
    _raises(ValueError, lambda: lucid.linear(Z((2, 3)), Z((4, 5))), "linear", "'input'", "5", "3")
    _raises(ValueError, lambda: lucid.linear(Z((2, 3)), Z((4, 3)), Z((3,))), "linear",
            "'bias'", "[4]")
    _raises(ValueError, lambda: lucid.addmm(Z((3, 3)), Z((2, 3)), Z((3, 4))), "addmm",
            "'input'")


def test_pool_errors():
    x = Z((1, 2, 6, 6))
    _raises(ValueError, lambda: lucid.max_pool2d(x, 3, padding=2), "max_pool2d", "'padding'", "half")
    _raises(ValueError, lambda: lucid.max_pool2d(Z((6, 6)), 2), "max_pool2d", "'input'", "got 2-D")
    _raises(ValueError, lambda: lucid.avg_pool2d(x, 7), "avg_pool2d", "too small")
    _raises(ValueError, lambda: lucid.avg_pool2d(x, 2, stride=0), "avg_pool2d", "'stride'")
    _raises(ValueError, lambda: lucid.adaptive_avg_pool2d(x, (2, 3, 4)), "adaptive_avg_pool2d", "'output_size'")


def test_max_pool_large_random_vs_torch():
    x, tx = _pair((2, 8, 33, 31), requires_grad=True)
    lo, li = lucid.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    to, ti = F.max_pool2d(tx, 3, stride=2, padding=1, return_indices=True)
    _close(lo, to, 0)
    np.testing.assert_array_equal(li.numpy(), ti.numpy())
    g = RNG.standard_normal(tuple(to.shape)).astype(np.float32)
    (lo * lucid.tensor(g)).sum().backward()
    (to * torch.from_numpy(g)).sum().backward()
    _close(x.grad, tx.grad, 1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k,s,cm", [(2, 2, False), (3, 2, False), (3, 1, False), (2, 3, True), ((2, 3), (1, 2), False)])
def test_max_pool_without_padding_ties_and_nan_vs_torch(k, s, cm, dtype):
    # No padding and every window inside the plane: the row-vectorised path. Ties (values rounded
    # to a few levels) pick the first maximum in window order, a NaN wins its window; indices,
    # values and gradients must equal torch's.
    x = np.round(RNG.standard_normal((2, 5, 13, 12)) * 2).astype(dtype)
    x.reshape(-1)[RNG.choice(x.size, 9, replace=False)] = np.nan
    lx, tx = lucid.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    lo, li = lucid.max_pool2d(lx, k, stride=s, ceil_mode=cm, return_indices=True)
    to, ti = F.max_pool2d(tx, k, stride=s, ceil_mode=cm, return_indices=True)
    np.testing.assert_array_equal(li.numpy(), ti.numpy())
    np.testing.assert_array_equal(lo.detach().numpy(), to.detach().numpy())  # NaN positions too
    g = RNG.standard_normal(tuple(to.shape)).astype(dtype)
    (lo * lucid.tensor(g)).sum().backward()
    (to * torch.from_numpy(g)).sum().backward()
    np.testing.assert_array_equal(lx.grad.numpy(), tx.grad.numpy())


# ---- seeded random sweeps against torch (forward and first-order grads) --------------------
def _fwd_bwd(lfn, tfn, arrays, tol):
    ls = [lucid.tensor(a) for a in arrays]
    ts = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    for t in ls:
        t.requires_grad_(True)
    to = tfn(*ts)
    lo = lfn(*ls)
    _close(lo, to, tol)
    g = np.asarray(RNG.standard_normal(tuple(to.shape))).astype(arrays[0].dtype)
    lg = lucid.autograd.grad([lo], ls, [lucid.tensor(g)])
    tg = torch.autograd.grad([to], ts, [torch.from_numpy(g)])
    for a, b in zip(lg, tg):
        _close(a, b, tol * 10)


@pytest.mark.parametrize("seed", range(6))
def test_conv_random_configs(seed):
    import random
    r = random.Random(seed)
    for _ in range(8):
        dt = r.choice([np.float32, np.float64])
        G = r.choice([1, 2, 3])
        C, OC = G * r.randint(1, 3), G * r.randint(1, 3)
        kh, kw = r.randint(1, 4), r.randint(1, 4)
        s, d = (r.randint(1, 3), r.randint(1, 3)), (r.randint(1, 2), r.randint(1, 2))
        p = (r.randint(0, 2), r.randint(0, 2))
        H, W = r.randint(1, 8) + d[0] * (kh - 1), r.randint(1, 8) + d[1] * (kw - 1)
        x = RNG.standard_normal((r.randint(1, 2), C, H, W)).astype(dt)
        tol = 1e-4 if dt == np.float32 else 1e-10
        w = RNG.standard_normal((OC, C // G, kh, kw)).astype(dt)
        kw_ = dict(stride=s, padding=p, dilation=d, groups=G)
        _fwd_bwd(lambda a, b: lucid.conv2d(a, b, **kw_), lambda a, b: F.conv2d(a, b, **kw_), [x, w], tol)
        op = (r.randint(0, s[0] - 1), r.randint(0, s[1] - 1))
        wt = RNG.standard_normal((C, OC // G, kh, kw)).astype(dt)
        kt = dict(stride=s, padding=p, output_padding=op, groups=G, dilation=d)
        try:
            F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(wt), **kt)
        except RuntimeError:
            continue
        _fwd_bwd(lambda a, b: lucid.conv_transpose2d(a, b, **kt), lambda a, b: F.conv_transpose2d(a, b, **kt), [x, wt], tol)


@pytest.mark.parametrize("seed", range(4))
def test_pool_random_configs(seed):
    import random
    r = random.Random(100 + seed)
    for _ in range(15):
        dt = r.choice([np.float32, np.float64])
        k = (r.randint(1, 4), r.randint(1, 4))
        s = (r.randint(1, 3), r.randint(1, 3))
        p = (r.randint(0, k[0] // 2), r.randint(0, k[1] // 2))
        cm, cip = r.random() < 0.5, r.random() < 0.5
        H, W = r.randint(k[0], 10), r.randint(k[1], 10)
        x = (RNG.permutation(2 * 3 * H * W).reshape(2, 3, H, W) * 0.01).astype(dt)
        tol = 1e-5 if dt == np.float32 else 1e-10
        try:
            F.max_pool2d(torch.from_numpy(x), k, s, p, 1, cm)
        except RuntimeError:
            continue
        _fwd_bwd(lambda a: lucid.max_pool2d(a, k, s, p, 1, cm), lambda a: F.max_pool2d(a, k, s, p, 1, cm), [x], tol)
        _fwd_bwd(lambda a: lucid.avg_pool2d(a, k, s, p, cm, cip), lambda a: F.avg_pool2d(a, k, s, p, cm, cip), [x], tol)
        o = (r.randint(1, H + 1), r.randint(1, W + 1))
        _fwd_bwd(lambda a: lucid.adaptive_avg_pool2d(a, o), lambda a: F.adaptive_avg_pool2d(a, o), [x], tol)


def test_conv_primitive_cache_reused():
    x, _ = _pair((1, 16, 9, 9))
    w, _ = _pair((16, 16, 3, 3))
    lucid.conv2d(x, w, padding=1)
    n = lucid._C._conv_cache_size()
    for _ in range(4):
        lucid.conv2d(x, w, padding=1)
    assert lucid._C._conv_cache_size() == n


@pytest.mark.parametrize("act,first", [("relu", False), ("gelu", False), ("relu", True), ("gelu_tanh", True)])
def test_conv_fused_float32_blocked(act, first):
    # 32 channels: oneDNN's blocked layout; a trailing residual runs as a separate add, a leading one
    # as oneDNN's sum post-op.
    x, tx = _pair((2, 32, 10, 10))
    w, tw = _pair((32, 32, 3, 3))
    b, tb = _pair((32,))
    r, tr = _pair((2, 32, 10, 10))
    lo = lucid._C._conv_fused(x, w, b, r, padding=1, activation=act, residual_first=first)
    f = {"relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh")}[act]
    y = F.conv2d(tx, tw, tb, padding=1)
    to = f(y + tr) if first else f(y) + tr
    _close(lo, to, 2e-4)
