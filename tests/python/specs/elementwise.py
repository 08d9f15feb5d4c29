"""Spec rows for the elementwise family: unary math, binary math, comparisons, logical and
bitwise ops, where / clamp / masked_fill / lerp / addcmul / addcdiv, and the activations.
Samples include broadcasting, Python-number operands, non-contiguous (transposed) inputs and
lengths that are not a multiple of the 8-float vector width (Sleef paths)."""
import numpy as np

from op_specs import OpSpec, Sample, arr, positive

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int64", "int32")
ALL = FLOATS + INTS
WITH_BOOL = ALL + ("bool",)


def _isfloat(dt):
    return "float" in dt


def _unary(low=-2.0, high=2.0):
    def gen(rng, dt):
        return [Sample([arr(rng, (3, 4), dt, low, high)]), Sample([arr(rng, (5, 37), dt, low, high)]),
                Sample([arr(rng, (), dt, low, high)])]
    return gen


def _row(name, fn, ops=None, gen=None, dtypes=FLOATS, tfn=None, **kw):
    """Row for lucid.<fn>(x) against torch.<fn>(x) (tfn overrides the torch side)."""
    return OpSpec(name, ops or [], lambda l, *a, **k: fn(l)(*a, **k),
                  tfn or (lambda t, *a, **k: fn(t)(*a, **k)), gen or _unary(), dtypes=dtypes, **kw)


def U(name, op, gen=None, dtypes=FLOATS, **kw):
    """Unary function lucid.name(x) vs torch.name(x)."""
    return _row(name, lambda m: getattr(m, name), [op], gen, dtypes, **kw)


def UF(name, op, gen=None, dtypes=FLOATS, **kw):
    """Activation: lucid.name(x) vs torch.nn.functional.name(x)."""
    return _row(name, lambda m: getattr(m, name), [op], gen, dtypes,
                tfn=lambda t, *a, **k: getattr(t.nn.functional, name)(*a, **k), **kw)


def _strided(name, op, gen=None, dtypes=("float32", "float64")):
    """x.T (non-contiguous) through the op."""
    return OpSpec(name + "_strided", [op], lambda l, a: getattr(l, name)(a.permute(1, 0)),
                  lambda t, a: getattr(t, name)(a.permute(1, 0)), lambda rng, dt: (gen or _unary())(rng, dt)[:2],
                  dtypes=dtypes)


def _nan_inf(rng, dt):
    a = arr(rng, (3, 4), dt)
    if _isfloat(dt):
        a[0, 0], a[1, 1], a[2, 2] = np.nan, np.inf, -np.inf
    return [Sample([a])]


def _halves(rng, dt):
    return [Sample([arr(rng, (3, 4), dt, -5, 5)]),
            Sample([np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, 3.7, -3.2], dtype=np.float32)])]


def _bin(rng, dt, low=-2.0, high=2.0):
    return [Sample([arr(rng, (3, 4), dt, low, high), arr(rng, (3, 4), dt, low, high)]),
            Sample([arr(rng, (2, 1, 4), dt, low, high), arr(rng, (3, 1), dt, low, high)]),
            Sample([arr(rng, (5,), dt, low, high), 1.5 if _isfloat(dt) else 2])]


def _with_ties(rng, dt):
    a = arr(rng, (3, 4), dt)
    b = arr(rng, (3, 4), dt)
    b[0] = a[0]
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)]), Sample([a, b]),
            Sample([arr(rng, (2, 1, 4), dt), arr(rng, (3, 1), dt)])]


def _cmp(rng, dt):
    a = arr(rng, (3, 4), dt)
    b = arr(rng, (3, 4), dt)
    b[0] = a[0]
    return [Sample([a, b]), Sample([arr(rng, (2, 1, 4), dt), arr(rng, (3, 1), dt)]),
            Sample([arr(rng, (5,), dt), 1 if dt != "bool" else True]), Sample([arr(rng, (5,), dt), 0.5])]


