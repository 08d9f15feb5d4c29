"""CUDA matrix products (Matmul, Addmm, Linear, LinearFused on cuBLASLt and the integer GEMM)
against lucid's CPU kernels in float64 and torch: 1-D operands, batch broadcasting, transposed,
strided and offset views, k = 0 and empty outputs, every dtype, the float32 matmul precision
(TF32) switch, and LinearFused's activations and residual with NaN inputs. Skips without a GPU;
the precision-switch API test runs everywhere."""
import numpy as np
import pytest
import torch

import lucid

cuda = pytest.mark.skipif(not lucid.cuda.is_available(), reason="no CUDA device")
FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int64", "int32", "int8", "uint8")
# Tolerances against the float64 product of the same (rounded) inputs.
TOL = {"float32": 1e-4, "float64": 1e-10, "float16": 1e-2, "bfloat16": 4e-2}


def _dt(name):
    return getattr(lucid, name)


def _host(t):
    """A lucid tensor (any device) as a float64 NumPy array."""
    return t.cpu().to(lucid.float64).numpy()


def _rand(rng, shape, dtype):
    if dtype in INTS:
        lo, hi = (0, 6) if dtype == "uint8" else (-4, 5)
        return lucid.tensor(rng.integers(lo, hi, size=shape).astype(dtype))
    return lucid.tensor(rng.uniform(-1, 1, size=shape).astype(np.float32)).to(_dt(dtype))


def _ref(fn, *ts):
    """fn over the CPU float64 copies of ts (the reference of a floating product)."""
    return _host(fn(*[t.cpu().to(lucid.float64) if t is not None else None for t in ts]))


def _check(out_cuda, ref, dtype, what):
    got = _host(out_cuda)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} vs {ref.shape}"
    scale = max(1.0, float(np.nanmax(np.abs(ref)))) if ref.size and not np.all(np.isnan(ref)) else 1.0
    np.testing.assert_allclose(got, ref, rtol=TOL.get(dtype, 0), atol=TOL.get(dtype, 0) * scale, err_msg=what)


