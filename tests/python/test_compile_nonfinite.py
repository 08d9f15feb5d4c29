"""NaN, infinities and signed zeros through every fused path of lucid.compile: compiled == eager,
NaN positions included, and eager == PyTorch where the op defines them.

Why: the fused paths select values (max, clamp, where, relu), and a select written for finite
inputs silently loses NaN: oneDNN's relu post-op (max(x, 0)) turned NaN into 0 after every
absorbed Linear/Conv, so a compiled forward on a batch with one NaN gave finite outputs and a
finite loss while its backward still made the parameters NaN.

- Epilogues: Linear, Conv1d, Conv2d (with and without bias, eval BatchNorm folded into the conv)
  and ConvTranspose2d, followed by relu, relu(op + r), relu(op) + r, op + r or an in-place relu;
  inputs and residuals with NaN, +-inf and -0.0; float32 and float64. Bit for bit where no pass
  reassociates (everything but BatchNorm folding, which scales the weights: there within 1e-5 and
  the same non-finite values).
- Fused elementwise bodies: every float elementwise op the block interpreter runs (and the ops
  with attributes, clamp, leaky_relu, hardtanh..., which run as kernels next to a group), inside a
  chain that becomes a FusedElementwise group, on a grid of special values against themselves
  (every pair): compiled bit for bit equal to eager, eager equal to PyTorch (NaN positions,
  infinities, values); and the gradients of the select ops (the activation backwards run fused).
The training-step consequence (a NaN batch in fused_step) is tested in test_compile_fused.py.
"""
import re

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import torch.nn.functional as TF
from harness import assert_close, assert_same_values, with_specials

AVX512 = "avx512f" in open("/proc/cpuinfo").read()

DTYPES = {"float32": (lucid.float32, np.float32), "float64": (lucid.float64, np.float64)}


# ---- epilogues after Linear / Conv / ConvTranspose ------------------------------------------------

class Block(nn.Module):
    def __init__(self, op, bias, bn, tail, dt):
        super().__init__()
        make = {"linear": lambda: nn.Linear(6, 5, bias=bias, dtype=dt),
                "conv1d": lambda: nn.Conv1d(3, 5, 3, padding=1, bias=bias, dtype=dt),
                "conv2d": lambda: nn.Conv2d(3, 5, 3, padding=1, bias=bias, dtype=dt),
                "conv2d_1x1": lambda: nn.Conv2d(3, 5, 1, bias=bias, dtype=dt),  # the pointwise (GEMM) path
                "conv_transpose2d": lambda: nn.ConvTranspose2d(3, 5, 3, padding=1, bias=bias, dtype=dt)}
        self.op = make[op]()
        self.bn = (nn.BatchNorm1d if op == "conv1d" else nn.BatchNorm2d)(5, dtype=dt).eval() if bn else None
        self.tail = tail

    def forward(self, x, r):
        y = self.op(x)
        if self.bn is not None:
            y = self.bn(y)
        if self.tail == "relu":
            return F.relu(y)
        if self.tail == "relu_inplace":
            return y.relu_()
        if self.tail == "res_relu":
            return F.relu(y + r)
        if self.tail == "relu_res":
            return F.relu(y) + r
        if self.tail == "relu6":
            return F.relu6(y)
        if self.tail == "res_relu6":
            return F.relu6(r + y)
        if self.tail == "silu":
            return F.silu(y)
        if self.tail == "silu_res":
            return F.silu(y) + r
        return r + y  # "res"


IN_SHAPES = {"linear": (4, 6), "conv1d": (4, 3, 7), "conv2d": (4, 3, 5, 5), "conv2d_1x1": (4, 3, 5, 5),
             "conv_transpose2d": (4, 3, 5, 5)}
OUT_SHAPES = {"linear": (4, 5), "conv1d": (4, 5, 7), "conv2d": (4, 5, 5, 5), "conv2d_1x1": (4, 5, 5, 5),
              "conv_transpose2d": (4, 5, 5, 5)}