def _divisor(rng, shape, dt):
    if _isfloat(dt):
        return positive(rng, shape, dt, 0.5, 2.0) * rng.choice([-1.0, 1.0], size=shape).astype(np.float32 if dt != "float64" else np.float64)
    return rng.choice([-3, -2, -1, 1, 2, 3], size=shape).astype(dt)


def _divmod(rng, dt):
    return [Sample([arr(rng, (3, 4), dt, -5, 5), _divisor(rng, (3, 4), dt)]),
            Sample([arr(rng, (2, 1, 4), dt, -5, 5), _divisor(rng, (3, 1), dt)]),
            Sample([arr(rng, (6,), dt, -5, 5), 1.5 if _isfloat(dt) else 2])]


def _pow(rng, dt):
    if _isfloat(dt):
        return [Sample([positive(rng, (3, 4), dt), arr(rng, (3, 4), dt)]),
                Sample([positive(rng, (2, 1, 4), dt), arr(rng, (3, 1), dt)]),
                Sample([arr(rng, (3, 5), dt), 2]), Sample([arr(rng, (3, 5), dt), 3]),
                Sample([positive(rng, (3, 5), dt), 0.5]), Sample([positive(rng, (3, 5), dt), -1.5]),
                Sample([arr(rng, (4,), dt), 0]), Sample([positive(rng, (3, 5), dt), -1]),
                Sample([positive(rng, (3, 5), dt), -0.5]), Sample([positive(rng, (3, 5), dt), -2]),
                Sample([2.0, arr(rng, (3, 4), dt)]),
                Sample([1.5, arr(rng, (3, 4), dt)])]
    return [Sample([arr(rng, (3, 4), dt, -3, 3), rng.integers(0, 4, size=(3, 4)).astype(dt)]),
            Sample([arr(rng, (3, 4), dt, -3, 3), 3]), Sample([2, rng.integers(0, 5, size=(4,)).astype(dt)]),
            Sample([arr(rng, (3, 4), dt, -3, 3), 0.5])]


def _where(rng, dt):
    c = rng.integers(0, 2, size=(3, 4)).astype(bool)
    return [Sample([c, arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)]),
            Sample([c, arr(rng, (4,), dt), arr(rng, (3, 1), dt)]),
            Sample([c, arr(rng, (3, 4), dt), 0.0 if _isfloat(dt) else 0]),
            Sample([c, 1.5 if _isfloat(dt) else 1, arr(rng, (3, 4), dt)])]


def _masked(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), rng.integers(0, 2, size=(3, 4)).astype(bool), 2.5 if _isfloat(dt) else 3]),
            Sample([arr(rng, (3, 4), dt), rng.integers(0, 2, size=(4,)).astype(bool), -1.0 if _isfloat(dt) else -1])]


def _clamp(rng, dt):
    x = arr(rng, (3, 4), dt, -3, 3)
    if _isfloat(dt):
        return [Sample([x], {"min": -0.5, "max": 0.8}), Sample([arr(rng, (3, 4), dt, -3, 3)], {"min": 0.1}),
                Sample([arr(rng, (3, 4), dt, -3, 3)], {"max": -0.2}),
                Sample([arr(rng, (3, 4), dt, -3, 3)], {"min": 1, "max": 2})]
    return [Sample([x], {"min": -1, "max": 2}), Sample([arr(rng, (3, 4), dt, -3, 3)], {"min": 0}),
            Sample([arr(rng, (3, 4), dt, -3, 3)], {"min": 0.5})]


def _clamp_tensor(rng, dt):
    return [Sample([arr(rng, (3, 4), dt, -3, 3), arr(rng, (3, 4), dt, -2, 0), arr(rng, (4,), dt, 0.5, 2)]),
            Sample([arr(rng, (3, 4), dt, -3, 3), arr(rng, (3, 1), dt, -1, 1), None]),
            Sample([arr(rng, (3, 4), dt, -3, 3), None, arr(rng, (3, 4), dt, -1, 1)])]


