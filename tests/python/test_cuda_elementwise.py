"""The CUDA backend's foundation kernels against the CPU (lucid's CPU kernels and torch on CPU):
the Copy kernel in every direction (host to device, device to host, device to device) between
every pair of dtypes, strided, broadcast and offset views on either side, a copy of more than 2^31
elements (marked large); Fill, Arange, Linspace and Eye bit for bit; every op of the elementwise
functor table on special values (NaN, +-inf, -0, tiny and huge) per dtype of its domain, in
float16/bfloat16 too, with Python numbers (host scalars passed by value), broadcast and strided
operands, in-place forms, the fused activation backwards through autograd, and integer division by
zero. Skipped without a GPU ("no CUDA device")."""
import math

import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F

pytestmark = pytest.mark.skipif(not lucid.cuda.is_available(), reason="no CUDA device")

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int32", "int64"]


def ld(name):
    return getattr(lucid, name)


def td(name):
    return getattr(torch, name)


def host(t):
    """A lucid tensor's values as a float64 / int64 / bool NumPy array (read back through the CPU)."""
    c = t.cpu()
    if c.dtype in (lucid.float16, lucid.bfloat16):
        c = c.to(lucid.float32)
    return np.array(c.numpy())


def torch_host(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.numpy()


def same(got, want, what=""):
    """Equal values, NaN where NaN, the sign of zeros kept."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if got.dtype.kind == "f" or want.dtype.kind == "f":
        g, w = got.astype(np.float64), want.astype(np.float64)
        assert np.array_equal(np.isnan(g), np.isnan(w)), (what, g, w)
        ok = ~np.isnan(w)
        assert np.array_equal(g[ok], w[ok]), (what, g[ok], w[ok])
        assert np.array_equal(np.signbit(g[ok]), np.signbit(w[ok])), (what, "sign of zero", g[ok], w[ok])
    else:
        assert np.array_equal(got, want), (what, got, want)


def close(got, want, dtype, what=""):
    """Within a few units in the last place of the dtype (the device's libm differs from glibc's by
    up to 2 ulp; 16-bit results are rounded from float), NaN and inf where the CPU has them."""
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert g.shape == w.shape, (what, g.shape, w.shape)
    assert np.array_equal(np.isnan(g), np.isnan(w)), (what, "NaN positions", g, w)
    ok = ~np.isnan(w)
    inf = np.isinf(w) & ok
    assert np.array_equal(g[inf], w[inf]), (what, "infinities", g[inf], w[inf])
    fin = ok & ~inf
    rtol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 4e-6, "float64": 1e-12}.get(dtype, 0)
    # (an absolute floor for results near a zero of the function: sin(pi), lgamma near its roots)
    atol = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 2e-6, "float64": 1e-13}.get(dtype, 0)
    np.testing.assert_allclose(g[fin], w[fin], rtol=rtol, atol=atol, err_msg=what)


def values_for(dtype, n=40, seed=0):
    """Test values of a dtype as a NumPy array: specials (NaN, +-inf, -0, tiny, huge) for floats."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=n).astype(bool)
    if dtype in INTS:
        info = np.iinfo(dtype)
        v = rng.integers(max(info.min, -1000), min(info.max, 1000), size=n, endpoint=True).astype(dtype)
        v[:4] = [info.min, info.max, 0, 1] if info.min < 0 else [0, info.max, 1, 2]
        return v
    v = rng.uniform(-4, 4, size=n)
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-30, -1e-30, 1e30, -1e30, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 3.0]
    v[: len(specials)] = specials
    return v.astype(np.float32 if dtype in ("float16", "bfloat16") else dtype)


def lucid_of(a, dtype, device="cpu"):
    t = lucid.tensor(a)
    t = t.to(ld(dtype))
    return t.to(device)


# ---- Copy ------------------------------------------------------------------------------------

# Values every cast converts the same way on the CPU and on the device (no float out of an
# integer type's range, which is undefined behaviour in C++).
CAST_VALUES = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.75, 100.0, 127.0, -128.0, 3.5, 42.0], dtype=np.float64)