EPILOGUE_CASES = [pytest.param(op, bias, bn, tail, dt, id=f"{op}-{'bias' if bias else 'nobias'}{'-bn' if bn else ''}-{tail}-{dt}")
                  for op in IN_SHAPES for bias in (True, False) for bn in ((False, True) if op.startswith("conv") else (False,))
                  for tail in ("relu", "relu_inplace", "res_relu", "relu_res", "res", "relu6", "res_relu6", "silu",
                               "silu_res") for dt in DTYPES]


@pytest.mark.parametrize("op,bias,bn,tail,dt", EPILOGUE_CASES)
def test_epilogues_keep_nan_inf_and_signed_zeros(op, bias, bn, tail, dt):
    ldt, ndt = DTYPES[dt]
    lucid.manual_seed(0)
    eager = Block(op, bias, bn, tail, ldt)
    model = Block(op, bias, bn, tail, ldt)
    model.load_state_dict(eager.state_dict())
    if bn:
        rng = np.random.default_rng(1)
        mean, var = rng.standard_normal(5), 0.5 + rng.random(5)
        for m in (eager, model):  # a BatchNorm that is not an identity
            m.bn.running_mean.copy_(lucid.tensor(mean, dtype=ldt))
            m.bn.running_var.copy_(lucid.tensor(var, dtype=ldt))
    cm = lucid.compile(model, strict=True)
    rng = np.random.default_rng(2)
    with lucid.no_grad():
        for call in range(3):
            x = with_specials(rng.standard_normal(IN_SHAPES[op]).astype(ndt), rng, 0.05)
            r = with_specials(rng.standard_normal(OUT_SHAPES[op]).astype(ndt), rng, 0.05)
            x[1] = 0.0  # a zero sample: a product of exact zeros
            x.flat[call] = np.nan  # at least one NaN whatever with_specials drew
            r.flat[-1 - call] = np.nan
            want = eager(lucid.tensor(x), lucid.tensor(r))
            got = cm(lucid.tensor(x), lucid.tensor(r))
            assert np.isnan(want.numpy()).any(), "the case lost its NaNs in eager"
            if bn:
                assert_close(got, want, 1e-5, 1e-5, f"call {call}")  # equal_nan: same NaN and inf positions
            else:
                assert_same_values(got, want, f"call {call}")
    if op.startswith("conv") and "res" in tail and dt == "float32" and not AVX512:
        # oneDNN's AVX2 convolutions add a fused residual into partial sums (not exact), so the
        # epilogue pass leaves that add outside (cpu::conv_residual_exact)
        assert not re.search(r"ConvFused\([^)]*%1[,)]", cm.ir()), cm.ir()
    elif op != "conv_transpose2d" and tail != "res":
        assert ("LinearFused" if op == "linear" else "ConvFused") in cm.ir(), cm.ir()  # the epilogue path ran


# ---- every op of the fused-elementwise interpreter -------------------------------------------------

SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 0.25, -0.25, 0.5, -0.5, 1.0, -1.0, 2.0, 6.0, 7.5, -3.0, 40.0]


def _grid(ndt):
    """Every special value against every other: a (16 * 16) pair of arrays."""
    s = np.array(SPECIAL, dtype=ndt)
    return np.repeat(s, len(s)), np.tile(s, len(s))