def _lerp(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt), 0.3]),
            Sample([arr(rng, (3, 4), dt), arr(rng, (4,), dt), 0.8]),
            Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt), arr(rng, (3, 4), dt, -0.5, 1.5)])]


def _tern(low=-2.0, high=2.0, pos3=False):
    def gen(rng, dt):
        third = (lambda s: positive(rng, s, dt)) if pos3 else (lambda s: arr(rng, s, dt, low, high))
        return [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt), third((3, 4))], {"value": 0.5}),
                Sample([arr(rng, (3, 4), dt), arr(rng, (4,), dt), third((3, 1))]),
                Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt), third((3, 4))], {"value": -2})]
    return gen


def _logical(rng, dt):
    return [Sample([arr(rng, (3, 4), dt, -1, 1), arr(rng, (3, 4), dt, -1, 1)]),
            Sample([arr(rng, (2, 1, 4), dt, -1, 1), arr(rng, (3, 1), dt, -1, 1)])]


def _bits(rng, dt):
    if dt == "bool":
        return [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)]), Sample([arr(rng, (3, 4), dt), True])]
    return [Sample([rng.integers(-50, 50, size=(3, 4)).astype(dt), rng.integers(-50, 50, size=(3, 4)).astype(dt)]),
            Sample([rng.integers(0, 50, size=(2, 1, 4)).astype(dt), rng.integers(0, 50, size=(3, 1)).astype(dt)]),
            Sample([rng.integers(0, 50, size=(5,)).astype(dt), 6])]


def _binop(name, op, gen, dtypes, **kw):
    return OpSpec(name, [op], lambda l, a, b: getattr(l, name)(a, b), lambda t, a, b: getattr(t, name)(a, b), gen,
                  dtypes=dtypes, **kw)


def _operator(name, op, f, gen, dtypes, **kw):
    return OpSpec(name, [op], lambda l, a, b: f(a, b), lambda t, a, b: f(a, b), gen, dtypes=dtypes, **kw)


def _methods(x):
    return (x.exp() + x.abs().log() + x.abs().sqrt() + x.sin() * x.cos() + x.sigmoid() + x.tanh() + x.relu()
            + x.square() + x.erf() + x.reciprocal() + x.sign() + x.floor() + x.ceil() + x.round() + x.abs().rsqrt()
            + x.expm1() + x.abs().log1p() + x.maximum(x * 0.5) + x.minimum(x * 0.5) + x.pow(2) + x.clamp(-1, 1))


def _vjp(m, f, x, g):
    """Gradient of f at x for output gradient g (no create_graph)."""
    x = x.detach().requires_grad_(True)
    return m.autograd.grad([f(x)], [x], [g])[0]


def _act_bwd():
    def gen(rng, dt):
        return [Sample([arr(rng, (3, 4), dt, -5, 5), arr(rng, (3, 4), dt)]),
                Sample([arr(rng, (7, 37), dt, -5, 5), arr(rng, (7, 37), dt)])]
    return gen


POS = _unary(0.3, 3.0)
NONDIFF = dict(grad=False)