def cast_source(dtype):
    if dtype == "bool":
        return np.array([True, False, True, True, False, False, True, False, True, True, False, True])
    if dtype == "uint8":
        return np.array([0, 1, 2, 100, 127, 128, 200, 255, 3, 4, 42, 7], dtype=np.uint8)
    if dtype in INTS:
        return np.array([0, 1, -1, 2, -2, 100, 127, -128, 3, -3, 42, 7], dtype=dtype)
    return CAST_VALUES.astype(np.float32 if dtype in ("float16", "bfloat16") else dtype)


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_copy_every_direction_and_dtype_pair_matches_torch(src, dst):
    a = cast_source(src)
    if dst == "uint8" and src not in ("bool", "uint8"):
        a = np.abs(a)  # negative to uint8 wraps on the CPU and saturates in torch's CUDA; keep it defined
    want = torch_host(torch.from_numpy(a.copy()).to(td(src)).to(td(dst)))
    x_cpu = lucid_of(a, src)
    x_gpu = x_cpu.to("cuda")
    same(host(x_gpu), torch_host(torch.from_numpy(a.copy()).to(td(src))), "host to device")
    same(host(x_gpu.to(ld(dst))), want, "device to device cast")
    same(host(x_cpu.to("cuda", ld(dst))), want, "host to device cast")
    same(host(x_gpu.to("cpu", ld(dst))), want, "device to host cast")
    d = lucid.zeros(len(a), dtype=ld(dst), device="cuda")
    d.copy_(x_cpu)
    same(host(d), want, "copy_ from the host")
    h = lucid.zeros(len(a), dtype=ld(dst))
    h.copy_(x_gpu)
    same(host(h), want, "copy_ to the host")


def test_float_to_uint8_wraps_negative_values_as_the_cpu():
    a = lucid.tensor([-1.0, -3.7, -128.0, 255.0, 1.9])
    same(host(a.cuda().to(lucid.uint8)), host(a.to(lucid.uint8)))


def test_cast_to_bool_is_nonzero_and_nan_is_true():
    a = np.array([np.nan, 0.0, -0.0, 1e-30, -np.inf, 5e-324])
    for dt in ["float32", "float64", "float16", "bfloat16"]:
        x = lucid_of(a, dt)
        same(host(x.cuda().to(lucid.bool)), host(x.to(lucid.bool)), dt)


def _views(t):
    """Strided, offset, transposed and broadcast views of a [6, 8] tensor."""
    return {
        "transposed": t.t(),
        "step": t[::2, 1::3],
        "offset": t[1:, 2:],
        "column": t[:, 3],
        "expanded": t[2:3, :].expand(5, 8),
    }


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool", "uint8"])
@pytest.mark.parametrize("view", ["transposed", "step", "offset", "column", "expanded"])
def test_copies_of_strided_broadcast_and_offset_views(dtype, view):
    base = values_for(dtype, n=48, seed=3).reshape(6, 8)
    if dtype in FLOATS:
        base = np.nan_to_num(base, nan=1.0, posinf=2.0, neginf=-2.0)
    c = lucid_of(base, dtype)
    g = c.cuda()
    want = host(_views(c)[view].contiguous())
    same(host(_views(g)[view]), want, "device to host of a view")
    same(host(_views(g)[view].contiguous()), want, "device contiguous() of a view")
    same(host(_views(c)[view].cuda()), want, "host to device of a view")
    # Writes into strided device and host destinations.
    src = _views(c)[view].contiguous() + 1 if dtype != "bool" else ~_views(c)[view].contiguous()
    gd = lucid.zeros(6, 8, dtype=ld(dtype), device="cuda")
    cd = lucid.zeros(6, 8, dtype=ld(dtype))
    if view == "expanded":
        return  # an expanded view is not writable
    _views(gd)[view].copy_(src)
    _views(cd)[view].copy_(src)
    same(host(gd), host(cd), "host to strided device view")
    if dtype != "int64":  # (float64 holds every value of the others exactly)
        _views(gd)[view].copy_(src.cuda().to(lucid.float64))
        same(host(gd), host(cd), "device cast into a strided device view")
    h = lucid.zeros(6, 8, dtype=ld(dtype))
    _views(h)[view].copy_(src.cuda())
    same(host(h), host(cd), "device to strided host view")