def _ops():
    # name -> fn(lib, functional, a, b): applied to lucid (lucid, F) and torch (torch, TF).
    u = {n: (lambda n: lambda L, f, a, b: getattr(L, n)(a))(n) for n in
         ["relu", "abs", "neg", "exp", "log", "sqrt", "rsqrt", "sign", "floor", "ceil", "round", "trunc", "reciprocal",
          "square", "sin", "cos", "tanh", "sigmoid", "expm1", "log1p", "erf", "isnan", "isinf"]}
    u.update({n: (lambda n: lambda L, f, a, b: getattr(f, n)(a))(n) for n in
              ["relu6", "hardtanh", "elu", "selu", "celu", "gelu", "silu", "softplus", "hardswish", "hardsigmoid",
               "mish", "softsign", "logsigmoid", "tanhshrink", "softshrink", "hardshrink"]})
    u.update({
        "leaky_relu": lambda L, f, a, b: f.leaky_relu(a, 0.1),
        "gelu_tanh": lambda L, f, a, b: f.gelu(a, approximate="tanh"),
        "threshold": lambda L, f, a, b: f.threshold(a, 0.5, -2.0),
        "clamp": lambda L, f, a, b: L.clamp(a, 0.0, 1.0),
        "clamp_min": lambda L, f, a, b: L.clamp(a, min=0.0),
        "clamp_max": lambda L, f, a, b: L.clamp(a, max=1.0),
        "add": lambda L, f, a, b: a + b, "sub": lambda L, f, a, b: a - b, "mul": lambda L, f, a, b: a * b,
        "div": lambda L, f, a, b: a / b, "pow": lambda L, f, a, b: L.pow(a, b),
        "maximum": lambda L, f, a, b: L.maximum(a, b), "minimum": lambda L, f, a, b: L.minimum(a, b),
        "where": lambda L, f, a, b: L.where(a > b, a, b), "where_ge": lambda L, f, a, b: L.where(a >= b, b, a),
        "eq": lambda L, f, a, b: a == b, "ne": lambda L, f, a, b: a != b, "lt": lambda L, f, a, b: a < b,
        "le": lambda L, f, a, b: a <= b, "gt": lambda L, f, a, b: a > b, "ge": lambda L, f, a, b: a >= b,
        "lerp": lambda L, f, a, b: L.lerp(a, b, 0.25),
        "addcmul": lambda L, f, a, b: L.addcmul(a, a, b, value=0.5),
        "masked_fill": lambda L, f, a, b: a.masked_fill(b > 0, 3.0),
        "floor_divide": lambda L, f, a, b: L.floor_divide(a, b), "remainder": lambda L, f, a, b: L.remainder(a, b),
        "logical_and": lambda L, f, a, b: L.logical_and(a, b), "logical_or": lambda L, f, a, b: L.logical_or(a, b),
        "logical_xor": lambda L, f, a, b: L.logical_xor(a, b), "logical_not": lambda L, f, a, b: L.logical_not(a),
    })
    return u


OPS = _ops()
# Where PyTorch's own kernels disagree with each other (its vectorised and scalar paths) the sign
# of a zero result is not defined by PyTorch: compared there by value only (compiled == eager
# stays bit for bit).
TORCH_ZERO_SIGN_UNDEFINED = {"softshrink", "hardshrink", "threshold", "tanhshrink", "sign", "lerp", "addcmul", "sub",
                             "add", "gelu", "gelu_tanh", "silu", "mish", "hardswish", "elu", "celu", "selu", "softsign",
                             "sin", "tanh", "erf", "expm1", "log1p", "round", "trunc", "ceil", "floor", "masked_fill"}

# Inputs where lucid's eager op knowingly differs from PyTorch's (compiled == eager still holds):
# pow takes PyTorch's scalar-exponent paths (sqrt for 0.5, rsqrt for -0.5) for tensor exponents
# too, so pow(-inf, +-0.5) is NaN where torch's tensor pow gives inf / 0, and pow(-0.0, -0.5) is
# -inf where it gives inf; torch's gelu(inf) is NaN (its vector kernel computes inf * 0), lucid's inf.
TORCH_DIFFERS = {"pow": lambda a, b: (np.abs(b) == 0.5) & (np.isneginf(a) | ((a == 0) & np.signbit(a))),
                 "gelu": lambda a, b: np.isposinf(a)}


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("name", list(OPS))
def test_fused_elementwise_ops_keep_nan_semantics(name, dt):
    ldt, ndt = DTYPES[dt]
    fn = OPS[name]
    a, b = _grid(ndt)

    def lucid_fn(x, y):  # the op between other elementwise nodes (x * 2 * 0.5 is x exactly), so it joins a group
        out = fn(lucid, F, x * 2.0 * 0.5, y)
        return out.neg() if out.dtype.is_floating_point else out.logical_not()

    cm = lucid.compile(lucid_fn, strict=True)
    la, lb = lucid.tensor(a), lucid.tensor(b)
    want = lucid_fn(la, lb)
    cm(la, lb)
    got = cm(la, lb)
    assert "FusedElementwise" in cm.ir(), cm.ir()
    assert_same_values(got, want, f"{name} compiled vs eager")
    t = fn(torch, TF, torch.tensor(a), torch.tensor(b))
    t = -t if t.dtype.is_floating_point else ~t
    keep = ~TORCH_DIFFERS[name](a, b) if name in TORCH_DIFFERS else np.ones(a.shape, bool)
    ref, e = t.numpy()[keep], want.numpy()[keep]
    if ref.dtype == np.bool_:
        np.testing.assert_array_equal(e, ref, err_msg=f"{name}: eager vs torch")
        return
    np.testing.assert_array_equal(np.isnan(e), np.isnan(ref), err_msg=f"{name}: NaN positions, eager vs torch")
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(e[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)], err_msg=f"{name}: infinities")
    np.testing.assert_allclose(e[fin], ref[fin], rtol=2e-6 if dt == "float32" else 1e-12,
                               atol=1e-6 if dt == "float32" else 1e-14,
                               err_msg=f"{name}: eager vs torch")
    if name not in TORCH_ZERO_SIGN_UNDEFINED:
        z = fin & (ref == 0)
        np.testing.assert_array_equal(np.signbit(e[z]), np.signbit(ref[z]), err_msg=f"{name}: signs of zeros vs torch")