SPECS = [
    # ---- unary math ----
    U("abs", "Abs", dtypes=ALL),
    OpSpec("abs_operator", ["Abs"], lambda l, a: abs(a), lambda t, a: abs(a), _unary(), dtypes=("float32", "int64")),
    U("exp", "Exp", dtypes=ALL), _strided("exp", "Exp"),
    U("log", "Log", POS, dtypes=ALL), _strided("log", "Log", POS),
    U("log2", "Log2", POS, dtypes=ALL), _strided("log2", "Log2", POS),
    U("log10", "Log10", POS, dtypes=ALL), _strided("log10", "Log10", POS),
    U("log1p", "Log1p", _unary(-0.7, 3.0), dtypes=ALL),
    U("expm1", "Expm1", dtypes=ALL),
    U("sqrt", "Sqrt", POS, dtypes=ALL),
    U("rsqrt", "Rsqrt", POS, dtypes=ALL),
    U("reciprocal", "Reciprocal", POS, dtypes=ALL),
    U("square", "Square", dtypes=ALL),
    U("sin", "Sin", _unary(-4, 4), dtypes=ALL), U("cos", "Cos", _unary(-4, 4), dtypes=ALL),
    U("tanh", "Tanh", _unary(-4, 4), dtypes=ALL), _strided("tanh", "Tanh"),
    U("sigmoid", "Sigmoid", _unary(-6, 6), dtypes=ALL), _strided("sigmoid", "Sigmoid"),
    U("erf", "Erf", dtypes=ALL),
    U("sign", "Sign", dtypes=ALL + ("bool",)),
    U("floor", "Floor", _unary(-5, 5), dtypes=ALL), U("ceil", "Ceil", _unary(-5, 5), dtypes=ALL),
    U("round", "Round", _halves, dtypes=ALL),
    OpSpec("round_decimals", ["Round", "Mul", "Div"], lambda l, x, **k: l.round(x, **k), lambda t, x, **k: t.round(x, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt, -50, 50)], {"decimals": 1}),
                            Sample([arr(rng, (3, 4), dt, -500, 500)], {"decimals": -1})], dtypes=("float32", "float64")), U("trunc", "Trunc", _unary(-5, 5), dtypes=ALL),
    U("isnan", "IsNan", _nan_inf, dtypes=WITH_BOOL, **NONDIFF),
    U("isinf", "IsInf", _nan_inf, dtypes=WITH_BOOL, **NONDIFF),
    U("isfinite", "IsNan", _nan_inf, dtypes=ALL, **NONDIFF),
    U("logical_not", "LogicalNot", _unary(-1, 1), dtypes=WITH_BOOL, **NONDIFF),
    U("bitwise_not", "BitwiseNot", lambda rng, dt: _bits(rng, dt)[:1] and [Sample([_bits(rng, dt)[0].args[0]])],
      dtypes=INTS + ("bool",), **NONDIFF),
    OpSpec("invert_operator", ["BitwiseNot"], lambda l, a: ~a, lambda t, a: ~a,
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)])], dtypes=("bool", "int64"), grad=False),
    # ---- binary math ----
    _binop("pow", "Pow", _pow, ALL, atol=1e-4, rtol=1e-4),
    _operator("pow_operator", "Pow", lambda a, b: a ** b, _pow, ("float32", "float64", "int64"), atol=1e-4, rtol=1e-4),
    _binop("maximum", "Maximum", _with_ties, WITH_BOOL),
    _binop("minimum", "Minimum", _with_ties, WITH_BOOL),
    _binop("remainder", "Remainder", _divmod, ALL, fd=False),
    _operator("mod_operator", "Remainder", lambda a, b: a % b, _divmod, ("float32", "int64"), fd=False),
    _binop("floor_divide", "FloorDivide", _divmod, ALL, grad=False),
    _operator("floordiv_operator", "FloorDivide", lambda a, b: a // b, _divmod, ("float64", "int32"), grad=False),
    OpSpec("div_floor", ["FloorDivide"], lambda l, a, b: l.div(a, b, rounding_mode="floor"),
           lambda t, a, b: t.div(a, b, rounding_mode="floor"), _divmod, dtypes=("float32", "int64"), grad=False),
    OpSpec("div_trunc", ["Trunc", "Div"], lambda l, a, b: l.div(a, b, rounding_mode="trunc"),
           lambda t, a, b: t.div(a, b, rounding_mode="trunc"), _divmod, dtypes=("float32", "int64"), grad=False),
    OpSpec("add_alpha", ["Add", "Mul"], lambda l, a, b: l.add(a, b, alpha=2), lambda t, a, b: t.add(a, b, alpha=2),
           _bin, dtypes=ALL),
    OpSpec("sub_alpha", ["Sub", "Mul"], lambda l, a, b: l.sub(a, b, alpha=0.5), lambda t, a, b: t.sub(a, b, alpha=0.5),
           _bin, dtypes=FLOATS),
    OpSpec("method_add_sub", ["Add", "Sub"], lambda l, a, b: a.add(b, alpha=3) - a.sub(b),
           lambda t, a, b: a.add(b, alpha=3) - a.sub(b), _bin, dtypes=("float32", "float64")),
]

