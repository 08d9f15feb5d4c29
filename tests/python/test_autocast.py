"""lucid.autocast against torch.autocast: one table of calls, run under both on the same inputs;
each result must have torch's dtype (which says the op's policy: lower, float32, promote or
none) and torch's values within the output dtype's precision. Then autograd through autocast,
the parameter-cast cache (reused, never stale), compiled calls (keyed on the autocast state,
weights converted once), the context manager's state handling and its errors. The CUDA half
runs the same table in float16 (torch's CUDA default) on the GPU machine."""
import warnings

import numpy as np
import pytest
import torch

import lucid
from devices import DEVICES, HAS_CUDA, to_numpy

RNG = np.random.default_rng(0)


def arr(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def spd(n):
    a = arr(n, n)
    return (a @ a.T + n * np.eye(n)).astype(np.float32)


# (id, inputs as (numpy array, dtype name) pairs, call(lib, F, *tensors)[, devices]). dtype
# "bf" is the autocast dtype of the device (bfloat16 on the CPU, float16 on CUDA). devices: where
# torch raises for the 16-bit input (no kernel, and not in its lists there); lucid's linear
# algebra is in its float32 list, so the reference is torch on float32 copies.
def _f(n):
    return "f32", n


def _b(n):
    return "bf", n


FP32_REF, FP32_REF_CUDA = ("cpu", "cuda"), ("cuda",)  # where torch raises: the reference is float32
ROWS = [
    ("linear", [_f(arr(4, 8)), _f(arr(6, 8)), _f(arr(6))], lambda L, F, x, w, b: F.linear(x, w, b)),
    ("linear_f64", [("f64", arr(4, 8)), ("f64", arr(6, 8))], lambda L, F, x, w: F.linear(x, w)),
    ("matmul", [_f(arr(3, 4, 8)), _f(arr(8, 5))], lambda L, F, a, b: a @ b),
    ("mm", [_f(arr(4, 8)), _f(arr(8, 5))], lambda L, F, a, b: L.mm(a, b)),
    ("bmm", [_f(arr(2, 4, 8)), _f(arr(2, 8, 5))], lambda L, F, a, b: L.bmm(a, b)),
    ("addmm", [_f(arr(4, 5)), _f(arr(4, 8)), _f(arr(8, 5))], lambda L, F, c, a, b: L.addmm(c, a, b)),
    ("baddbmm", [_f(arr(2, 4, 5)), _f(arr(2, 4, 8)), _f(arr(2, 8, 5))], lambda L, F, c, a, b: L.baddbmm(c, a, b)),
    ("addbmm", [_f(arr(4, 5)), _f(arr(2, 4, 8)), _f(arr(2, 8, 5))], lambda L, F, c, a, b: L.addbmm(c, a, b)),
    ("einsum", [_f(arr(2, 4, 8)), _f(arr(2, 8, 5))], lambda L, F, a, b: L.einsum("bij,bjk->bik", a, b)),
    ("conv1d", [_f(arr(2, 3, 10)), _f(arr(4, 3, 3)), _f(arr(4))], lambda L, F, x, w, b: F.conv1d(x, w, b, padding=1)),
    ("conv2d", [_f(arr(2, 3, 8, 8)), _f(arr(4, 3, 3, 3)), _f(arr(4))],
     lambda L, F, x, w, b: F.conv2d(x, w, b, stride=2, padding=1)),
    ("conv_transpose2d", [_f(arr(2, 4, 5, 5)), _f(arr(4, 3, 3, 3))], lambda L, F, x, w: F.conv_transpose2d(x, w)),
    ("sdpa", [_f(arr(2, 2, 5, 8)), _f(arr(2, 2, 5, 8)), _f(arr(2, 2, 5, 8))],
     lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v)),
    ("sdpa_causal", [_f(arr(1, 2, 6, 8)), _f(arr(1, 2, 6, 8)), _f(arr(1, 2, 6, 8))],
     lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
    ("prelu", [_f(arr(2, 3, 4)), _f(arr(3))], lambda L, F, x, w: F.prelu(x, w)),
    ("vecdot", [_f(arr(4, 8)), _f(arr(4, 8))], lambda L, F, a, b: L.linalg.vecdot(a, b)),
    ("cat_mixed", [_b(arr(2, 3)), _f(arr(2, 3))], lambda L, F, a, b: L.cat([a, b])),
    ("stack_mixed", [_b(arr(2, 3)), _f(arr(2, 3))], lambda L, F, a, b: L.stack([a, b])),
    ("cat_low", [_b(arr(2, 3)), _b(arr(2, 3))], lambda L, F, a, b: L.cat([a, b], 1)),
    ("softmax_f32", [_f(arr(3, 7))], lambda L, F, x: F.softmax(x, -1)),
    ("softmax_low", [_b(arr(3, 7))], lambda L, F, x: F.softmax(x, -1)),
    ("log_softmax_low", [_b(arr(3, 7))], lambda L, F, x: F.log_softmax(x, -1)),
    ("layer_norm_low", [_b(arr(3, 8)), _f(arr(8)), _f(arr(8))], lambda L, F, x, w, b: F.layer_norm(x, (8,), w, b)),
    ("group_norm_low", [_b(arr(2, 4, 5)), _f(arr(4)), _f(arr(4))], lambda L, F, x, w, b: F.group_norm(x, 2, w, b)),
    ("batch_norm_eval_low", [_b(arr(3, 4, 5)), _f(arr(4)), _f(arr(4, lo=0.5, hi=1.5)), _f(arr(4)), _f(arr(4))],
     lambda L, F, x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False)),
    ("batch_norm_train_low", [_b(arr(3, 4, 5)), _f(arr(4)), _f(arr(4))],
     lambda L, F, x, w, b: F.batch_norm(x, None, None, w, b, training=True)),
    ("mse_loss", [_b(arr(4, 5)), _b(arr(4, 5))], lambda L, F, a, b: F.mse_loss(a, b)),
    ("l1_loss", [_b(arr(4, 5)), _b(arr(4, 5))], lambda L, F, a, b: F.l1_loss(a, b)),
    ("smooth_l1_loss", [_b(arr(4, 5)), _b(arr(4, 5))], lambda L, F, a, b: F.smooth_l1_loss(a, b)),
    ("huber_loss", [_b(arr(4, 5)), _b(arr(4, 5))], lambda L, F, a, b: F.huber_loss(a, b)),
    ("bce_with_logits", [_b(arr(4, 5)), _b(arr(4, 5, lo=0, hi=1))],
     lambda L, F, a, b: F.binary_cross_entropy_with_logits(a, b)),
    ("cross_entropy", [_b(arr(4, 5))], lambda L, F, a: F.cross_entropy(a, L.tensor([0, 3, 1, 4]).to(a.device))),
    ("nll_loss", [_b(arr(4, 5))], lambda L, F, a: F.nll_loss(a, L.tensor([0, 3, 1, 4]).to(a.device))),
    ("kl_div", [_b(arr(4, 5)), _b(arr(4, 5, lo=0.1, hi=1))], lambda L, F, a, b: F.kl_div(a, b, reduction="batchmean")),
    ("margin_ranking", [_b(arr(6)), _b(arr(6))],
     lambda L, F, a, b: F.margin_ranking_loss(a, b, L.tensor([1.0, -1, 1, 1, -1, 1]).to(a.device))),
    ("soft_margin", [_b(arr(6))], lambda L, F, a: F.soft_margin_loss(a, L.tensor([1.0, -1, 1, 1, -1, 1]).to(a.device))),
    ("hinge_embedding", [_b(arr(6))], lambda L, F, a: F.hinge_embedding_loss(a, L.tensor([1.0, -1, 1, 1, -1, 1]).to(a.device))),
    ("cosine_embedding", [_b(arr(3, 5)), _b(arr(3, 5))],
     lambda L, F, a, b: F.cosine_embedding_loss(a, b, L.tensor([1.0, -1, 1]).to(a.device))),
    ("triplet_margin", [_b(arr(3, 5)), _b(arr(3, 5)), _b(arr(3, 5))], lambda L, F, a, p, n: F.triplet_margin_loss(a, p, n)),
    ("multi_margin", [_b(arr(4, 5))], lambda L, F, a: F.multi_margin_loss(a, L.tensor([0, 3, 1, 4]).to(a.device))),
    ("poisson_nll", [_b(arr(4, 5)), _b(arr(4, 5, lo=0, hi=2))], lambda L, F, a, b: F.poisson_nll_loss(a, b)),
    ("prod_low", [_b(arr(3, 4, lo=0.5, hi=1.5))], lambda L, F, x: L.prod(x, 1)),
    ("cdist_low", [_b(arr(4, 3)), _b(arr(5, 3))], lambda L, F, a, b: L.cdist(a, b)),
    ("pad_reflect_low", [_b(arr(1, 2, 5))], lambda L, F, x: F.pad(x, (2, 1), mode="reflect")),
    ("pad_replicate_low", [_b(arr(1, 2, 5))], lambda L, F, x: F.pad(x, (2, 1), mode="replicate")),
    ("pad_constant_low", [_b(arr(1, 2, 5))], lambda L, F, x: F.pad(x, (2, 1))),
    ("linalg_inv_low", [_b(spd(4))], lambda L, F, a: L.linalg.inv(a), FP32_REF_CUDA),
    ("linalg_solve_low", [_b(spd(4)), _b(arr(4, 2))], lambda L, F, a, b: L.linalg.solve(a, b), FP32_REF_CUDA),
    ("linalg_det_low", [_b(spd(4))], lambda L, F, a: L.linalg.det(a), FP32_REF),
    ("linalg_cholesky_low", [_b(spd(4))], lambda L, F, a: L.linalg.cholesky(a), FP32_REF_CUDA),
    ("linalg_eigvalsh_low", [_b(spd(4))], lambda L, F, a: L.linalg.eigvalsh(a), FP32_REF_CUDA),
    ("linalg_lstsq_low", [_b(spd(4)), _b(arr(4, 2))], lambda L, F, a, b: L.linalg.lstsq(a, b).solution, FP32_REF_CUDA),
    ("linalg_solve_triangular_low", [_b(spd(4)), _b(arr(4, 2))],
     lambda L, F, a, b: L.linalg.solve_triangular(a, b, upper=True), FP32_REF),
    ("relu_f32", [_f(arr(3, 4))], lambda L, F, x: F.relu(x)),
    ("gelu_low", [_b(arr(3, 4))], lambda L, F, x: F.gelu(x)),
    ("exp_low", [_b(arr(3, 4))], lambda L, F, x: L.exp(x)),
    ("log_low", [_b(arr(3, 4, lo=0.1, hi=2))], lambda L, F, x: L.log(x)),
    ("sum_low", [_b(arr(3, 4))], lambda L, F, x: x.sum(1)),
    ("mean_low", [_b(arr(3, 4))], lambda L, F, x: x.mean()),
    ("add_mixed", [_b(arr(3, 4)), _f(arr(3, 4))], lambda L, F, a, b: a + b),
    ("max_pool_low", [_b(arr(1, 2, 6, 6))], lambda L, F, x: F.max_pool2d(x, 2)),
    ("avg_pool_low", [_b(arr(1, 2, 6, 6))], lambda L, F, x: F.avg_pool2d(x, 2)),
    ("adaptive_avg_pool_low", [_b(arr(1, 2, 6, 6))], lambda L, F, x: F.adaptive_avg_pool2d(x, 1)),
    ("interpolate_low", [_b(arr(1, 2, 4, 4))], lambda L, F, x: F.interpolate(x, scale_factor=2, mode="bilinear")),
    ("embedding", [_f(arr(10, 4))], lambda L, F, w: F.embedding(L.tensor([1, 3, 9]).to(w.device), w)),
]