MATMUL_SHAPES = [
    ((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((4, 5), (5, 3)), ((7, 4, 5), (5, 3)), ((2, 7, 4, 5), (5, 3)),
    ((4, 5), (7, 5, 3)), ((2, 1, 4, 5), (3, 5, 6)), ((3, 4, 5), (3, 5, 2)), ((1, 4, 5), (6, 5, 2)),
    ((6, 1, 4), (4,)), ((3,), (2, 3, 4)),
    ((3, 0), (0, 4)), ((0, 5), (5, 3)), ((4, 5), (5, 0)), ((0, 4, 5), (5, 3)), ((2, 3, 0), (2, 0, 4)),
]


@cuda
@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes(sa, sb, dtype):
    rng = np.random.default_rng(0)
    a, b = _rand(rng, sa, dtype), _rand(rng, sb, dtype)
    out = lucid.matmul(a.to("cuda"), b.to("cuda"))
    assert out.device.type == "cuda" and out.dtype == a.dtype
    if dtype in INTS:  # exact: the CPU's int64-accumulating loop
        np.testing.assert_array_equal(out.cpu().numpy(), lucid.matmul(a, b).numpy())
        return
    _check(out, _ref(lucid.matmul, a, b), dtype, f"matmul {sa} @ {sb}")


@cuda
def test_matmul_k0_is_zeros_even_with_nan_elsewhere():
    a = lucid.full((3, 0), float("nan")).to("cuda")
    b = lucid.full((0, 4), float("nan")).to("cuda")
    np.testing.assert_array_equal(lucid.matmul(a, b).cpu().numpy(), np.zeros((3, 4), np.float32))


def _views(rng, dtype):
    """(name, a view of shape [.., 4, 6], b view of shape [.., 6, 5]) with various layouts."""
    A = _rand(rng, (3, 6, 4), dtype).to("cuda")    # A.mT: column-major [3, 4, 6]
    B = _rand(rng, (5, 6), dtype).to("cuda")       # B.mT: column-major [6, 5]... of a [5, 6]
    C = _rand(rng, (4, 12), dtype).to("cuda")      # C[:, ::2]: both strides > 1 (copied)
    D = _rand(rng, (10, 6, 5), dtype).to("cuda")   # D[2:5]: a storage offset
    E = _rand(rng, (1, 6, 5), dtype).to("cuda")    # E.expand: batch stride 0
    F = _rand(rng, (6, 5, 3), dtype).to("cuda")    # F.permute(2, 0, 1): batch stride 1
    return [
        ("a transposed", A.mT, _rand(rng, (6, 5), dtype).to("cuda")),
        ("b transposed", _rand(rng, (4, 6), dtype).to("cuda"), B.mT),
        ("both transposed", A.mT, B.mT),
        ("a column slice", C[:, ::2], _rand(rng, (6, 5), dtype).to("cuda")),
        ("b offset batch", _rand(rng, (3, 4, 6), dtype).to("cuda"), D[2:5]),
        ("b expanded batch", _rand(rng, (3, 4, 6), dtype).to("cuda"), E.expand(3, 6, 5)),
        ("b permuted", _rand(rng, (3, 4, 6), dtype).to("cuda"), F.permute(2, 0, 1)),
        ("a row slice", _rand(rng, (9, 6), dtype).to("cuda")[1:5], _rand(rng, (6, 5), dtype).to("cuda")),
    ]


@cuda
@pytest.mark.parametrize("dtype", FLOATS + ("int64",))
def test_matmul_strided_views(dtype):
    rng = np.random.default_rng(1)
    for name, a, b in _views(rng, dtype):
        out = lucid.matmul(a, b)
        if dtype in INTS:
            np.testing.assert_array_equal(out.cpu().numpy(), lucid.matmul(a.cpu(), b.cpu()).numpy(), err_msg=name)
        else:
            _check(out, _ref(lucid.matmul, a, b), dtype, name)


@cuda
@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16", "float64"))
def test_matmul_against_torch_cuda(dtype):
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    rng = np.random.default_rng(2)
    for sa, sb in (((64, 96), (96, 80)), ((4, 33, 17), (17, 9)), ((2, 3, 8, 16), (3, 16, 8))):
        a = rng.uniform(-1, 1, sa).astype(np.float32)
        b = rng.uniform(-1, 1, sb).astype(np.float32)
        lo = lucid.matmul(lucid.tensor(a).to(_dt(dtype)).to("cuda"), lucid.tensor(b).to(_dt(dtype)).to("cuda"))
        to = torch.matmul(torch.from_numpy(a).to(getattr(torch, dtype)).cuda(),
                          torch.from_numpy(b).to(getattr(torch, dtype)).cuda())
        np.testing.assert_allclose(_host(lo), to.double().cpu().numpy(), rtol=TOL[dtype], atol=TOL[dtype] * 4)


@cuda
def test_float16_accumulates_in_float32():
    # 4096 products of 1 * 1/4096... each exactly representable: a float16 accumulator would stall at 2048.
    k = 4096
    a = lucid.ones((1, k), dtype=lucid.float16).to("cuda")
    b = lucid.ones((k, 1), dtype=lucid.float16).to("cuda")
    assert float(lucid.matmul(a, b).cpu().to(lucid.float32).item()) == 4096.0
    bb = lucid.ones((1, k), dtype=lucid.bfloat16).to("cuda")
    assert float(lucid.matmul(bb, bb.mT).cpu().to(lucid.float32).item()) == 4096.0


def test_float32_matmul_precision_switch():
    prev = lucid.get_float32_matmul_precision()
    try:
        assert lucid.backends.cuda.matmul.allow_tf32 is (prev != "highest")
        lucid.backends.cuda.matmul.allow_tf32 = True
        assert lucid.get_float32_matmul_precision() == "high"
        lucid.set_float32_matmul_precision("medium")
        assert lucid.backends.cuda.matmul.allow_tf32 is True
        lucid.backends.cuda.matmul.allow_tf32 = False
        assert lucid.get_float32_matmul_precision() == "highest"
        with pytest.raises(ValueError):
            lucid.set_float32_matmul_precision("fast")
    finally:
        lucid.set_float32_matmul_precision(prev)


@cuda
def test_tf32_only_when_allowed():
    rng = np.random.default_rng(3)
    a = lucid.tensor(rng.uniform(-1, 1, (256, 512)).astype(np.float32))
    b = lucid.tensor(rng.uniform(-1, 1, (512, 256)).astype(np.float32))
    ref = _ref(lucid.matmul, a, b)
    ac, bc = a.to("cuda"), b.to("cuda")
    prev = lucid.get_float32_matmul_precision()
    try:
        lucid.set_float32_matmul_precision("highest")
        full = np.abs(_host(lucid.matmul(ac, bc)) - ref).max()
        lucid.set_float32_matmul_precision("high")
        tf32 = np.abs(_host(lucid.matmul(ac, bc)) - ref).max()
    finally:
        lucid.set_float32_matmul_precision(prev)
    assert full < 1e-4, f"full float32 error {full}"
    assert tf32 < 5e-2, f"tf32 error {tf32}"
    assert tf32 > 4 * full, f"TF32 did not change the result (errors {tf32} vs {full})"


@cuda
@pytest.mark.parametrize("dtype", FLOATS + ("int32",))
def test_addmm(dtype):
    rng = np.random.default_rng(4)
    a, b = _rand(rng, (5, 7), dtype), _rand(rng, (7, 3), dtype)
    for bias_shape in ((3,), (5, 1), (), (5, 3), (1, 3)):
        bias = _rand(rng, bias_shape, dtype)
        for beta, alpha in ((1.0, 1.0), (0.5, 2.0), (0.0, 1.0), (2.0, 0.0)):
            if dtype in INTS and (beta, alpha) != (1.0, 1.0):
                beta, alpha = 2.0, 3.0
            out = lucid.addmm(bias.to("cuda"), a.to("cuda"), b.to("cuda"), beta=beta, alpha=alpha)
            if dtype in INTS:
                exp = lucid.addmm(bias, a, b, beta=beta, alpha=alpha).numpy()
                np.testing.assert_array_equal(out.cpu().numpy(), exp)
            else:
                ref = _ref(lambda x, y, z: lucid.addmm(x, y, z, beta=beta, alpha=alpha), bias, a, b)
                _check(out, ref, dtype, f"addmm bias {bias_shape} beta {beta} alpha {alpha}")


@cuda
def test_addmm_beta0_ignores_nan_input_and_k0():
    nan_bias = lucid.full((4, 3), float("nan")).to("cuda")
    a, b = lucid.ones((4, 2)).to("cuda"), lucid.ones((2, 3)).to("cuda")
    np.testing.assert_array_equal(lucid.addmm(nan_bias, a, b, beta=0.0).cpu().numpy(), np.full((4, 3), 2.0, np.float32))
    bias = lucid.tensor([1.0, 2.0, 3.0]).to("cuda")
    out = lucid.addmm(bias, lucid.ones((4, 0)).to("cuda"), lucid.ones((0, 3)).to("cuda"), beta=2.0)
    np.testing.assert_array_equal(out.cpu().numpy(), np.tile(np.array([2.0, 4.0, 6.0], np.float32), (4, 1)))


@cuda
@pytest.mark.parametrize("dtype", FLOATS + ("int64",))
def test_linear(dtype):
    rng = np.random.default_rng(5)
    F = lucid.nn.functional
    for xs in ((4, 6), (2, 3, 6), (6,), (0, 6)):
        x, w, bias = _rand(rng, xs, dtype), _rand(rng, (5, 6), dtype), _rand(rng, (5,), dtype)
        for bb in (bias, None):
            out = F.linear(x.to("cuda"), w.to("cuda"), bb.to("cuda") if bb is not None else None)
            if dtype in INTS:
                np.testing.assert_array_equal(out.cpu().numpy(), F.linear(x, w, bb).numpy())
            else:
                _check(out, _ref(F.linear, x, w, bb), dtype, f"linear {xs} bias {bb is not None}")
    # weight given as the transpose of a [in, out] tensor, a strided bias, in_features = 0
    x, wt, b2 = _rand(rng, (3, 6), dtype), _rand(rng, (6, 5), dtype), _rand(rng, (10,), dtype)
    out = F.linear(x.to("cuda"), wt.to("cuda").mT, b2.to("cuda")[::2])
    if dtype in INTS:
        np.testing.assert_array_equal(out.cpu().numpy(), F.linear(x, wt.mT, b2[::2]).numpy())
    else:
        _check(out, _ref(lambda p, q, r: F.linear(p, q.mT, r[::2]), x, wt, b2), dtype, "linear views")
    z = F.linear(lucid.ones((3, 0), dtype=_dt(dtype)).to("cuda"), lucid.ones((5, 0), dtype=_dt(dtype)).to("cuda"),
                 lucid.arange(5).to(_dt(dtype)).to("cuda"))
    np.testing.assert_array_equal(_host(z), np.tile(np.arange(5.0), (3, 1)))


ACTS = ("none", "relu", "gelu", "gelu_tanh")


@cuda
@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
@pytest.mark.parametrize("act", ACTS)
def test_linear_fused_against_cpu(act, dtype):
    rng = np.random.default_rng(6)
    x, w, b = _rand(rng, (2, 4, 8), dtype), _rand(rng, (6, 8), dtype), _rand(rng, (6,), dtype)
    fused = lucid._C._linear_fused
    for res_shape in (None, (2, 4, 6), (6,), (4, 1)):
        res = _rand(rng, res_shape, dtype) if res_shape else None
        for first in (False, True):
            if res is None and first:
                continue
            out = fused(x.to("cuda"), w.to("cuda"), b.to("cuda"), res.to("cuda") if res is not None else None,
                        act, first)
            ref = _ref(lambda p, q, r, s: fused(p, q, r, s, act, first), x, w, b, res)
            _check(out, ref, dtype, f"linear_fused {act} residual {res_shape} first {first}")


@cuda
@pytest.mark.parametrize("act", ACTS)
def test_linear_fused_keeps_nan(act):
    # A NaN input row gives a NaN output row for every activation (relu(NaN) is NaN, as eager's relu).
    x = lucid.tensor(np.array([[1.0, 2.0, -1.0], [float("nan"), 1.0, 0.5], [-3.0, -2.0, -1.0]], np.float32))
    w = lucid.tensor(np.array([[1.0, 0.5, 0.25], [-1.0, 2.0, 0.0]], np.float32))
    b = lucid.tensor(np.array([0.1, -0.2], np.float32))
    fused = lucid._C._linear_fused
    for bias in (b, None):
        got = fused(x.to("cuda"), w.to("cuda"), bias.to("cuda") if bias is not None else None, None, act, False)
        exp = fused(x, w, bias, None, act, False)
        g, e = got.cpu().numpy(), exp.numpy()
        np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
        assert np.isnan(g[1]).all()
        np.testing.assert_allclose(g[~np.isnan(g)], e[~np.isnan(e)], rtol=1e-5, atol=1e-6)
    if act == "relu":  # all-negative row: exact zeros, as the CPU's
        np.testing.assert_array_equal(got.cpu().numpy()[2], exp.numpy()[2])


@cuda
def test_mixed_devices_raise():
    a = lucid.ones((2, 3)).to("cuda")
    with pytest.raises(Exception, match="device"):
        lucid.matmul(a, lucid.ones((3, 2)))


@cuda
def test_large_batched_product_uses_one_call_per_batch_layout():
    # A batch that cannot merge into one strided batch (a broadcast over the outer dim only)
    # runs as a host loop over the outer dim; check it against the reference.
    rng = np.random.default_rng(7)
    a, b = _rand(rng, (3, 1, 4, 5), "float32"), _rand(rng, (1, 6, 5, 2), "float32")
    _check(lucid.matmul(a.to("cuda"), b.to("cuda")), _ref(lucid.matmul, a, b), "float32", "outer-loop batch")
