"""Elementwise family: in-place forms (values vs PyTorch, identity of the result, version
counter), autograd through in-place ops, saved-tensor version checks, bad inputs (dtype and
broadcasting errors), operators with Python numbers, and the Sleef float32 paths on large and
extreme inputs."""
import numpy as np
import pytest
import torch

import lucid
from harness import as_numpy, assert_close


def _pair(a):
    return lucid.tensor(a), torch.from_numpy(a.copy())


RNG = np.random.default_rng(0)
X = RNG.uniform(-2, 2, size=(3, 4)).astype(np.float32)
P = RNG.uniform(0.5, 2, size=(3, 4)).astype(np.float32)
Y = RNG.uniform(-2, 2, size=(3, 4)).astype(np.float32)
MASK = RNG.integers(0, 2, size=(3, 4)).astype(bool)

INPLACE = [
    ("sub_", lambda x, m, o: x.sub_(o), X),
    ("sub_alpha", lambda x, m, o: x.sub_(o, alpha=0.5), X),
    ("add_alpha", lambda x, m, o: x.add_(o, alpha=-0.1), X),
    ("add_scalar", lambda x, m, o: x.add_(2.5), X),
    ("div_", lambda x, m, o: x.div_(2.0), X),
    ("div_floor", lambda x, m, o: x.div_(o, rounding_mode="floor"), X),
    ("div_trunc", lambda x, m, o: x.div_(o, rounding_mode="trunc"), X),
    ("pow_", lambda x, m, o: x.pow_(2), X),
    ("pow_tensor", lambda x, m, o: x.pow_(o), P),
    ("ipow", lambda x, m, o: x.__ipow__(3), X),
    ("isub", lambda x, m, o: x.__isub__(o), X),
    ("itruediv", lambda x, m, o: x.__itruediv__(o), X),
    ("clamp_", lambda x, m, o: x.clamp_(-0.5, 0.5), X),
    ("clamp_min_only", lambda x, m, o: x.clamp_(min=0.0), X),
    ("clamp_tensor", lambda x, m, o: x.clamp_(min=o), X),
    ("clamp_min_", lambda x, m, o: x.clamp_min_(0.2), X),
    ("clamp_max_", lambda x, m, o: x.clamp_max_(0.2), X),
    ("sqrt_", lambda x, m, o: x.sqrt_(), P),
    ("exp_", lambda x, m, o: x.exp_(), X),
    ("log_", lambda x, m, o: x.log_(), P),
    ("abs_", lambda x, m, o: x.abs_(), X),
    ("relu_", lambda x, m, o: x.relu_(), X),
    ("sigmoid_", lambda x, m, o: x.sigmoid_(), X),
    ("tanh_", lambda x, m, o: x.tanh_(), X),
    ("floor_", lambda x, m, o: x.floor_(), X),
    ("reciprocal_", lambda x, m, o: x.reciprocal_(), P),
    ("masked_fill_", lambda x, m, o: x.masked_fill_(m, -3.0), X),
    ("copy_", lambda x, m, o: x.copy_(o), X),
    ("addcmul_", lambda x, m, o: x.addcmul_(o, o, value=0.5), X),
    ("addcdiv_", lambda x, m, o: x.addcdiv_(o, o * o + 1, value=-2), X),
    ("lerp_", lambda x, m, o: x.lerp_(o, 0.25), X),
    ("lerp_tensor", lambda x, m, o: x.lerp_(o, o.abs() / 2), X),
    ("maximum", lambda x, m, o: x.copy_(x.maximum(o)), X),
]