def _low(lib, device):
    return lib.bfloat16 if device == "cpu" else lib.float16


def _make(lib, device, spec):
    names = {"f32": lib.float32, "f64": lib.float64, "bf": _low(lib, device)}
    out = []
    for kind, a in spec:
        t = lib.tensor(a) if lib is torch else lucid.tensor(a)
        out.append(t.to(device=device, dtype=names[kind]))
    return out


def _tol(dtype_name):
    return {"bfloat16": 2e-2, "float16": 2e-3, "float32": 1e-4, "float64": 1e-10}[dtype_name]


def _check(got, ref):
    assert str(got.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], (got.dtype, ref.dtype)
    g, r = to_numpy(got).astype(np.float64), to_numpy(ref).astype(np.float64)
    assert g.shape == r.shape
    tol = _tol(str(ref.dtype).split(".")[-1])
    scale = max(1.0, float(np.abs(r).max())) if r.size else 1.0
    np.testing.assert_allclose(g, r, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_op_table_matches_torch(row, device):
    name, spec, call = row[:3]
    lx, tx = _make(lucid, device, spec), _make(torch, device, spec)
    if device in (row[3] if len(row) > 3 else ()):  # torch raises (no 16-bit kernel); lucid: float32
        ref = call(torch, torch.nn.functional, *[t.float() for t in tx])
    else:
        with torch.autocast(device):
            ref = call(torch, torch.nn.functional, *tx)
    with lucid.autocast(device):
        got = call(lucid, lucid.nn.functional, *lx)
    _check(got, ref)


@pytest.mark.parametrize("device", DEVICES)
def test_outside_autocast_nothing_is_cast(device):
    x, w = _make(lucid, device, [_f(arr(4, 8)), _f(arr(6, 8))])
    with lucid.autocast(device):
        pass
    assert lucid.nn.functional.linear(x, w).dtype == lucid.float32
    with lucid.autocast(device, enabled=False):
        assert lucid.nn.functional.linear(x, w).dtype == lucid.float32


def test_enabled_false_inside_enabled_and_nesting_restore():
    x, w = lucid.tensor(arr(4, 8)), lucid.tensor(arr(6, 8))
    F = lucid.nn.functional
    with lucid.autocast("cpu"):
        assert F.linear(x, w).dtype == lucid.bfloat16
        with lucid.autocast("cpu", enabled=False):
            assert F.linear(x, w).dtype == lucid.float32
            assert not lucid.is_autocast_cpu_enabled()
        assert lucid.is_autocast_cpu_enabled()
        with lucid.autocast("cpu", dtype=lucid.float16):
            assert F.linear(x, w).dtype == lucid.float16
            assert lucid.get_autocast_dtype("cpu") == lucid.float16
        assert lucid.get_autocast_dtype("cpu") == lucid.bfloat16
    assert not lucid.is_autocast_enabled("cpu")


def test_decorator_and_exception_restore_state():
    @lucid.autocast("cpu")
    def f(x, w):
        return lucid.nn.functional.linear(x, w)

    assert f(lucid.tensor(arr(2, 3)), lucid.tensor(arr(4, 3))).dtype == lucid.bfloat16
    assert not lucid.is_autocast_cpu_enabled()
    with pytest.raises(ZeroDivisionError):
        with lucid.autocast("cpu"):
            raise ZeroDivisionError
    assert not lucid.is_autocast_cpu_enabled()


def test_state_functions_like_torch():
    assert lucid.get_autocast_cpu_dtype() == lucid.bfloat16
    assert lucid.get_autocast_gpu_dtype() == lucid.float16
    assert lucid.is_autocast_enabled() is False  # no argument: CUDA, as torch
    assert lucid.amp.is_autocast_available("cpu") and not lucid.amp.is_autocast_available("mps")
    lucid.set_autocast_enabled("cpu", True)
    try:
        assert lucid.is_autocast_cpu_enabled()
        assert lucid.nn.functional.linear(lucid.tensor(arr(2, 3)), lucid.tensor(arr(4, 3))).dtype == lucid.bfloat16
    finally:
        lucid.set_autocast_enabled("cpu", False)
    assert lucid.is_autocast_cache_enabled()


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="device_type"):
        lucid.autocast(lucid.device("cpu"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'mps'"):
        lucid.autocast("mps")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'cuda:0'"):
        lucid.autocast("cuda:0")
    with pytest.raises(ValueError, match="float64 is not supported.*bfloat16 or lucid.float16"):
        lucid.autocast("cpu", dtype=lucid.float64)
    with pytest.raises(ValueError, match="float32 is not supported"):
        lucid.set_autocast_dtype("cpu", lucid.float32)
    with pytest.raises(TypeError, match="lucid.dtype"):
        lucid.autocast("cpu", dtype="bfloat16")
    with pytest.raises(TypeError, match="enabled"):
        lucid.autocast("cpu", enabled="yes")
    with pytest.raises(ValueError, match="float64.*bfloat16 or float16"):  # the engine's own check
        lucid._C._autocast_set_dtype("cpu", lucid.float64)


@pytest.mark.skipif(HAS_CUDA, reason="checks the warning given where CUDA is absent")
def test_cuda_autocast_without_cuda_warns_and_disables():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ac = lucid.autocast("cuda")
    assert any("CUDA is not available" in str(m.message) for m in w)
    with ac:
        assert not lucid.is_autocast_enabled("cuda")


@pytest.mark.parametrize("device", DEVICES)
def test_binary_cross_entropy_policy(device):
    p, t = arr(4, lo=0.1, hi=0.9), arr(4, lo=0, hi=1)
    lp, lt = (lucid.tensor(a).to(device) for a in (p, t))
    if device == "cpu":  # float32 on the CPU
        with torch.autocast("cpu"):
            ref = torch.nn.functional.binary_cross_entropy(torch.tensor(p).bfloat16(), torch.tensor(t).bfloat16())
        with lucid.autocast("cpu"):
            got = lucid.nn.functional.binary_cross_entropy(lp.bfloat16(), lt.bfloat16())
        _check(got, ref)
    else:  # banned on CUDA, with torch's message
        with lucid.autocast("cuda"), pytest.raises(RuntimeError, match="unsafe to autocast"):
            lucid.nn.functional.binary_cross_entropy(lp.half(), lt.half())


def _mlp(lib, seed=0):
    g = np.random.default_rng(seed)
    ws = [g.uniform(-0.3, 0.3, s).astype(np.float32) for s in [(16, 8), (16,), (5, 16), (5,)]]
    return [lib.tensor(w).requires_grad_(True) if lib is torch else lucid.nn.Parameter(lucid.tensor(w)) for w in ws]


def _mlp_loss(lib, params, x, y):
    F = lib.nn.functional
    w1, b1, w2, b2 = params
    h = F.relu(F.linear(x, w1, b1))
    return F.cross_entropy(F.linear(h, w2, b2), y)


@pytest.mark.parametrize("device", DEVICES)
def test_backward_through_autocast_matches_torch(device):
    x, y = arr(6, 8), np.array([0, 1, 4, 2, 3, 1])
    lp = [p.to(device) if device != "cpu" else p for p in _mlp(lucid)]
    if device != "cpu":
        lp = [lucid.nn.Parameter(p.detach()) for p in lp]
    tp = [p.detach().to(device).requires_grad_(True) for p in _mlp(torch)]
    with torch.autocast(device):
        tl = _mlp_loss(torch, tp, torch.tensor(x, device=device), torch.tensor(y, device=device))
    tl.backward()
    with lucid.autocast(device):
        ll = _mlp_loss(lucid, lp, lucid.tensor(x).to(device), lucid.tensor(y).to(device))
    ll.backward()
    _check(ll, tl)
    for a, b in zip(lp, tp):
        assert a.grad.dtype == lucid.float32
        np.testing.assert_allclose(to_numpy(a.grad), to_numpy(b.grad), rtol=3e-2, atol=3e-2 * float(b.grad.abs().max()))


def test_parameter_cast_cache_is_reused_and_never_stale():
    lin = lucid.nn.Linear(8, 4)
    x = lucid.tensor(arr(3, 8))
    with lucid.autocast("cpu"):
        y1 = lin(x)
        n = lucid._C._autocast_cache_size()
        assert n == 2  # weight and bias, cast once
        lin(x)
        assert lucid._C._autocast_cache_size() == n
        with lucid.no_grad():
            lin.weight.mul_(-1.0)  # a write inside the region: the cached cast must not be served
        y2 = lin(x)
        ref = lucid.nn.functional.linear(x.bfloat16(), lin.weight.bfloat16(), lin.bias.bfloat16())
        np.testing.assert_array_equal(to_numpy(y2), to_numpy(ref))
        assert not np.array_equal(to_numpy(y1), to_numpy(y2))
    assert lucid._C._autocast_cache_size() == 0  # cleared when the outermost region ends


def test_cast_cached_without_grad_is_not_served_with_grad():
    lin = lucid.nn.Linear(8, 4)
    x = lucid.tensor(arr(3, 8))
    with lucid.autocast("cpu"):
        with lucid.no_grad():
            lin(x)
        lin(x).float().sum().backward()
    assert lin.weight.grad is not None and lin.weight.grad.dtype == lucid.float32
    np.testing.assert_allclose(to_numpy(lin.bias.grad), np.full(4, 3.0), rtol=1e-6)


def test_cache_disabled_keeps_nothing():
    lin = lucid.nn.Linear(8, 4)
    with lucid.autocast("cpu", cache_enabled=False):
        lin(lucid.tensor(arr(3, 8)))
        assert lucid._C._autocast_cache_size() == 0


class _Net(lucid.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = lucid.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = lucid.nn.BatchNorm2d(8)
        self.fc = lucid.nn.Linear(8, 5)

    def forward(self, x):
        h = lucid.relu(self.bn(self.conv(x)))
        return self.fc(h.mean((2, 3)))


def test_compiled_call_is_keyed_on_autocast_and_matches_eager():
    lucid.manual_seed(0)
    net = _Net().eval()
    x = lucid.tensor(arr(2, 3, 8, 8))
    f = lucid.compile(net)
    with lucid.no_grad():
        plain = f(x)
        with lucid.autocast("cpu"):
            low = f(x)
            low2 = f(x)
            eager_low = net(x)
        plain2 = f(x)
        eager = net(x)
    assert plain.dtype == lucid.float32 and plain2.dtype == lucid.float32
    assert low.dtype == eager_low.dtype == lucid.bfloat16
    np.testing.assert_allclose(to_numpy(plain), to_numpy(eager), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_numpy(low), to_numpy(eager_low), rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(to_numpy(low), to_numpy(low2))
    info = f.cache_info()
    assert info["entries"] == 2 and not info["eager_only"], info
    assert sum("autocast(cpu=bfloat16)" in k for k in info["keys"]) == 1, info


def test_compiled_autocast_converts_weights_once_and_refreshes():
    lin = lucid.nn.Linear(16, 8).eval()
    f = lucid.compile(lin)
    x = lucid.tensor(arr(4, 16))
    with lucid.no_grad(), lucid.autocast("cpu"):
        for _ in range(4):
            f(x)
        (key,) = f._keys()
        exe = f._executable(key)
        assert "cached" in exe.memory_plan, exe.memory_plan
        fills = exe.state_cache_fills
        assert fills == 1  # the cast weights were computed once
        lin.weight.mul_(2.0)
        y = f(x)
        assert exe.state_cache_fills == fills + 1  # refreshed after the write
        ref = lin(x)
    np.testing.assert_allclose(to_numpy(y), to_numpy(ref), rtol=2e-2, atol=2e-2)


def _mlp_module(seed):
    lucid.manual_seed(seed)
    return lucid.nn.Sequential(lucid.nn.Linear(8, 16), lucid.nn.ReLU(), lucid.nn.Linear(16, 5))


def test_fused_step_under_autocast_matches_eager():
    m, ref = _mlp_module(3), _mlp_module(3)
    F = lucid.nn.functional
    step = lucid.compile.fused_step(m, F.cross_entropy, lucid.optim.SGD(m.parameters(), lr=0.5), strict=True)
    opt = lucid.optim.SGD(ref.parameters(), lr=0.5)
    for i in range(3):
        x, y = lucid.tensor(arr(6, 8)), lucid.tensor(np.array([0, 1, 4, 2, 3, 1 + i]))
        with lucid.autocast("cpu"):
            loss = step(x, y)
            loss_ref = F.cross_entropy(ref(x), y)
        loss_ref.backward()
        opt.step()
        opt.zero_grad()
        assert loss.dtype == loss_ref.dtype == lucid.float32
        np.testing.assert_allclose(to_numpy(loss), to_numpy(loss_ref), rtol=1e-2)
    for p, q in zip(m.parameters(), ref.parameters()):
        assert p.dtype == lucid.float32
        np.testing.assert_allclose(to_numpy(p), to_numpy(q), rtol=2e-2, atol=2e-3)
    assert not np.allclose(to_numpy(next(m.parameters())), to_numpy(next(_mlp_module(3).parameters())))


def test_compiled_forward_with_grad_under_autocast():
    m, ref = _mlp_module(4), _mlp_module(4)
    f = lucid.compile(m)
    x = lucid.tensor(arr(6, 8))
    with lucid.autocast("cpu"):
        out, out_ref = f(x), ref(x)
    assert out.dtype == out_ref.dtype == lucid.bfloat16
    out.float().square().sum().backward()
    out_ref.float().square().sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        assert p.grad.dtype == lucid.float32
        np.testing.assert_allclose(to_numpy(p.grad), to_numpy(q.grad), rtol=2e-2, atol=2e-2 * float(q.grad.abs().max()))


def test_compiled_autocast_folds_batchnorm_into_the_16_bit_conv():
    lucid.manual_seed(1)
    m = lucid.nn.Sequential(lucid.nn.Conv2d(3, 8, 3, padding=1), lucid.nn.BatchNorm2d(8), lucid.nn.ReLU()).eval()
    with lucid.no_grad():
        m[1].running_mean.copy_(lucid.randn(8) * 0.1)
        m[1].running_var.copy_(lucid.rand(8) + 0.5)
        m[1].weight.copy_(lucid.randn(8))
    f = lucid.compile(m)
    x = lucid.tensor(arr(2, 3, 9, 9))
    with lucid.no_grad(), lucid.autocast("cpu"):
        got = f(x)
        got = f(x)
        ref = m(x)
    assert "BatchNorm" not in f.ir(), f.ir()
    assert got.dtype == ref.dtype == lucid.bfloat16
    np.testing.assert_allclose(to_numpy(got), to_numpy(ref), rtol=2e-2, atol=2e-2 * float(ref.float().abs().max()))
    with lucid.no_grad():  # a BatchNorm statistic written: the folded weights follow
        m[1].running_mean.add_(0.5)
        with lucid.autocast("cpu"):
            got, ref = f(x), m(x)
    np.testing.assert_allclose(to_numpy(got), to_numpy(ref), rtol=2e-2, atol=2e-2 * float(ref.float().abs().max()))


def test_saved_artifact_keeps_the_autocast_state(tmp_path):
    from lucid.compile import ArtifactError, load_compiled, save_compiled
    lin = _mlp_module(5).eval()
    cm = lucid.compile(lin)
    x = lucid.tensor(arr(3, 8))
    with lucid.no_grad(), lucid.autocast("cpu"):
        cm(x)
        ref = cm(x)
    assert save_compiled(cm, tmp_path / "m.lucid") is True
    loaded = load_compiled(tmp_path / "m.lucid")
    assert any("autocast(cpu=bfloat16)" in s for s in loaded.signatures), loaded.signatures
    with lucid.no_grad():
        with lucid.autocast("cpu"):
            out = loaded(x)
        assert out.dtype == lucid.bfloat16
        np.testing.assert_array_equal(to_numpy(out), to_numpy(ref))
        with pytest.raises(ArtifactError, match="no saved signature"):
            loaded(x)  # float32 now: the bfloat16 program must not serve it


@pytest.mark.parametrize("act", ["relu", "relu6", "silu"])
def test_compiled_autocast_absorbs_activation_exactly(act):
    lucid.manual_seed(2)
    A = {"relu": lucid.nn.ReLU, "relu6": lucid.nn.ReLU6, "silu": lucid.nn.SiLU}[act]
    m = lucid.nn.Sequential(lucid.nn.Conv2d(3, 8, 3, padding=1), A(), lucid.nn.Flatten(),
                            lucid.nn.Linear(8 * 6 * 6, 10), A()).eval()
    f = lucid.compile(m)
    x = lucid.tensor(arr(2, 3, 6, 6, lo=-3, hi=3))
    with lucid.no_grad(), lucid.autocast("cpu"):
        f(x)
        got = f(x)
        ref = m(x)
    ir = f.ir()
    assert "ConvFused" in ir and "LinearFused" in ir, ir
    assert got.dtype == lucid.bfloat16
    np.testing.assert_array_equal(to_numpy(got), to_numpy(ref))  # the chain's roundings, bit for bit


def test_custom_fwd_casts_inputs_and_custom_bwd_sees_the_forward_state():
    seen = {}

    class MyMM(lucid.autograd.Function):
        @staticmethod
        @lucid.amp.custom_fwd(device_type="cpu", cast_inputs=lucid.float32)
        def forward(ctx, a, b):
            seen["fwd"] = (a.dtype, b.dtype, lucid.is_autocast_cpu_enabled())
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        @lucid.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen["bwd"] = lucid.is_autocast_cpu_enabled()
            return g @ b.t(), a.t() @ g

    a = lucid.tensor(arr(3, 4)).bfloat16().requires_grad_(True)
    b = lucid.tensor(arr(4, 5)).requires_grad_(True)
    with lucid.autocast("cpu"):
        out = MyMM.apply(a, b)
    assert seen["fwd"] == (lucid.float32, lucid.float32, False)  # cast, and autocast off inside
    assert out.dtype == lucid.float32
    out.sum().backward()
    assert seen["bwd"] is True  # the backward runs under the forward's autocast state
    assert a.grad.dtype == lucid.bfloat16 and b.grad.dtype == lucid.float32
    np.testing.assert_allclose(to_numpy(b.grad), to_numpy(a.float().t() @ lucid.ones(3, 5)), rtol=2e-2, atol=2e-2)
