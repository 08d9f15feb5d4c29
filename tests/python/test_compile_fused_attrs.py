"""Elementwise ops with attributes inside FusedElementwise bodies (issue 13, item 7).

The fourteen elementwise ops whose scalar functor has parameters (gelu's approximation, clamp's
bounds, leaky_relu's slope...) and polygamma lower as Elementwise like any other: a body's node
keeps its Attrs and the CPU block interpreter builds the op's functor from them once, when the
executable is built, then runs the eager kernel's own row loop. So `op(x*2, attrs) + x` compiles
to ONE FusedElementwise node, and its result equals eager bit for bit, NaN, infinities and
signed zeros included (the same row loop on the same stored dtypes). The save_compiled round trip
carries the body's attributes: the loaded artifact runs what the file says (editing the saved
attribute changes the result).

The op-spec table drives the same check for every elementwise row (test_ops_compiled.py,
test_elementwise_row_inside_a_fused_group_equals_eager)."""
import json
import re

import numpy as np
import pytest

import lucid
import lucid.nn.functional as F
from harness import ir_body_ops, ir_top_level_ops
from lucid.compile import ArtifactError, load_compiled, save_compiled

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-40, 0.6, -0.6, 0.3, -0.5, 0.75, 5.0]


def _grad_of_gelu(x, g, approximate):
    xd = x.detach().requires_grad_(True)
    return lucid.autograd.grad([F.gelu(xd, approximate=approximate)], [xd], [g])[0]


# name -> (the OpId it exercises, fn(x, y, mask) computing op(x*2, attrs) + x)
CASES = {
    "gelu": ("Gelu", lambda x, y, m: F.gelu(x * 2) + x),
    "gelu_tanh": ("Gelu", lambda x, y, m: F.gelu(x * 2, approximate="tanh") + x),
    "gelu_backward": ("GeluBackward", lambda x, y, m: _grad_of_gelu(x, y * 2, "none") + x),
    "gelu_backward_tanh": ("GeluBackward", lambda x, y, m: _grad_of_gelu(x, y * 2, "tanh") + x),
    "clamp": ("Clamp", lambda x, y, m: lucid.clamp(x * 2, -1.5, 0.75) + x),
    "clamp_min": ("Clamp", lambda x, y, m: lucid.clamp(x * 2, min=-0.5) + x),
    "clamp_max": ("Clamp", lambda x, y, m: lucid.clamp(x * 2, max=0.5) + x),
    "clamp_min_above_max": ("Clamp", lambda x, y, m: lucid.clamp(x * 2, min=1.0, max=-1.0) + x),
    "leaky_relu": ("LeakyRelu", lambda x, y, m: F.leaky_relu(x * 2, 0.2) + x),
    "elu": ("Elu", lambda x, y, m: F.elu(x * 2, alpha=1.3) + x),
    "softplus": ("Softplus", lambda x, y, m: F.softplus(x * 2, beta=2.0, threshold=5.0) + x),
    "hardtanh": ("Hardtanh", lambda x, y, m: F.hardtanh(x * 2, -0.5, 1.25) + x),
    "addcmul": ("Addcmul", lambda x, y, m: lucid.addcmul(x * 2, y, x, value=0.5) + x),
    "addcdiv": ("Addcdiv", lambda x, y, m: lucid.addcdiv(x * 2, y, x, value=-1.5) + x),
    "masked_fill": ("MaskedFill", lambda x, y, m: (x * 2).masked_fill(m, 3.5) + x),
    "celu": ("Celu", lambda x, y, m: F.celu(x * 2, alpha=0.7) + x),
    "hardshrink": ("Hardshrink", lambda x, y, m: F.hardshrink(x * 2, 0.6) + x),
    "softshrink": ("Softshrink", lambda x, y, m: F.softshrink(x * 2, 0.6) + x),
    "threshold": ("Threshold", lambda x, y, m: F.threshold(x * 2, 0.3, -2.0) + x),
    "polygamma": ("Polygamma", lambda x, y, m: lucid.polygamma(1, x * 2) + x),
}
FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]


def _inputs(seed, dtype, shape=(7, 300)):
    """x with NaN, infinities, signed zeros, a subnormal, huge values and values on the ops'
    thresholds planted; y a second float operand; a bool mask."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=shape)
    flat = x.reshape(-1)
    flat[:len(SPECIAL)] = SPECIAL
    flat[-len(SPECIAL):] = SPECIAL[::-1]
    y = rng.uniform(-2, 2, size=shape)
    y.reshape(-1)[:3] = [np.nan, np.inf, 0.0]
    dt = getattr(lucid, dtype)
    return (lucid.tensor(x.astype(np.float64)).to(dt), lucid.tensor(y.astype(np.float64)).to(dt),
            lucid.tensor(rng.integers(0, 2, size=shape).astype(bool)))


def _bits(t):
    """The output's bits as unsigned integers (16-bit floats widened to float32, exactly)."""
    a = t.detach().float().numpy() if t.dtype in (lucid.float16, lucid.bfloat16) else t.detach().numpy()
    if a.dtype.kind != "f":
        return a
    return a.view({4: np.uint32, 8: np.uint64}[a.itemsize])