for _n, _op in (("eq", "Eq"), ("ne", "Ne"), ("lt", "Lt"), ("le", "Le"), ("gt", "Gt"), ("ge", "Ge")):
    SPECS.append(_binop(_n, _op, _cmp, WITH_BOOL, grad=False))
for _n, _op, _f in (("eq_operator", "Eq", lambda a, b: a == b), ("ne_operator", "Ne", lambda a, b: a != b),
                    ("lt_operator", "Lt", lambda a, b: a < b), ("le_operator", "Le", lambda a, b: a <= b),
                    ("gt_operator", "Gt", lambda a, b: a > b), ("ge_operator", "Ge", lambda a, b: a >= b)):
    SPECS.append(_operator(_n, _op, _f, _cmp, ("float32", "int64"), grad=False))
for _n, _op in (("logical_and", "LogicalAnd"), ("logical_or", "LogicalOr"), ("logical_xor", "LogicalXor")):
    SPECS.append(_binop(_n, _op, _logical, WITH_BOOL, grad=False))
for _n, _op in (("bitwise_and", "BitwiseAnd"), ("bitwise_or", "BitwiseOr"), ("bitwise_xor", "BitwiseXor")):
    SPECS.append(_binop(_n, _op, _bits, INTS + ("bool",), grad=False))
for _n, _op, _f in (("and_operator", "BitwiseAnd", lambda a, b: a & b), ("or_operator", "BitwiseOr", lambda a, b: a | b),
                    ("xor_operator", "BitwiseXor", lambda a, b: a ^ b)):
    SPECS.append(_operator(_n, _op, _f, _bits, ("bool", "int64"), grad=False))