def test_scalar_source_broadcast_fills():
    g = lucid.zeros(4, 5, device="cuda")
    g.copy_(lucid.tensor(2.5))
    same(host(g), np.full((4, 5), 2.5, dtype=np.float32))
    g[1:3, ::2].copy_(lucid.tensor(7))
    c = lucid.zeros(4, 5)
    c.copy_(lucid.tensor(2.5))
    c[1:3, ::2].copy_(lucid.tensor(7))
    same(host(g), host(c))


def test_empty_copies():
    for shape in [(0,), (3, 0), (0, 2, 5)]:
        z = lucid.zeros(*shape)
        assert tuple(z.cuda().shape) == shape
        assert tuple(z.cuda().cpu().shape) == shape
        assert tuple(z.cuda().to(lucid.float16).shape) == shape


@pytest.mark.large
def test_copy_of_more_than_two_to_the_31_elements():
    n = 2**31 + 8
    a = np.zeros(n, dtype=np.uint8)
    a[:: 2**20] = 1
    a[-8:] = np.arange(8, dtype=np.uint8) + 3
    g = lucid.from_numpy(a).cuda()
    strided = g[1::2]  # a strided device view of more than 2^30 elements, through the int64 path
    h = strided.cpu()
    assert h.shape[0] == len(a[1::2])
    np.testing.assert_array_equal(h.numpy()[-4:], a[1::2][-4:])
    del h
    back = g.cpu().numpy()
    np.testing.assert_array_equal(back[-8:], a[-8:])
    assert int(back.sum()) == int(a.sum())
    wide = g.to(lucid.int32)  # a cast of more than 2^31 elements
    np.testing.assert_array_equal(wide[-8:].cpu().numpy(), a[-8:].astype(np.int32))
    del wide
    plus = g + 1  # an elementwise op over more than 2^31 elements
    np.testing.assert_array_equal(plus[-8:].cpu().numpy(), a[-8:] + 1)


# ---- creation ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_matches_the_cpu_bit_for_bit(dtype):
    for value in [0.0, 1.0, -0.0, 2.5, -7.0, 1e-3, 65504.0, float("nan"), float("inf")]:
        if dtype in INTS and (not math.isfinite(value) or value != int(value) or (dtype == "uint8" and value < 0)):
            continue
        if dtype == "int8" and abs(value) > 127 or dtype == "uint8" and value > 255:
            continue
        g = lucid.full((3, 5), value, dtype=ld(dtype), device="cuda")
        c = lucid.full((3, 5), value, dtype=ld(dtype))
        same(host(g), host(c), f"full {value}")
        s = lucid.zeros(6, 10, dtype=ld(dtype), device="cuda")
        sc = lucid.zeros(6, 10, dtype=ld(dtype))
        s[::2, 1::3].fill_(value)
        sc[::2, 1::3].fill_(value)
        same(host(s), host(sc), f"strided fill_ {value}")


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"])
def test_arange_linspace_eye_match_the_cpu_bit_for_bit(dtype):
    dt = ld(dtype)
    for start, end, step in [(0, 10, 1), (-3.5, 7.25, 0.37), (1, 2, 0.1), (0, 100, 7), (10, -10, -0.3)]:
        if dtype == "uint8" and min(start, end) < 0:
            continue
        try:
            want = lucid.arange(start, end, step, dtype=dt)
        except (RuntimeError, TypeError, ValueError):
            continue  # not an arange of this dtype on the CPU either
        same(host(lucid.arange(start, end, step, dtype=dt, device="cuda")), host(want), f"arange {start} {end} {step}")
    for start, end, steps in [(0, 1, 11), (-2.3, 9.7, 1000), (5, -5, 7), (0, 100, 2), (3, 3, 1), (0, 1, 0), (-1e3, 1e3, 12345)]:
        if dtype == "uint8" and (start < 0 or end < 0):
            continue
        if dtype == "int8" and max(abs(start), abs(end)) > 127:
            continue
        same(host(lucid.linspace(start, end, steps, dtype=dt, device="cuda")), host(lucid.linspace(start, end, steps, dtype=dt)),
             f"linspace {start} {end} {steps}")
    for n, m in [(4, 4), (3, 7), (9, 2), (0, 3)]:
        same(host(lucid.eye(n, m, dtype=dt, device="cuda")), host(lucid.eye(n, m, dtype=dt)), f"eye {n} {m}")


