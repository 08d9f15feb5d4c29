"""CUDA kernels of the nn family: random ops, dropout, losses and attention
(backends/cuda/kernels/{random,dropout,loss_pointwise,loss_nll,attention}.cu).

Random ops on the device use the CPU's Philox stream and rules (ops/random_draws.h): for the same
seed the numbers are compared with lucid's CPU result, bit for bit where the kernel claims it
(uniform, normal in float32/16-bit, randint, bernoulli, randperm, multinomial, dropout), within a few
ulps for float64 normal (SLEEF's log/sincospi on the CPU, CUDA's on the device). Losses and attention are
compared with torch on CUDA and with lucid's CPU result, including ignore_index, class weights,
label smoothing, probability targets, every reduction, NaN and bad input. Skips without a GPU."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F

pytestmark = pytest.mark.skipif(not lucid.cuda.is_available(), reason="no CUDA device")

FLOATS = [lucid.float32, lucid.float64, lucid.float16, lucid.bfloat16]
TORCH_DT = {lucid.float32: torch.float32, lucid.float64: torch.float64, lucid.float16: torch.float16,
            lucid.bfloat16: torch.bfloat16}


def host(t):
    """A lucid tensor's values as a float64 (or integer/bool) numpy array."""
    t = t.detach().cpu()
    if t.dtype in (lucid.float16, lucid.bfloat16):
        t = t.float()
    return t.numpy()


def both(make):
    """make(device) under the same seed on the CPU and on CUDA."""
    lucid.manual_seed(1234)
    c = make("cpu")
    lucid.manual_seed(1234)
    g = make("cuda")
    assert g.device.type == "cuda"
    return host(c), host(g)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8)


# ---- random ops -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 7, 4099])
def test_uniform_bit_exact(dtype, n):
    c, g = both(lambda d: lucid.rand(n, dtype=dtype, device=d))
    assert np.array_equal(bits(c), bits(g))


def test_uniform_range_and_inplace_strided():
    def make(d):
        x = lucid.zeros(6, 8, device=d)
        x[:, ::2].uniform_(-2.0, 3.0)  # a strided in-place destination
        return x
    c, g = both(make)
    assert np.array_equal(c, g)
    assert (g[:, 1::2] == 0).all() and (g[:, ::2] >= -2).all() and (g[:, ::2] < 3).all()


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float16, lucid.bfloat16])
@pytest.mark.parametrize("n", [1, 2, 5, 10001])
def test_normal_bit_exact(dtype, n):
    # float: log and sincospi in double rounded to float on both sides (ops/random_draws.h)
    c, g = both(lambda d: lucid.randn(n, dtype=dtype, device=d))
    assert np.array_equal(bits(c), bits(g))


def test_normal_float64_within_ulps():
    # float64: CUDA's log/sincospi against SLEEF's, the last ulps may differ
    c, g = both(lambda d: lucid.randn(10001, dtype=lucid.float64, device=d))
    np.testing.assert_allclose(g, c, rtol=1e-14, atol=1e-15)


def test_normal_mean_std():
    c, g = both(lambda d: lucid.empty(1000, device=d).normal_(2.0, 0.5))
    assert np.array_equal(c, g)


@pytest.mark.parametrize("low,high", [(0, 10), (-5, 5), (-(2 ** 40), 2 ** 40), (0, 2 ** 32)])
@pytest.mark.parametrize("dtype", [lucid.int64, lucid.int32, lucid.float32])
def test_randint_bit_exact(low, high, dtype):
    if dtype != lucid.int64 and high > 2 ** 31:
        pytest.skip("range beyond the dtype")
    c, g = both(lambda d: lucid.randint(low, high, (3, 1001), dtype=dtype, device=d))
    assert np.array_equal(c, g)


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_bernoulli_scalar_bit_exact(p):
    c, g = both(lambda d: lucid.empty(999, device=d).bernoulli_(p))
    assert np.array_equal(c, g)