@pytest.mark.parametrize("name,f,src", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_matches_torch(name, f, src):
    lx, tx = _pair(src)
    lo, to = _pair(Y)
    lm, tm = _pair(MASK)
    v0 = lx._version
    r = f(lx, lm, lo)
    f(tx, tm, to)
    assert r is lx, f"{name} must return self"
    assert lx._version > v0
    assert_close(lx, tx, 1e-6, 1e-6, name)


def test_inplace_operators_keep_the_python_object():
    x = lucid.tensor(X.copy())
    ids = id(x)
    x += 1
    x *= 2
    x -= 0.5
    x /= 3
    x **= 2
    t = torch.from_numpy(X.copy())
    t += 1
    t *= 2
    t -= 0.5
    t /= 3
    t **= 2
    assert id(x) == ids
    assert x.mul_(1.0) is x
    assert_close(x, t, 1e-6, 1e-6)


def test_inplace_on_transposed_view_writes_base():
    lb, tb = _pair(X)
    lb.permute(1, 0).exp_()
    tb.permute(1, 0).exp_()
    assert_close(lb, tb, 1e-6, 1e-6)
    lv = lb.permute(1, 0)
    lv.clamp_(0, 2)
    tb.permute(1, 0).clamp_(0, 2)
    assert_close(lb, tb, 0, 0)


def test_copy_broadcasts_and_converts_dtype():
    lx = lucid.tensor(np.zeros((3, 4), dtype=np.int64))
    tx = torch.zeros((3, 4), dtype=torch.int64)
    src = np.array([1.7, -2.2, 3.9, 0.2], dtype=np.float32)
    lx.copy_(lucid.tensor(src))
    tx.copy_(torch.from_numpy(src))
    assert lx.dtype == lucid.int64
    assert_close(lx, tx, 0, 0)


def test_functional_inplace_flag_returns_input():
    for name, kw in (("relu", {}), ("relu6", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {"alpha": 0.5}),
                     ("silu", {}), ("hardswish", {}), ("hardsigmoid", {}), ("hardtanh", {"min_val": -0.5}),
                     ("selu", {}), ("celu", {"alpha": 0.7}), ("mish", {})):
        lx, tx = _pair(X)
        r = getattr(lucid, name)(lx, inplace=True, **kw)
        getattr(torch.nn.functional, name)(tx, inplace=True, **kw)
        assert r is lx
        assert_close(lx, tx, 1e-6, 1e-6, name)


def test_functional_underscore_forms():
    for name, tname, args in (("relu_", "relu_", ()), ("leaky_relu_", "leaky_relu_", (0.2,)), ("elu_", "elu_", (0.5,)),
                              ("hardtanh_", "hardtanh_", (-0.3, 0.4)), ("threshold_", "threshold_", (0.1, 5.0))):
        lx, tx = _pair(X)
        r = getattr(lucid, name)(lx, *args)
        getattr(torch.nn.functional, tname)(tx, *args)
        assert r is lx
        assert_close(lx, tx, 1e-6, 1e-6, name)


def test_autograd_through_inplace_on_non_leaf():
    """A chain of in-place ops on a non-leaf has the gradient of the out-of-place chain; a write
    after an op whose backward reads its result (sigmoid_ then pow_) raises, as in torch."""
    a = RNG.uniform(0.5, 2, size=(3, 4))
    la = lucid.tensor(a, requires_grad=True)
    ta = torch.tensor(a, requires_grad=True)
    y = la * 2
    y.sub_(la, alpha=0.5)
    y.addcmul_(la, la, value=0.25)
    y.clamp_(min=0.3)
    y.masked_fill_(y > 2.5, 0.0)
    y.pow_(2)
    y.mul_(la)
    y.sigmoid_()
    y.sum().backward()
    z = (ta * 2).sub(ta, alpha=0.5).addcmul(ta, ta, value=0.25).clamp(min=0.3)
    z = z.masked_fill(z > 2.5, 0.0).pow(2).mul(ta).sigmoid()
    z.sum().backward()
    assert_close(y.detach(), z, 1e-12, 1e-12)
    assert_close(la.grad, ta.grad, 1e-10, 1e-10)
    for lib, x in ((lucid, la), (torch, ta)):
        y = x * 2
        y.sigmoid_()
        y.pow_(2)
        with pytest.raises(RuntimeError, match="modified by an in.?place operation"):
            y.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    x = lucid.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.exp_()
    with lucid.no_grad():
        x.exp_()  # allowed without grad mode
    assert_close(x.detach(), torch.from_numpy(X).exp(), 1e-6, 1e-6)


def test_modifying_saved_input_raises_in_backward():
    x = lucid.tensor(X, requires_grad=True)
    a = x * 1.0
    b = a.sin()  # saves a
    a.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        b.sum().backward()


def test_modifying_saved_output_raises_in_backward():
    x = lucid.tensor(X, requires_grad=True)
    y = x.sigmoid()  # saves its output
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_inplace_cannot_change_dtype_category():
    x = lucid.tensor(np.array([1, 2, 3], dtype=np.int64))
    with pytest.raises(TypeError, match="(?i)exp"):
        x.exp_()
    with pytest.raises(TypeError):
        x.div_(2)
    with pytest.raises(TypeError):
        x.pow_(0.5)


def test_inplace_shape_mismatch_raises():
    x = lucid.tensor(np.zeros((3, 1), dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        x.add_(lucid.tensor(Y))
    with pytest.raises(ValueError):
        x.masked_fill_(lucid.tensor(MASK), 1.0)


@pytest.mark.parametrize("f,kind", [
    (lambda l: l.gelu(l.tensor([1, 2])), TypeError),
    (lambda l: l.silu(l.tensor([1, 2])), TypeError),
    (lambda l: l.bitwise_and(l.tensor([1.0]), l.tensor([2.0])), TypeError),
    (lambda l: ~l.tensor([1.0]), TypeError),
    (lambda l: l.where(l.tensor([1, 0]), l.tensor([1.0, 2.0]), 0.0), TypeError),
    (lambda l: l.masked_fill(l.tensor([1.0, 2.0]), l.tensor([1, 0]), 0.0), TypeError),
    (lambda l: l.maximum(l.tensor(np.zeros((3, 4))), l.tensor(np.zeros(5))), ValueError),
    (lambda l: l.tensor(np.zeros((3, 4))) + l.tensor(np.zeros((2, 4))), ValueError),
    (lambda l: l.pow(l.tensor(np.zeros((3, 4))), l.tensor(np.zeros((3,)))), ValueError),
    (lambda l: l.clamp(l.tensor([1.0])), ValueError),
    (lambda l: l.gelu(l.tensor([1.0]), approximate="foo"), ValueError),
    (lambda l: l.exp("a"), TypeError),
    (lambda l: l.add(l.tensor([1.0]), "a"), TypeError),
    (lambda l: l.div(l.tensor([1.0]), 2, rounding_mode="up"), ValueError),
    (lambda l: l.tensor([1, 2]) ** -1, ValueError),
])
def test_bad_inputs_raise(f, kind):
    with pytest.raises(kind):
        f(lucid)


def test_type_error_names_the_op():
    with pytest.raises(TypeError, match="Gelu|gelu"):
        lucid.gelu(lucid.tensor([1, 2]))
    with pytest.raises(TypeError, match="BitwiseAnd|bitwise_and"):
        lucid.bitwise_and(lucid.tensor([1.0]), lucid.tensor([2.0]))


def test_comparison_with_non_operands():
    x = lucid.tensor([1.0, 2.0])
    assert (x == None) is False  # noqa: E711
    assert (x != "a") is True
    assert x in {x}  # __hash__ kept


@pytest.mark.parametrize("expr", [
    "x ** 2", "x ** 0.5", "2 ** x", "2.5 ** x", "x ** x", "x // 2", "x % 3", "-7 % x", "x & 6", "x | 1", "x ^ 3",
    "x == 2", "x < 2.5", "2 < x", "abs(x)", "x.clamp(0, 2)", "x.clamp(0.5)", "x.clamp(min=f)",
    "lucid_or_torch.where(x > 1, x, 2.5)", "lucid_or_torch.where(x > 1, 1, 0)", "x.masked_fill(x > 1, 2.7)",
    "lucid_or_torch.maximum(x, f)", "f.pow(2)", "f ** 2", "x + True", "b & True", "~b", "b | (x > 2)",
    "lucid_or_torch.exp(x)", "lucid_or_torch.sigmoid(b)", "lucid_or_torch.sqrt(x)", "lucid_or_torch.square(x)",
    "lucid_or_torch.add(x, f, alpha=2)", "lucid_or_torch.sub(f, x, alpha=3)", "x.float().lerp(f.float(), 0.5)",
    "lucid_or_torch.isnan(x)", "lucid_or_torch.logical_and(x, f)", "lucid_or_torch.floor_divide(x, -2)",
])
def test_promotion_and_operators_match_torch(expr):
    xi = np.array([1, 2, 3, 5, -4], dtype=np.int32)
    fi = np.array([0.5, 1.5, -2.0, 3.0, 0.25], dtype=np.float16)
    bi = np.array([True, False, True, True, False])
    res = []
    for mod, mk in ((lucid, lambda a: lucid.tensor(a)), (torch, lambda a: torch.from_numpy(a.copy()))):
        env = {"x": mk(xi), "f": mk(fi), "b": mk(bi), "lucid_or_torch": mod}
        res.append(eval(expr, env))
    lo, to = res
    assert str(lo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1], expr
    assert_close(lo, to, 1e-3, 1e-3, expr)


@pytest.mark.parametrize("name", ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
                                  "erf", "silu", "gelu", "gelu_tanh", "relu", "abs"])
def test_float32_vector_paths_large_and_extreme(name):
    rng = np.random.default_rng(3)
    big = rng.uniform(-20, 20, size=100_003).astype(np.float32)  # parallel path, ragged tail
    extreme = np.array([0.0, -0.0, 1e-30, -1e-30, 88.0, 89.0, -87.0, -104.0, 50.0, -50.0, 1e4, -1e4,
                        np.inf, -np.inf, np.nan, 3.4e38, -3.4e38], dtype=np.float32)
    if name in ("gelu", "gelu_tanh"):  # torch's overflow at +-inf / 3.4e38 differs (inf vs nan)
        extreme = extreme[np.abs(extreme) < 1e30]
    if name in ("log", "sqrt", "rsqrt"):
        big = np.abs(big) + 1e-3
    for a in (big, extreme):
        # Reference: PyTorch in float64, rounded to float32 (torch's own float32 gelu is less
        # accurate than ours in the negative tail).
        lx, tx = lucid.tensor(a), torch.from_numpy(a.astype(np.float64))
        if name == "gelu_tanh":
            lo, to = lucid.gelu(lx, approximate="tanh"), torch.nn.functional.gelu(tx, approximate="tanh")
        elif name in ("silu", "gelu"):
            lo, to = getattr(lucid, name)(lx), getattr(torch.nn.functional, name)(tx)
        else:
            lo, to = getattr(lucid, name)(lx), getattr(torch, name)(tx)
        assert lo.dtype == lucid.float32
        with np.errstate(invalid="ignore", over="ignore"):
            np.testing.assert_allclose(as_numpy(lo), as_numpy(to).astype(np.float32), rtol=2e-6, atol=1e-6,
                                       equal_nan=True, err_msg=name)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_precision_vector_paths_match_torch(dt):
    rng = np.random.default_rng(5)
    a = rng.uniform(-6, 6, size=(67, 33)).astype(np.float32)
    for name in ("exp", "tanh", "sigmoid", "erf", "sin", "cos", "expm1"):
        for arr in (a, a.T):  # contiguous and strided rows
            lx = lucid.tensor(np.ascontiguousarray(arr) if arr is a else a).to(getattr(lucid, dt))
            tx = torch.from_numpy(a.copy()).to(getattr(torch, dt))
            if arr is not a:
                lx, tx = lx.permute(1, 0), tx.permute(1, 0)
            lo, to = getattr(lucid, name)(lx), getattr(torch, name)(tx)
            assert str(lo.dtype).split(".")[-1] == dt
            assert_close(lo, to, 1e-2, 1e-2, f"{name} {dt}")


def test_float32_vector_path_matches_float64_definition():
    rng = np.random.default_rng(4)
    a = rng.uniform(-5, 5, size=1000).astype(np.float32)
    for name in ("exp", "tanh", "sigmoid", "erf", "sin"):
        f32 = as_numpy(getattr(lucid, name)(lucid.tensor(a)))
        f64 = as_numpy(getattr(lucid, name)(lucid.tensor(a.astype(np.float64))))
        np.testing.assert_allclose(f32, f64, rtol=3e-7 * 8, atol=1e-7, err_msg=name)


def test_pow_integer_and_gradient_at_zero():
    li, ti = _pair(np.array([2, -3, 0, 5], dtype=np.int64))
    assert_close(li ** 3, ti ** 3, 0, 0)
    assert_close(li.pow(li.abs()), ti.pow(ti.abs()), 0, 0)
    a = np.array([0.0, 1.0, 2.0, 0.0])
    e = np.array([2.0, 0.0, 0.5, 0.0])
    la, le_ = lucid.tensor(a, requires_grad=True), lucid.tensor(e, requires_grad=True)
    ta, te = torch.tensor(a, requires_grad=True), torch.tensor(e, requires_grad=True)
    (la ** le_).sum().backward()
    (ta ** te).sum().backward()
    assert_close(la.grad, ta.grad, 1e-12, 1e-12)
    assert_close(le_.grad, te.grad, 1e-12, 1e-12)


def test_where_and_clamp_grads_at_ties_match_torch():
    a = np.array([0.0, 1.0, -1.0, 0.5])
    for fn in (lambda m, x: m.clamp(x, -1.0, 0.5), lambda m, x: m.maximum(x, x.detach() * 0 + 0.5),
               lambda m, x: m.nn.functional.relu(x) if m is torch else m.relu(x),
               lambda m, x: m.nn.functional.hardtanh(x, -1.0, 0.5) if m is torch else m.hardtanh(x, -1.0, 0.5),
               lambda m, x: m.nn.functional.relu6(x * 6) if m is torch else m.relu6(x * 6)):
        lx, tx = lucid.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        fn(lucid, lx).sum().backward()
        fn(torch, tx).sum().backward()
        assert_close(lx.grad, tx.grad, 0, 0)


def test_double_backward_through_activations():
    a = RNG.uniform(-2, 2, size=(6,))
    for name in ("gelu", "silu", "tanh", "sigmoid", "softplus", "elu"):
        lx, tx = lucid.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        lf = getattr(lucid, name)
        tf = getattr(torch.nn.functional, name)
        (lg,) = lucid.autograd.grad([lf(lx).sum()], [lx], create_graph=True)
        (tg,) = torch.autograd.grad([tf(tx).sum()], [tx], create_graph=True)
        (lgg,) = lucid.autograd.grad([(lg * lg).sum()], [lx])
        (tgg,) = torch.autograd.grad([(tg * tg).sum()], [tx])
        assert_close(lgg, tgg, 1e-10, 1e-8, name)