# ---- the elementwise functor table ---------------------------------------------------------------

# op -> (function of lucid tensors, domain of compute dtypes)
UNARY = {
    "neg": (lucid.neg, "numeric"), "abs": (lucid.abs, "numeric"), "exp": (lucid.exp, "float"), "log": (lucid.log, "float"),
    "log2": (lucid.log2, "float"), "log10": (lucid.log10, "float"), "log1p": (lucid.log1p, "float"),
    "expm1": (lucid.expm1, "float"), "sqrt": (lucid.sqrt, "float"), "rsqrt": (lucid.rsqrt, "float"),
    "reciprocal": (lucid.reciprocal, "float"), "square": (lucid.square, "numeric"), "sin": (lucid.sin, "float"),
    "cos": (lucid.cos, "float"), "tanh": (lucid.tanh, "float"), "sigmoid": (lucid.sigmoid, "float"), "erf": (lucid.erf, "float"),
    "sign": (lucid.sign, "all"), "floor": (lucid.floor, "numeric"), "ceil": (lucid.ceil, "numeric"),
    "round": (lucid.round, "numeric"), "trunc": (lucid.trunc, "numeric"), "isnan": (lucid.isnan, "all"),
    "isinf": (lucid.isinf, "all"), "logical_not": (lucid.logical_not, "all"), "bitwise_not": (lucid.bitwise_not, "integral"),
    "tan": (lucid.tan, "float"), "asin": (lucid.asin, "float"), "acos": (lucid.acos, "float"), "atan": (lucid.atan, "float"),
    "sinh": (lucid.sinh, "float"), "cosh": (lucid.cosh, "float"), "asinh": (lucid.asinh, "float"),
    "acosh": (lucid.acosh, "float"), "atanh": (lucid.atanh, "float"), "erfc": (lucid.erfc, "float"),
    "erfinv": (lucid.erfinv, "float"), "lgamma": (lucid.lgamma, "float"), "digamma": (lucid.digamma, "float"),
    "polygamma1": (lambda x: lucid.polygamma(1, x), "float"), "polygamma3": (lambda x: lucid.polygamma(3, x), "float"),
    "relu": (F.relu, "numeric"), "relu6": (F.relu6, "numeric"), "hardswish": (F.hardswish, "float"),
    "hardsigmoid": (F.hardsigmoid, "float"), "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), "float"),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), "numeric"), "softshrink": (lambda x: F.softshrink(x, 0.7), "float"),
    "hardshrink": (lambda x: F.hardshrink(x, 0.7), "float"), "threshold": (lambda x: F.threshold(x, 0.3, 2.0), "numeric"),
    "selu": (F.selu, "float"), "silu": (F.silu, "float"), "mish": (F.mish, "float"), "softsign": (F.softsign, "float"),
    "logsigmoid": (F.logsigmoid, "float"), "tanhshrink": (F.tanhshrink, "float"), "elu": (lambda x: F.elu(x, 0.7), "float"),
    "celu": (lambda x: F.celu(x, 1.3), "float"), "gelu": (F.gelu, "float"),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), "float"), "softplus": (lambda x: F.softplus(x, 2.0, 10.0), "float"),
    "clamp": (lambda x: lucid.clamp(x, -1.5, 2.0), "numeric"), "clamp_min": (lambda x: lucid.clamp(x, min=0.5), "numeric"),
}
BINARY = {
    "add": (lucid.add, "all"), "sub": (lucid.sub, "numeric"), "mul": (lucid.mul, "all"), "div": (lucid.div, "float"),
    "pow": (lucid.pow, "numeric"), "maximum": (lucid.maximum, "all"), "minimum": (lucid.minimum, "all"),
    "floor_divide": (lucid.floor_divide, "numeric"), "remainder": (lucid.remainder, "numeric"),
    "eq": (lucid.eq, "all"), "ne": (lucid.ne, "all"), "lt": (lucid.lt, "all"), "le": (lucid.le, "all"), "gt": (lucid.gt, "all"),
    "ge": (lucid.ge, "all"), "logical_and": (lucid.logical_and, "all"), "logical_or": (lucid.logical_or, "all"),
    "logical_xor": (lucid.logical_xor, "all"), "bitwise_and": (lucid.bitwise_and, "integral"),
    "bitwise_or": (lucid.bitwise_or, "integral"), "bitwise_xor": (lucid.bitwise_xor, "integral"),
    "atan2": (lucid.atan2, "float"),
}
TERNARY = {
    "lerp": (lucid.lerp, "float"), "addcmul": (lambda x, a, b: lucid.addcmul(x, a, b, value=0.5), "numeric"),
    "addcdiv": (lambda x, a, b: lucid.addcdiv(x, a, b, value=-1.5), "float"),
}
# Exact on both devices (IEEE-exact operations, integer math, selections); the others use close().
EXACT = {"neg", "abs", "square", "sign", "floor", "ceil", "round", "trunc", "isnan", "isinf", "logical_not", "bitwise_not",
         "relu", "relu6", "hardtanh", "threshold", "clamp", "clamp_min", "hardshrink", "softshrink", "leaky_relu", "add",
         "sub", "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
         "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "sqrt", "reciprocal", "div", "floor_divide",
         "remainder"}