def test_bernoulli_tensor_probs_broadcast():
    probs = np.linspace(0, 1, 37)
    c, g = both(lambda d: lucid.bernoulli(lucid.tensor(probs, device=d).expand(5, 37).contiguous()))
    assert np.array_equal(c, g)


def test_bernoulli_bad_probability_raises():
    p = lucid.tensor([0.5, 1.5, 0.2], device="cuda")
    with pytest.raises(ValueError, match="expected all probabilities in"):
        lucid.bernoulli(p)
    assert lucid.bernoulli(lucid.tensor([0.5], device="cuda")).shape == (1,)  # no sticky error


@pytest.mark.parametrize("n", [0, 1, 2, 100, 70000])
@pytest.mark.parametrize("dtype", [lucid.int64, lucid.float32])
def test_randperm_same_permutation(n, dtype):
    c, g = both(lambda d: lucid.randperm(n, dtype=dtype, device=d))
    assert np.array_equal(c, g)
    assert sorted(g.tolist()) == list(range(n))


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("shape", [(17,), (4, 50)])
def test_multinomial_same_samples(replacement, shape):
    w = np.random.default_rng(0).random(shape)
    w[..., 3] = 0.0
    ns = 10
    c, g = both(lambda d: lucid.multinomial(lucid.tensor(w, dtype=lucid.float32, device=d), ns, replacement=replacement))
    assert np.array_equal(c, g)
    assert not (g == 3).any()


def test_multinomial_bad_weights_raise():
    with pytest.raises(Exception, match="finite, non-negative"):
        lucid.multinomial(lucid.tensor([[0.5, -1.0]], device="cuda"), 1)
    with pytest.raises(Exception, match="all-zero weights"):
        lucid.multinomial(lucid.tensor([[1.0, 1.0], [0.0, 0.0]], device="cuda"), 1)


# ---- dropout ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_same_mask(dtype):
    x = np.random.default_rng(1).standard_normal((8, 33))
    c, g = both(lambda d: F.dropout(lucid.tensor(x, dtype=dtype, device=d), p=0.4))
    assert np.array_equal(bits(c), bits(g))


def test_dropout_kernel_with_float_mask_and_strided_input():
    x = lucid.randn(6, 10)
    m = (lucid.rand(6, 10) > 0.5).float()
    ref = lucid._C._nn_dropout(x.t(), m.t(), 0.25)
    got = lucid._C._nn_dropout(x.cuda().t(), m.cuda().t(), 0.25)
    assert np.array_equal(host(got), host(ref))


# ---- losses -----------------------------------------------------------------------------------
def to_lucid(a, dtype=None, device="cuda"):
    return lucid.tensor(a, dtype=dtype, device=device)


POINTWISE = [
    ("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}), ("huber_loss", {"delta": 0.7}),
    ("kl_div", {}), ("kl_div", {"log_target": True}),
]


@pytest.mark.parametrize("name,kw", POINTWISE)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float64, lucid.bfloat16])
def test_pointwise_losses_vs_torch(name, kw, reduction, dtype):
    rng = np.random.default_rng(2)
    x, t = rng.standard_normal((5, 7)), rng.standard_normal((5, 7))
    if name == "kl_div" and not kw:
        t = np.abs(t)
    xl, tl = to_lucid(x, dtype), to_lucid(t, dtype)
    xl.requires_grad_(True)
    out = getattr(F, name)(xl, tl, reduction=reduction, **kw)
    xt = torch.tensor(x, dtype=TORCH_DT[dtype], device="cuda", requires_grad=True)
    tt = torch.tensor(t, dtype=TORCH_DT[dtype], device="cuda")
    ref = getattr(torch.nn.functional, name)(xt, tt, reduction=reduction, **kw)
    tol = 1e-2 if dtype == lucid.bfloat16 else 1e-5
    np.testing.assert_allclose(host(out), ref.detach().double().cpu().numpy(), rtol=tol, atol=tol)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(host(xl.grad), xt.grad.double().cpu().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_and_bce_with_logits_vs_torch(reduction, weighted):
    rng = np.random.default_rng(3)
    x, t, w = rng.random((4, 6)), rng.random((4, 6)), rng.random((4, 6))
    xl, xt = to_lucid(x), torch.tensor(x, device="cuda", requires_grad=True)
    xl.requires_grad_(True)
    wl, wt = (to_lucid(w), torch.tensor(w, device="cuda")) if weighted else (None, None)
    out = F.binary_cross_entropy(xl, to_lucid(t), weight=wl, reduction=reduction)
    ref = torch.nn.functional.binary_cross_entropy(xt, torch.tensor(t, device="cuda"), weight=wt, reduction=reduction)
    np.testing.assert_allclose(host(out), ref.detach().cpu().numpy(), rtol=1e-10)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(host(xl.grad), xt.grad.cpu().numpy(), rtol=1e-8)
    pw = rng.random(6) + 0.5
    out = F.binary_cross_entropy_with_logits(to_lucid(x * 8 - 4), to_lucid(t), weight=wl, pos_weight=to_lucid(pw),
                                             reduction=reduction)
    ref = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor(x * 8 - 4, device="cuda"), torch.tensor(t, device="cuda"), weight=wt,
        pos_weight=torch.tensor(pw, device="cuda"), reduction=reduction)
    np.testing.assert_allclose(host(out), ref.cpu().numpy(), rtol=1e-10)