SPECS += [
    # ---- ternary and attribute ops ----
    OpSpec("where", ["Where"], lambda l, c, a, b: l.where(c, a, b), lambda t, c, a, b: t.where(c, a, b), _where,
           dtypes=WITH_BOOL),
    OpSpec("where_method", ["Where"], lambda l, c, a, b: a.where(c, b) if hasattr(a, "where") else None,
           lambda t, c, a, b: a.where(c, b), lambda rng, dt: _where(rng, dt)[:2], dtypes=("float32", "float64")),
    OpSpec("masked_fill", ["MaskedFill"], lambda l, x, m, v: l.masked_fill(x, m, v),
           lambda t, x, m, v: t.masked_fill(x, m, v), _masked, dtypes=WITH_BOOL[:-1]),
    OpSpec("masked_fill_method", ["MaskedFill"], lambda l, x, m, v: x.masked_fill(m, v),
           lambda t, x, m, v: x.masked_fill(m, v), _masked, dtypes=("float32", "float64")),
    OpSpec("masked_fill_tensor_value", ["Where", "Copy"], lambda l, x, m, v: x.masked_fill(m, v),
           lambda t, x, m, v: x.masked_fill(m, v),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), rng.integers(0, 2, size=(3, 4)).astype(bool),
                                    np.array(1.25, dtype=np.float32 if dt != "float64" else np.float64)])],
           dtypes=("float32", "float64")),
    OpSpec("clamp", ["Clamp"], lambda l, x, **k: l.clamp(x, **k), lambda t, x, **k: t.clamp(x, **k), _clamp, dtypes=ALL),
    OpSpec("clamp_method", ["Clamp"], lambda l, x, **k: x.clamp(**k), lambda t, x, **k: x.clamp(**k), _clamp,
           dtypes=("float32", "float64", "int64")),
    OpSpec("clamp_min_max", ["Clamp"], lambda l, x: l.clamp_min(x, -0.3) + l.clamp_max(x, 0.4) + x.clamp_min(0.1),
           lambda t, x: t.clamp_min(x, -0.3) + t.clamp_max(x, 0.4) + x.clamp_min(0.1), _unary(), dtypes=FLOATS),
    OpSpec("clamp_tensor", ["Where", "Lt", "Gt"], lambda l, x, lo, hi: l.clamp(x, lo, hi),
           lambda t, x, lo, hi: t.clamp(x, lo, hi), _clamp_tensor, dtypes=FLOATS + ("int64",)),
    OpSpec("lerp", ["Lerp"], lambda l, s, e, w: l.lerp(s, e, w), lambda t, s, e, w: t.lerp(s, e, w), _lerp,
           dtypes=FLOATS),
    OpSpec("addcmul", ["Addcmul"], lambda l, x, a, b, **k: l.addcmul(x, a, b, **k),
           lambda t, x, a, b, **k: t.addcmul(x, a, b, **k), _tern(), dtypes=ALL),
    OpSpec("addcdiv", ["Addcdiv"], lambda l, x, a, b, **k: l.addcdiv(x, a, b, **k),
           lambda t, x, a, b, **k: t.addcdiv(x, a, b, **k), _tern(pos3=True), dtypes=FLOATS),
    # ---- activations ----
    UF("relu", "Relu", dtypes=ALL), _strided("relu", "Relu"),
    UF("relu6", "Relu6", _unary(-8, 8), dtypes=ALL),
    UF("leaky_relu", "LeakyRelu", lambda rng, dt: [Sample([arr(rng, (3, 4), dt)]),
                                                  Sample([arr(rng, (5, 37), dt)], {"negative_slope": 0.2})]),
    UF("elu", "Elu", lambda rng, dt: [Sample([arr(rng, (3, 4), dt)]), Sample([arr(rng, (5, 37), dt)], {"alpha": 0.5})]),
    UF("gelu", "Gelu", lambda rng, dt: [Sample([arr(rng, (3, 4), dt, -4, 4)]), Sample([arr(rng, (5, 37), dt, -4, 4)]),
                                       Sample([arr(rng, (3, 4), dt, -4, 4)], {"approximate": "tanh"}),
                                       Sample([arr(rng, (5, 37), dt, -4, 4)], {"approximate": "tanh"})]),
    UF("silu", "Silu", _unary(-6, 6)),
    OpSpec("silu_strided", ["Silu"], lambda l, a: l.silu(a.permute(1, 0)),
           lambda t, a: t.nn.functional.silu(a.permute(1, 0)), lambda rng, dt: _unary(-6, 6)(rng, dt)[:2]),
    UF("hardswish", "Hardswish", _unary(-5, 5)),
    UF("hardsigmoid", "Hardsigmoid", _unary(-5, 5)),
    UF("hardtanh", "Hardtanh", lambda rng, dt: [Sample([arr(rng, (3, 4), dt)]),
                                               Sample([arr(rng, (3, 4), dt)], {"min_val": -0.5, "max_val": 0.7})],
       dtypes=ALL),
    UF("softplus", "Softplus", lambda rng, dt: [Sample([arr(rng, (3, 4), dt, -4, 4)]),
                                               Sample([arr(rng, (5, 7), dt, -4, 4)], {"beta": 2.0, "threshold": 1.5})]),
    UF("selu", "Selu", _unary(-3, 3)),
    UF("celu", "Celu", lambda rng, dt: [Sample([arr(rng, (3, 4), dt, -3, 3)]),
                                       Sample([arr(rng, (5, 7), dt, -3, 3)], {"alpha": 0.5})]),
    UF("mish", "Mish", _unary(-5, 5)),
    UF("softsign", "Softsign", _unary(-5, 5)),
    UF("logsigmoid", "LogSigmoid", _unary(-30, 30)),
    UF("tanhshrink", "Tanhshrink", _unary(-3, 3)),
    UF("softshrink", "Softshrink", lambda rng, dt: [Sample([arr(rng, (3, 4), dt)]),
                                                   Sample([arr(rng, (5, 7), dt)], {"lambd": 1.2})]),
    UF("hardshrink", "Hardshrink", lambda rng, dt: [Sample([arr(rng, (3, 4), dt)]),
                                                   Sample([arr(rng, (5, 7), dt)], {"lambd": 1.2})]),
    OpSpec("threshold", ["Threshold"], lambda l, x: l.threshold(x, 0.3, -2.0),
           lambda t, x: t.nn.functional.threshold(x, 0.3, -2.0), _unary(), dtypes=ALL),
    OpSpec("prelu", ["Where", "Gt", "Mul"], lambda l, x, w: l.prelu(x, w), lambda t, x, w: t.nn.functional.prelu(x, w),
           lambda rng, dt: [Sample([arr(rng, (2, 3, 4), dt), arr(rng, (3,), dt, 0.1, 0.5)]),
                            Sample([arr(rng, (2, 3), dt), arr(rng, (1,), dt, 0.1, 0.5)])],
           dtypes=("float32", "float64")),
    OpSpec("glu", ["Sigmoid", "Mul"], lambda l, x, **k: l.nn.functional.glu(x, **k),
           lambda t, x, **k: t.nn.functional.glu(x, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)]), Sample([arr(rng, (4, 3, 2), dt)], {"dim": 0})]),
    OpSpec("softmin", ["Neg", "Softmax"], lambda l, x: l.nn.functional.softmin(x, dim=1),
           lambda t, x: t.nn.functional.softmin(x, dim=1), lambda rng, dt: [Sample([arr(rng, (3, 4), dt)])]),
    OpSpec("sigmoid_tanh_F", ["Sigmoid", "Tanh"], lambda l, x: l.sigmoid(x) + l.tanh(x),
           lambda t, x: t.nn.functional.sigmoid(x) + t.nn.functional.tanh(x), _unary()),
    # ---- fused activation backwards (the VJPs use them when create_graph is False) ----
    OpSpec("relu_backward", ["ReluBackward"], lambda l, x, g: _vjp(l, l.relu, x, g),
           lambda t, x, g: _vjp(t, t.relu, x, g), _act_bwd(), grad=False),
    OpSpec("sigmoid_backward", ["SigmoidBackward"], lambda l, x, g: _vjp(l, l.sigmoid, x, g),
           lambda t, x, g: _vjp(t, t.sigmoid, x, g), _act_bwd(), grad=False),
    OpSpec("tanh_backward", ["TanhBackward"], lambda l, x, g: _vjp(l, l.tanh, x, g),
           lambda t, x, g: _vjp(t, t.tanh, x, g), _act_bwd(), grad=False),
    OpSpec("silu_backward", ["SiluBackward"], lambda l, x, g: _vjp(l, l.silu, x, g),
           lambda t, x, g: _vjp(t, t.nn.functional.silu, x, g), _act_bwd(), grad=False),
    OpSpec("gelu_backward", ["GeluBackward"], lambda l, x, g, **k: _vjp(l, lambda v: l.gelu(v, **k), x, g),
           lambda t, x, g, **k: _vjp(t, lambda v: t.nn.functional.gelu(v, **k), x, g),
           lambda rng, dt: _act_bwd()(rng, dt) + [Sample(s.args, {"approximate": "tanh"}) for s in _act_bwd()(rng, dt)],
           grad=False),
    # ---- methods ----
    OpSpec("methods_unary", ["Exp", "Log", "Sqrt", "Abs"], lambda l, x: _methods(x), lambda t, x: _methods(x),
           lambda rng, dt: [Sample([positive(rng, (3, 4), dt) * rng.choice([-1, 1], size=(3, 4)).astype(np.float32)])]),
]
