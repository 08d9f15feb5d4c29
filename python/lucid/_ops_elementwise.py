"""Python wrappers of the elementwise ops (owned by the elementwise family).

Most functions are the C++ bindings themselves (lucid._C), exported under torch's names; the
activation functions add torch.nn.functional's `inplace` flag here, so the nn package can
re-export them as they are.
"""
from lucid._autocast_policy import autocast_policy
from lucid import _C
from lucid._C import (  # noqa: F401
    abs, exp, log, log2, log10, log1p, expm1, sqrt, rsqrt, reciprocal, square, sin, cos, tanh, sigmoid, erf, sign, floor, ceil,
    round, trunc, isnan, isinf, isfinite, logical_not, bitwise_not, maximum, minimum, remainder, floor_divide, eq, ne,
    lt, le, gt, ge, logical_and, logical_or, logical_xor, bitwise_and, bitwise_or, bitwise_xor, pow, add, sub, div,
    where, clamp, clamp_min, clamp_max, masked_fill, lerp, addcmul, addcdiv, gelu, softplus, softsign, logsigmoid,
    tanhshrink, softshrink, hardshrink, isclose, allclose,
)

__all__ = [
    "abs", "exp", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos", "tanh", "sigmoid",
    "erf", "sign", "floor", "ceil", "round", "trunc", "isnan", "isinf", "isfinite", "logical_not", "bitwise_not",
    "maximum", "minimum", "remainder", "floor_divide", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "pow", "add", "sub", "div", "where",
    "clamp", "clip", "clamp_min", "clamp_max", "masked_fill", "lerp", "addcmul", "addcdiv", "relu", "relu6",
    "leaky_relu", "elu", "gelu", "silu", "hardswish", "hardsigmoid", "hardtanh", "softplus", "multiply", "subtract",
    "divide", "true_divide", "absolute", "negative", "greater", "greater_equal", "less", "less_equal", "not_equal",
    "relu_", "leaky_relu_", "elu_", "hardtanh_", "selu", "celu", "mish", "softsign", "logsigmoid", "tanhshrink",
    "softshrink", "hardshrink", "isclose", "allclose", "threshold", "threshold_", "prelu", "selu_", "celu_", "glu", "softmin",
]

clip = clamp
multiply = _C.mul
subtract = sub
divide = div
true_divide = div
absolute = abs
negative = _C.neg
greater = gt
greater_equal = ge
less = lt
less_equal = le
not_equal = ne


def relu(input, inplace=False):
    return input.relu_() if inplace else _C.relu(input)


def relu6(input, inplace=False):
    return input.relu6_() if inplace else _C.relu6(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _C._leaky_relu_(input, negative_slope) if inplace else _C.leaky_relu(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _C._elu_(input, alpha) if inplace else _C.elu(input, alpha)


def silu(input, inplace=False):
    return input.silu_() if inplace else _C.silu(input)


def hardswish(input, inplace=False):
    return input.hardswish_() if inplace else _C.hardswish(input)


def hardsigmoid(input, inplace=False):
    return input.hardsigmoid_() if inplace else _C.hardsigmoid(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _C._hardtanh_(input, min_val, max_val) if inplace else _C.hardtanh(input, min_val, max_val)


def relu_(input):
    return input.relu_()


def leaky_relu_(input, negative_slope=0.01):
    return _C._leaky_relu_(input, negative_slope)


def elu_(input, alpha=1.0):
    return _C._elu_(input, alpha)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _C._hardtanh_(input, min_val, max_val)


def selu(input, inplace=False):
    return input.selu_() if inplace else _C.selu(input)


def selu_(input):
    return input.selu_()


def celu(input, alpha=1.0, inplace=False):
    return _C._celu_(input, alpha) if inplace else _C.celu(input, alpha)


def celu_(input, alpha=1.0):
    return _C._celu_(input, alpha)


def mish(input, inplace=False):
    return input.mish_() if inplace else _C.mish(input)


def threshold(input, threshold, value, inplace=False):
    return _C._threshold_(input, threshold, value) if inplace else _C.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _C._threshold_(input, threshold, value)


@autocast_policy(cpu="lower", cuda="lower")
def prelu(input, weight):
    """x if x > 0 else weight * x, weight broadcast along dim 1 (channels), as torch."""
    if weight.numel() != 1:
        if input.ndim < 2 and input.ndim != 1:
            raise _C.ArgumentError("prelu: input must have a channel dimension when weight has more than one element")
        channels = input.shape[1] if input.ndim >= 2 else input.shape[0]
        if weight.numel() != channels:
            raise _C.ArgumentError(f"prelu: weight has {weight.numel()} elements, expected 1 or the number of channels "
                             f"({channels})")
        if input.ndim >= 2:
            weight = weight.reshape([channels] + [1] * (input.ndim - 2))
    return _C.where(input > 0, input, weight * input)


def glu(input, dim=-1):
    """First half of `input` along dim times sigmoid of the second half (torch.nn.functional.glu)."""
    if input.ndim == 0:
        raise _C.ArgumentError("glu: does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise _C.ArgumentError(f"glu: halving dimension must be even, but dimension {dim % input.ndim} is size {size}")
    a, b = input.chunk(2, dim)
    return a * _C.sigmoid(b)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input), as torch.nn.functional.softmin."""
    import lucid
    return lucid.softmax(-input, dim=dim, dtype=dtype) if dim is not None else lucid.nn.functional.softmax(
        -input, dtype=dtype)