def domain_dtypes(domain):
    return {"float": FLOATS, "numeric": INTS + FLOATS, "all": ["bool"] + INTS + FLOATS, "integral": ["bool"] + INTS}[domain]


def check(name, got, want, dtype):
    if name in EXACT or got.dtype == lucid.bool or dtype not in FLOATS:
        same(host(got), host(want), name)
    else:
        close(host(got), host(want), dtype, name)


def cases(table):
    return [(n, dt) for n, (_, dom) in table.items() for dt in domain_dtypes(dom)]


@pytest.mark.parametrize("name,dtype", cases(UNARY))
def test_unary_functors_match_the_cpu_kernel(name, dtype):
    fn = UNARY[name][0]
    a = values_for(dtype, n=64, seed=1)
    x = lucid_of(a, dtype)
    want = fn(x)
    got = fn(x.cuda())
    assert got.device.type == "cuda" and got.dtype == want.dtype
    check(name, got, want, dtype)
    # A strided (transposed) operand.
    xt = lucid_of(a.reshape(8, 8), dtype).t()
    check(name + " transposed", fn(xt.cuda()), fn(xt), dtype)


def _binary_operands(name, dtype):
    a = values_for(dtype, n=64, seed=2)
    b = values_for(dtype, n=64, seed=5)
    if name in ("floor_divide", "remainder") and dtype in INTS + ["bool"]:
        b = np.where(b == 0, 3, b).astype(b.dtype)
    if name == "pow" and dtype in INTS:
        b = np.abs(b) % 5
        b = b.astype(dtype)
    return a, b


@pytest.mark.parametrize("name,dtype", cases(BINARY))
def test_binary_functors_match_the_cpu_kernel(name, dtype):
    fn = BINARY[name][0]
    a, b = _binary_operands(name, dtype)
    x, y = lucid_of(a, dtype), lucid_of(b, dtype)
    check(name, fn(x.cuda(), y.cuda()), fn(x, y), dtype)
    # Broadcast: a row against a column, and a strided operand.
    xr, yc = lucid_of(a[:8], dtype).reshape(1, 8), lucid_of(b[:8], dtype).reshape(8, 1)
    check(name + " broadcast", fn(xr.cuda(), yc.cuda()), fn(xr, yc), dtype)
    xs = lucid_of(a.reshape(8, 8), dtype)[:, ::2]
    ys = lucid_of(b.reshape(8, 8), dtype)[::2, :].t()
    check(name + " strided", fn(xs.cuda(), ys.cuda()), fn(xs, ys), dtype)