GRAD_OPS = ["relu", "relu6", "hardtanh", "leaky_relu", "threshold", "softshrink", "hardshrink", "elu", "clamp",
            "sigmoid", "tanh", "silu", "gelu", "maximum", "minimum", "where"]


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("name", GRAD_OPS)
def test_gradients_at_special_values_as_eager_and_torch(name, dt):
    # The backward of the select ops at NaN, +-inf and the thresholds: the compiled backward gives
    # eager's gradient bit for bit, and eager gives PyTorch's (relu passes the gradient at a NaN
    # output, as threshold_backward does).
    ldt, ndt = DTYPES[dt]
    fn = OPS[name]
    a, b = _grid(ndt)
    g = np.linspace(-2.0, 2.0, a.size).astype(ndt)

    def grads(x, y, f):
        out = f(x, y)
        (out * lucid.tensor(g)).sum().backward()
        return out, x.grad, y.grad

    def lucid_fn(x, y):
        return fn(lucid, F, x, y) * 1.5

    leaves = lambda: (lucid.tensor(a).requires_grad_(True), lucid.tensor(b).requires_grad_(True))
    want = grads(*leaves(), lucid_fn)
    cm = lucid.compile(lucid_fn, strict=True)
    grads(*leaves(), cm)
    got = grads(*leaves(), cm)
    assert cm.cache_info()["hits"] >= 1 and not cm.cache_info()["eager_only"]
    for k, (c, e) in enumerate(zip(got, want)):
        if e is None:
            assert c is None, f"{name}: output {k}"
        else:
            assert_same_values(c, e, f"{name}: compiled vs eager, output {k}")
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (fn(torch, TF, ta, tb) * 1.5 * torch.tensor(g)).sum().backward()
    for k, (e, t) in enumerate(zip(want[1:], (ta.grad, tb.grad))):
        t = None if t is None or (e is None and not t.any()) else t
        assert (e is None) == (t is None), f"{name}: gradient {k} defined in one only"
        if e is not None:
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-6, equal_nan=True,
                                       err_msg=f"{name}: gradient {k}, eager vs torch")


@pytest.mark.parametrize("op", ["floordiv", "remainder"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "int8", "uint8"])
def test_compiled_integer_division_by_zero_raises_as_eager(op, dtype):
    # eager raises ZeroDivisionError for an integer zero divisor; a fused block would give 0
    def f(a, b):
        r = (a + 1) // b if op == "floordiv" else (a + 1) % b
        return r * 2
    dt = getattr(lucid, dtype)
    cf = lucid.compile(f, strict=True)
    a, ok, zero = lucid.tensor([3, 5, 7], dtype=dt), lucid.tensor([2, 1, 3], dtype=dt), lucid.tensor([2, 0, 3], dtype=dt)
    assert cf(a, ok).tolist() == f(a, ok).tolist()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(a, zero)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        cf(a, zero)