def _check_one_fused_node(c, op):
    ir = c.ir()
    assert ir_top_level_ops(ir) == ["FusedElementwise"], ir
    assert op in ir_body_ops(ir), ir


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_op_with_attributes_fuses_into_one_node_equal_to_eager_bit_for_bit(name, dtype):
    op, fn = CASES[name]
    if op == "Polygamma" and dtype in ("float16", "bfloat16"):
        pytest.skip("polygamma has no 16-bit kernel, as torch's CPU")
    c = lucid.compile(fn, strict=True)
    for seed in (0, 1):  # the trace, then the cached executable with new values
        x, y, m = _inputs(seed, dtype)
        got, want = c(x, y, m), fn(x, y, m)
        assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{name} {dtype} call {seed}")
    _check_one_fused_node(c, op)
    assert c.cache_info()["entries"] == 1


INT_CASES = {
    "clamp_int_bounds": ("Clamp", lambda x, m: lucid.clamp(x * 2, -3, 4) + x),
    "clamp_float_bound_promotes": ("Clamp", lambda x, m: lucid.clamp(x * 2, min=0.5) + x),
    "hardtanh": ("Hardtanh", lambda x, m: F.hardtanh(x * 2, -3.0, 4.0) + x),
    "threshold": ("Threshold", lambda x, m: F.threshold(x * 2, 1, -7) + x),
    "masked_fill": ("MaskedFill", lambda x, m: (x * 2).masked_fill(m, 9) + x),
}


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("name", list(INT_CASES))
def test_integer_ops_with_attributes_fuse_and_promote_as_eager(name, dtype):
    op, fn = INT_CASES[name]
    c = lucid.compile(fn, strict=True)
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = lucid.tensor(rng.integers(0, 9, size=(5, 33)).astype(dtype))
        m = lucid.tensor(rng.integers(0, 2, size=(5, 33)).astype(bool))
        got, want = c(x, m), fn(x, m)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{name} {dtype}")
    _check_one_fused_node(c, op)


def test_gpt2_mlp_gelu_tanh_joins_the_elementwise_group():
    # Linear -> gelu(tanh) -> Linear: the gelu is not a oneDNN post-op (1-2 ulp away from eager,
    # test_compile.py), so it is the head of an elementwise group with what follows it.
    lucid.manual_seed(0)
    fc, proj = lucid.nn.Linear(16, 64), lucid.nn.Linear(64, 16)

    def mlp(x):
        h = fc(x)
        return proj(F.gelu(h, approximate="tanh") * 0.5 + h * 0.5) + x

    c = lucid.compile(mlp, strict=True)
    with lucid.no_grad():
        x = lucid.randn(3, 5, 16)
        np.testing.assert_array_equal(_bits(c(x)), _bits(mlp(x)))
    ir = c.ir()
    assert "Gelu" in ir_body_ops(ir) and "Gelu" not in ir_top_level_ops(ir), ir


def test_invalid_attributes_still_raise_as_eager():
    # celu(alpha=0) is rejected by the op's infer at trace time, compiled as eager.
    x = lucid.randn(4)
    with pytest.raises(ValueError, match="alpha"):
        F.celu(x * 2, alpha=0.0)
    with pytest.raises(ValueError, match="alpha"):
        lucid.compile(lambda t: F.celu(t * 2, alpha=0.0) + t, strict=True)(x)


def _gelu_clamp(x):
    return lucid.clamp(F.gelu(x * 2, approximate="tanh"), min=-0.1, max=1.5) + x


def test_save_load_round_trip_carries_fused_attributes(tmp_path):
    import artifact_fuzz
    c = lucid.compile(_gelu_clamp, strict=True)
    x = _inputs(0, "float32")[0]
    with lucid.no_grad():
        ref = c(x)
    assert ir_top_level_ops(c.ir()) == ["FusedElementwise"]
    path = tmp_path / "gelu_clamp.lucid"
    save_compiled(c, path)
    loaded = load_compiled(path)
    ir = loaded.ir()
    assert ir_top_level_ops(ir) == ["FusedElementwise"] and {"Gelu", "Clamp"} <= set(ir_body_ops(ir)), ir
    assert 'approximate="tanh"' in ir and re.search(r"Clamp\(%\d+\) \{min=-0\.10*1?, max=1\.5\}", ir), ir
    with lucid.no_grad():
        for seed in (0, 1):
            x = _inputs(seed, "float32")[0]
            out = loaded(x)
            np.testing.assert_array_equal(_bits(out), _bits(_gelu_clamp(x)))
            if seed == 0:
                np.testing.assert_array_equal(_bits(out), _bits(ref))
    # The loaded program runs the attributes the file holds: the same file with the body's
    # approximation edited to "none" computes the erf GELU.
    header, blobs = artifact_fuzz.split(path.read_bytes())
    k = header["programs"][0]["ir"]
    assert blobs[k].count(b'approximate="tanh"') == 1
    edited = [b.replace(b'approximate="tanh"', b'approximate="none"') if i == k else b for i, b in enumerate(blobs)]
    p2 = tmp_path / "gelu_none.lucid"
    p2.write_bytes(artifact_fuzz.join(header, edited))
    x = _inputs(0, "float32")[0]
    with lucid.no_grad():
        out = load_compiled(p2)(x)
    want = lucid.clamp(F.gelu(x * 2), min=-0.1, max=1.5) + x
    np.testing.assert_array_equal(_bits(out), _bits(want))
    assert not np.array_equal(_bits(out), _bits(ref))
    # A file of the format before fused bodies held attributes is refused, saying so.
    h = json.loads(json.dumps(header))
    h["stamp"]["format_version"] = 1
    p3 = tmp_path / "v1.lucid"
    p3.write_bytes(artifact_fuzz.join(h, blobs))
    with pytest.raises(ArtifactError, match="format version 1 .*older lucid"):
        load_compiled(p3)