@pytest.mark.parametrize("name,dtype", cases(TERNARY))
def test_ternary_functors_match_the_cpu_kernel(name, dtype):
    fn = TERNARY[name][0]
    a, b, w = (values_for(dtype, n=48, seed=s) for s in (6, 7, 8))
    if name == "lerp":
        w = np.linspace(-0.5, 1.5, 48).astype(w.dtype)
    x, y, z = (lucid_of(v, dtype) for v in (a, b, w))
    check(name, fn(x.cuda(), y.cuda(), z.cuda()), fn(x, y, z), dtype)
    # The second operand broadcast from one element, the third strided.
    zs = lucid_of(np.repeat(w, 2), dtype)[::2]
    check(name + " broadcast", fn(x.cuda(), y[:1].cuda(), zs.cuda()), fn(x, y[:1], zs), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_and_masked_fill(dtype):
    a, b = values_for(dtype, n=40, seed=9), values_for(dtype, n=40, seed=10)
    m = values_for("bool", n=40, seed=11)
    x, y, c = lucid_of(a, dtype), lucid_of(b, dtype), lucid.tensor(m)
    same(host(lucid.where(c.cuda(), x.cuda(), y.cuda())), host(lucid.where(c, x, y)), "where")
    same(host(lucid.where(c.cuda(), x.cuda(), 0)), host(lucid.where(c, x, 0)), "where with a Python number")
    same(host(lucid.where(c.cuda(), 1.5, y.cuda())), host(lucid.where(c, 1.5, y)), "where with a float number")
    same(host(lucid.where(c.reshape(5, 8)[:, :1].cuda(), x.reshape(5, 8).cuda(), y[:8].cuda())),
         host(lucid.where(c.reshape(5, 8)[:, :1], x.reshape(5, 8), y[:8])), "where broadcast")
    value = 3.0 if dtype != "bool" else 1.0
    same(host(x.cuda().masked_fill(c.cuda(), value)), host(x.masked_fill(c, value)), "masked_fill")
    same(host(x.reshape(5, 8).cuda().masked_fill(c[:8].cuda(), value)), host(x.reshape(5, 8).masked_fill(c[:8], value)),
         "masked_fill broadcast mask")


HOST_SCALAR_CASES = [
    ("float32", lambda x: x + 1.5), ("float32", lambda x: 2.0 ** x), ("float32", lambda x: x * -0.0),
    ("float32", lambda x: 1 - x), ("float32", lambda x: x / 3), ("float16", lambda x: x * 1e-4),
    ("bfloat16", lambda x: x + 1e10), ("float16", lambda x: x - 70000.0),
    ("int32", lambda x: x + 1.5), ("int64", lambda x: x * 3), ("int8", lambda x: x + 200),
    ("uint8", lambda x: x - 1), ("bool", lambda x: x + 1), ("bool", lambda x: x & True),
    ("int64", lambda x: x // 7), ("int64", lambda x: x % -3), ("float64", lambda x: lucid.maximum(x, lucid.tensor(0.25))),
    ("float32", lambda x: x > 0.5), ("int32", lambda x: x == 3), ("float32", lambda x: lucid.clamp(x, min=0)),
    ("int32", lambda x: lucid.clamp(x, min=0.5)), ("float32", lambda x: x.pow(2)), ("float32", lambda x: x.pow(0.5)),
    ("int64", lambda x: x ** 2), ("float32", lambda x: lucid.tensor(2.0, dtype=lucid.float64) * x),
]


@pytest.mark.parametrize("i", range(len(HOST_SCALAR_CASES)))
def test_python_numbers_are_host_scalars(i):
    dtype, fn = HOST_SCALAR_CASES[i]
    a = values_for(dtype, n=40, seed=12)
    x = lucid_of(a, dtype)
    want, got = fn(x), fn(x.cuda())
    assert got.device.type == "cuda" and got.dtype == want.dtype, (got.dtype, want.dtype)
    if dtype in FLOATS and got.dtype != lucid.bool:
        close(host(got), host(want), str(want.dtype).split(".")[-1])
    else:
        same(host(got), host(want))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_in_place_forms_including_into_strided_views(dtype):
    a, b = values_for(dtype, n=48, seed=13), values_for(dtype, n=48, seed=14)
    for op in [lambda t, u: t.add_(u), lambda t, u: t.mul_(2), lambda t, u: t.clamp_(-1, 1), lambda t, u: t.sub_(u[:1])]:
        c, cu = lucid_of(a, dtype).reshape(6, 8), lucid_of(b, dtype).reshape(6, 8)
        g, gu = c.cuda(), cu.cuda()
        op(c[::2, 1:], cu[::2, 1:])
        op(g[::2, 1:], gu[::2, 1:])
        same(host(g), host(c))
    # In place into a wider dtype than the op computes in goes through a temporary.
    f, fi = lucid.zeros(6, dtype=lucid.float64), lucid.arange(6, dtype=lucid.int32)
    g = f.cuda()
    f.add_(fi)
    g.add_(fi.cuda())
    same(host(g), host(f))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8"])
def test_integer_division_by_zero_raises_as_on_the_cpu(dtype):
    x = lucid.tensor([5, 7, 9]).to(ld(dtype))
    y = lucid.tensor([1, 0, 2]).to(ld(dtype))
    for fn in (lucid.floor_divide, lucid.remainder):
        with pytest.raises(RuntimeError) as cpu_err:
            fn(x, y)
        with pytest.raises(RuntimeError) as gpu_err:
            fn(x.cuda(), y.cuda())
        assert str(gpu_err.value) == str(cpu_err.value)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(x.cuda(), 0)
    same(host(lucid.floor_divide(x.cuda(), y.cuda() + 1)), host(lucid.floor_divide(x, y + 1)))


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "silu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_fused_activation_backwards_match_the_cpu(act, dtype):
    fns = {"relu": F.relu, "sigmoid": lucid.sigmoid, "tanh": lucid.tanh, "silu": F.silu, "gelu": F.gelu,
           "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}
    a = np.nan_to_num(values_for(dtype, n=32, seed=15), nan=0.3, posinf=5.0, neginf=-5.0)
    grads = []
    for device in ("cpu", "cuda"):
        x = lucid_of(a, dtype, device).detach()
        x.requires_grad_(True)
        y = fns[act](x)
        y.backward(lucid.full(tuple(y.shape), 0.5, dtype=y.dtype, device=device))
        grads.append(x.grad)
    close(host(grads[1]), host(grads[0]), dtype, act)


def test_logsumexp_backward_uses_exp_sub():
    a = np.random.default_rng(16).normal(size=(4, 7))
    xs = []
    for device in ("cpu", "cuda"):
        x = lucid.tensor(a).to(device).detach()
        x.requires_grad_(True)
        lucid.logsumexp(x, 1).sum().backward()
        xs.append(x.grad)
    close(host(xs[1]), host(xs[0]), "float64")


def test_elementwise_on_empty_and_zero_dim_tensors():
    for shape in [(0,), (2, 0, 3)]:
        z = lucid.zeros(*shape, device="cuda")
        assert tuple((z + 1).shape) == shape
        assert tuple(lucid.exp(z).shape) == shape
    s = lucid.tensor(2.0).cuda()
    same(host(s * 3 + s), np.array(8.0, dtype=np.float32))
    same(host(lucid.tensor(3).cuda() // 2), np.array(1))


def test_large_contiguous_add_uses_every_element():
    n = (1 << 22) + 13  # not a multiple of the vector width: the tail path too
    a = np.arange(n, dtype=np.float32)
    x = lucid.from_numpy(a).cuda()
    out = (x + x).cpu().numpy()
    np.testing.assert_array_equal(out, a + a)
    off = (x[1:] * 2).cpu().numpy()  # an unaligned contiguous view: the strided path
    np.testing.assert_array_equal(off, a[1:] * 2)


def test_non_blocking_copies_with_pinned_memory():
    a = lucid.arange(4096, dtype=lucid.float32).pin_memory()
    g = a.to("cuda", non_blocking=True)  # from the caller's pinned buffer: returns before the copy ends
    lucid.cuda.synchronize()
    same(host(g), host(a))
    h = lucid.zeros(4096).pin_memory()
    h.copy_(g * 2, non_blocking=True)
    lucid.cuda.synchronize()
    same(h.numpy(), host(a) * 2)
    back = (g + 1).to("cpu", non_blocking=True)  # into pageable memory: waits
    same(back.numpy(), host(a) + 1)