def test_bce_out_of_range_raises_and_nan_propagates():
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.binary_cross_entropy(to_lucid([0.5, 1.5]), to_lucid([1.0, 0.0]))
    out = F.mse_loss(to_lucid([1.0, float("nan")]), to_lucid([0.0, 0.0]))
    assert np.isnan(host(out))
    empty = F.mse_loss(to_lucid(np.zeros(0)), to_lucid(np.zeros(0)))  # mean of nothing: nan
    assert np.isnan(host(empty))


def test_losses_broadcast_target_and_strided_input_vs_cpu():
    rng = np.random.default_rng(9)
    x, t = rng.standard_normal((6, 5)), rng.standard_normal(6)
    for name in ("mse_loss", "l1_loss", "huber_loss"):
        out = {d: getattr(F, name)(lucid.tensor(x, device=d).t(), lucid.tensor(t, device=d), reduction="none")
               for d in ("cpu", "cuda")}  # (5, 6) strided input, (6,) target broadcast
        np.testing.assert_allclose(host(out["cuda"]), host(out["cpu"]), rtol=1e-15, atol=0)  # fma contraction may differ
    logits = rng.standard_normal((7, 4))
    tgt = rng.integers(0, 7, 4)
    out = {d: F.cross_entropy(lucid.tensor(logits, device=d).t(), lucid.tensor(tgt, device=d), reduction="none")
           for d in ("cpu", "cuda")}  # non-contiguous (4, 7) logits
    np.testing.assert_allclose(host(out["cuda"]), host(out["cpu"]), rtol=1e-13)


CE_CASES = [
    dict(shape=(6, 5)), dict(shape=(6, 5), weight=True), dict(shape=(6, 5), ignore=2),
    dict(shape=(6, 5), smoothing=0.1, weight=True), dict(shape=(3, 4, 2, 3), ignore=1), dict(shape=(5,)),
    dict(shape=(6, 5), prob=True), dict(shape=(6, 5), prob=True, smoothing=0.2, weight=True), dict(shape=(4, 3000)),
]


@pytest.mark.parametrize("case", CE_CASES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_and_nll_vs_torch(case, reduction):
    rng = np.random.default_rng(4)
    shape = case["shape"]
    C = shape[0] if len(shape) == 1 else shape[1]
    x = rng.standard_normal(shape) * 3
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    if case.get("prob"):
        t = rng.random(shape)
        tl, tt = to_lucid(t), torch.tensor(t, device="cuda")
    else:
        t = rng.integers(0, C, tshape)
        if "ignore" in case:
            t.flat[0] = case["ignore"]
        tl, tt = to_lucid(t, lucid.int64), torch.tensor(t, device="cuda")
    w = rng.random(C) + 0.5 if case.get("weight") else None
    kw = dict(reduction=reduction, label_smoothing=case.get("smoothing", 0.0), ignore_index=case.get("ignore", -100))
    xl, xt = to_lucid(x), torch.tensor(x, device="cuda", requires_grad=True)
    xl.requires_grad_(True)
    out = F.cross_entropy(xl, tl, weight=None if w is None else to_lucid(w), **kw)
    ref = torch.nn.functional.cross_entropy(xt, tt, weight=None if w is None else torch.tensor(w, device="cuda"), **kw)
    np.testing.assert_allclose(host(out), ref.detach().cpu().numpy(), rtol=1e-9, atol=1e-12)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(host(xl.grad), xt.grad.cpu().numpy(), rtol=1e-9, atol=1e-12)
    if not case.get("prob") and not case.get("smoothing"):
        kw.pop("label_smoothing")
        xl2 = to_lucid(x)
        xl2.requires_grad_(True)
        out = F.nll_loss(xl2, tl, weight=None if w is None else to_lucid(w), **kw)
        xt2 = torch.tensor(x, device="cuda", requires_grad=True)
        ref = torch.nn.functional.nll_loss(xt2, tt, weight=None if w is None else torch.tensor(w, device="cuda"), **kw)
        np.testing.assert_allclose(host(out), ref.detach().cpu().numpy(), rtol=1e-12)
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_allclose(host(xl2.grad), xt2.grad.cpu().numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype", [lucid.float16, lucid.bfloat16, lucid.float32])
def test_cross_entropy_16bit_vs_cpu(dtype):
    x = np.random.default_rng(5).standard_normal((64, 1000))
    t = np.random.default_rng(6).integers(0, 1000, 64)
    out = {d: F.cross_entropy(lucid.tensor(x, dtype=dtype, device=d), lucid.tensor(t, device=d)) for d in ("cpu", "cuda")}
    np.testing.assert_allclose(host(out["cuda"]), host(out["cpu"]), rtol=1e-2 if dtype == lucid.bfloat16 else 1e-3)


def test_cross_entropy_all_ignored_mean_is_nan():
    x = to_lucid(np.zeros((3, 4)))
    assert np.isnan(host(F.cross_entropy(x, to_lucid([-100, -100, -100], lucid.int64))))
    assert np.isnan(host(F.nll_loss(x, to_lucid([-100, -100, -100], lucid.int64))))


# Class targets are checked on the device without the host waiting (backends/cuda/deferred_check.h):
# the CPU's IndexError comes at the host's next synchronisation with the device, and until then
# the rows with a bad target are NaN, never a plausible number.
BAD_TARGET_SYNCS = {
    "read of the result": lambda loss: host(loss),
    "lucid.cuda.synchronize": lambda loss: lucid.cuda.synchronize(),
    "Event.synchronize": lambda loss: _record_and_wait(),
}


def _record_and_wait():
    e = lucid.cuda.Event()
    e.record()
    e.synchronize()


@pytest.mark.parametrize("op", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("sync", sorted(BAD_TARGET_SYNCS))
def test_bad_class_target_raises_at_the_next_sync(op, sync):
    x = to_lucid(np.zeros((3, 4)))
    loss = getattr(F, op)(x, to_lucid([0, 7, 1], lucid.int64))
    with pytest.raises(IndexError, match=rf"{op}: target index 7 is out of bounds for 4 classes"):
        BAD_TARGET_SYNCS[sync](loss)
    # raised once: the next calls are clean and exact
    good = getattr(F, op)(x, to_lucid([0, 3, 1], lucid.int64))
    want = np.log(4.0) if op == "cross_entropy" else 0.0
    assert host(good) == pytest.approx(want)


@pytest.mark.parametrize("op", ["cross_entropy", "nll_loss"])
def test_bad_class_target_poisons_its_rows_until_raised(op):
    x = to_lucid(np.zeros((3, 4)))
    rows = getattr(F, op)(x, to_lucid([0, -3, 1], lucid.int64), reduction="none")
    seen = torch.from_dlpack(rows).cpu().numpy()  # torch reads the memory without lucid's sync
    assert np.isnan(seen[1]) and not np.isnan(seen[[0, 2]]).any()
    with pytest.raises(IndexError, match="target index -3 is out of bounds"):
        lucid.cuda.synchronize()


def test_bad_class_target_raises_at_the_end_of_backward():
    xr = lucid.tensor(np.zeros((3, 4), np.float32), device="cuda", requires_grad=True)
    loss = F.cross_entropy(xr, to_lucid([0, 9, 1], lucid.int64))
    with pytest.raises(IndexError, match="cross_entropy: target index 9"):
        loss.backward()
    # the mean over a batch with a bad row is NaN, so is every gradient of it
    assert np.isnan(torch.from_dlpack(xr.grad).cpu().numpy()).all()
    lucid.cuda.synchronize()  # nothing left pending


# ---- attention --------------------------------------------------------------------------------
SDPA_CASES = [
    dict(), dict(causal=True), dict(mask="bool"), dict(mask="float"), dict(L=5, S=9), dict(causal=True, L=7, S=4),
    dict(mask="bool_full_row"),
]


@pytest.mark.parametrize("case", SDPA_CASES)
@pytest.mark.parametrize("dtype", [lucid.float16, lucid.bfloat16, lucid.float32, lucid.float64])
def test_sdpa_vs_torch(case, dtype):
    rng = np.random.default_rng(7)
    B, H, L, S, E = 2, 3, case.get("L", 6), case.get("S", 6), 8
    q, k, v = rng.standard_normal((B, H, L, E)), rng.standard_normal((B, H, S, E)), rng.standard_normal((B, H, S, E))
    mask = None
    if case.get("mask") == "bool":
        mask = rng.random((L, S)) > 0.3
        mask[:, 0] = True
    elif case.get("mask") == "bool_full_row":
        mask = rng.random((L, S)) > 0.3
        mask[1, :] = False
    elif case.get("mask") == "float":
        mask = rng.standard_normal((B, 1, L, S))
    td = TORCH_DT[dtype]
    tl = [to_lucid(a, dtype) for a in (q, k, v)]
    for t in tl:
        t.requires_grad_(True)
    tt = [torch.tensor(a, dtype=td, device="cuda", requires_grad=True) for a in (q, k, v)]
    ml = None if mask is None else to_lucid(mask, None if mask.dtype == bool else dtype)
    mt = None if mask is None else torch.tensor(mask, dtype=None if mask.dtype == bool else td, device="cuda")
    out = F.scaled_dot_product_attention(*tl, attn_mask=ml, is_causal=case.get("causal", False))
    if case.get("mask") == "bool_full_row":
        # torch gives nan for a fully masked row on some backends; lucid (as its CPU kernel) zeros
        ref_cpu = F.scaled_dot_product_attention(*[to_lucid(a, dtype, "cpu") for a in (q, k, v)],
                                                 attn_mask=to_lucid(mask, None, "cpu"))
        np.testing.assert_allclose(host(out), host(ref_cpu), rtol=2e-2, atol=2e-2)
        return
    ref = torch.nn.functional.scaled_dot_product_attention(*tt, attn_mask=mt, is_causal=case.get("causal", False))
    tol = {lucid.float64: 1e-10, lucid.float32: 1e-4}.get(dtype, 2e-2)
    np.testing.assert_allclose(host(out), ref.detach().double().cpu().numpy(), rtol=tol, atol=tol)
    g = rng.standard_normal(ref.shape)
    out.backward(to_lucid(g, dtype))
    ref.backward(torch.tensor(g, dtype=td, device="cuda"))
    for a, b in zip(tl, tt):
        np.testing.assert_allclose(host(a.grad), b.grad.double().cpu().numpy(), rtol=tol * 5, atol=tol * 5)


def test_sdpa_dropout_same_as_cpu():
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((2, 5, 4)) for _ in range(3))
    c, g = both(lambda d: F.scaled_dot_product_attention(*[lucid.tensor(a, device=d) for a in (q, k, v)], dropout_p=0.3))
    np.testing.assert_allclose(g, c, rtol=1e-12, atol=1e-12)
