"""Elementwise math that torch has and lucid builds from its ops: torch's aliases (arccos is acos,
fix is trunc, ...) bound to the very same function objects, and composites (logaddexp, xlogy,
hypot, copysign, sinc, logit, fmod, fmax, nan_to_num, ...). Each composite is written with lucid
ops, so it is differentiable where torch is (the gradients follow from the ops' VJPs; where-forms
are chosen so that they equal torch's formulas, ties and zeros included) and it compiles. The
in-place forms (x.logit_() ...) are made generically in lucid/_tensor_methods.py."""
from lucid._C import ArgumentError  # a ValueError and a RuntimeError, as torch raises
import math

import numpy as np

from lucid import _C
from lucid._C import Tensor
from lucid._C import (tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, erfc, erfinv, atan2, lgamma,  # noqa: F401
                      digamma, polygamma)

arccos = acos
arcsin = asin
arctan = atan
arctan2 = atan2
arccosh = acosh
arcsinh = asinh
arctanh = atanh
fix = _C.trunc
sgn = _C.sign  # real tensors only: sgn(x) is sign(x)

_LN2 = math.log(2.0)


def _t(x, op, arg):
    """A Tensor argument, or a Python number as a wrapped 0-d tensor (torch's scalar promotion)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float)):
        return _C._wrapped_scalar(x)
    raise TypeError(f"{op}: argument '{arg}' expected a Tensor or a number, got {type(x).__name__}")


def _float_of(x):
    """x itself if floating, else x cast to the default float (torch's integer -> float rule)."""
    return x if x.dtype.is_floating_point else x.to_dtype(_C.get_default_dtype())


def exp2(input):
    return _C.pow(2.0, input)


def logaddexp(input, other):
    """log(exp(a) + exp(b)) without overflow: max + log1p(exp(-|a - b|)); equal infinities give
    themselves (the difference would be NaN)."""
    a, b = _t(input, "logaddexp", "input"), _t(other, "logaddexp", "other")
    m = _C.maximum(a, b)
    out = m + _C.log1p(_C.exp(-_C.abs(a - b)))
    return _C.where(_C.isinf(a) & (a == b), a, out)


def logaddexp2(input, other):
    a, b = _t(input, "logaddexp2", "input"), _t(other, "logaddexp2", "other")
    return logaddexp(a * _LN2, b * _LN2) / _LN2


def _floating_pair(input, other, op):
    """Both operands as tensors of their floating result type (integers -> the default float)."""
    x, y = _t(input, op, "input"), _t(other, op, "other")
    dt = _C.result_type(x, y)
    dt = dt if dt.is_floating_point else _C.get_default_dtype()
    return x.to_dtype(dt), y.to_dtype(dt)


def log_times(x, y, log_fn):
    """x * log_fn(y), 0 where x == 0 (unless y is NaN), with torch's gradients: d/dx is log_fn(y)
    also where x == 0, and d/dy is x * log_fn'(y). Shared by xlogy and special.xlog1py."""
    ly = log_fn(y)
    zero_x = (x == 0) & ~_C.isnan(y)
    return x * _C.where(zero_x & ~_C.isfinite(ly), 0.0, ly)


def xlogy(input, other):
    """x * log(y), 0 where x == 0 (unless y is NaN), as torch.xlogy."""
    x, y = _floating_pair(input, other, "xlogy")
    return log_times(x, y, _C.log)


def zero_grad_edge(out, *inputs):
    """out itself, with gradient edges (of zeros) to inputs that out's value ignores, as torch
    gives copysign's sign operand or addmm's input at beta == 0: where(False, t, out)."""
    never = _C.zeros([], dtype=_C.dtype.bool)
    for t in inputs:
        if isinstance(t, Tensor) and t.requires_grad:
            out = _C.where(never, t, out)
    return out


def hypot(input, other):
    return _C.sqrt(input * input + other * other)


def signbit(input):
    """True where the sign bit is set: negative numbers and -0.0 (whose reciprocal is -inf)."""
    if not input.dtype.is_floating_point:
        return input < 0 if input.dtype.is_signed else _C.zeros_like(input, dtype=_C.dtype.bool)
    return (input < 0) | ((input == 0) & (_C.reciprocal(input) < 0))


def copysign(input, other):
    """|input| with the sign of other (-0.0 counts as negative); integers give floats."""
    a, b = _t(input, "copysign", "input"), _t(other, "copysign", "other")
    a = _float_of(a)
    return zero_grad_edge(_C.where(signbit(b), -_C.abs(a), _C.abs(a)), b)


def heaviside(input, values):
    """0 where input < 0, values where input == 0, 1 where input > 0 (torch.heaviside)."""
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside: argument 'values' expected a Tensor, got {type(values).__name__}")
    if input.dtype != values.dtype:
        raise TypeError(f"heaviside: input and values must have the same dtype, got {input.dtype} and {values.dtype}")
    return _C.where(input == 0, values, (input > 0).to_dtype(input.dtype))


def sinc(input):
    """sin(pi x) / (pi x), 1 at x == 0 (with gradient 0 there, as torch)."""
    x = _float_of(input)
    zero = x == 0
    px = _C.where(zero, 1.0, x) * math.pi
    return _C.where(zero, 1.0, _C.sin(px) / px)


def logit(input, eps=None):
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given (torch.logit)."""
    x = _float_of(input)
    if eps is not None:
        x = _C.clamp(x, eps, 1.0 - eps)
    return _C.log(x / (1.0 - x))


def deg2rad(input):
    return _float_of(input) * (math.pi / 180.0)


def rad2deg(input):
    return _float_of(input) * (180.0 / math.pi)


def frac(input):
    if not input.dtype.is_floating_point:
        raise TypeError(f"frac: expected a floating-point tensor, got {input.dtype}")
    return input - _C.trunc(input)


def float_power(input, exponent):
    """pow computed in float64, as torch.float_power."""
    a = input.to_dtype(_C.dtype.float64) if isinstance(input, Tensor) else _C._wrapped_scalar(float(input))
    b = exponent.to_dtype(_C.dtype.float64) if isinstance(exponent, Tensor) else float(exponent)
    return _C.pow(a, b)


def fmod(input, other):
    """C's fmod: the remainder of a / b truncated toward zero, with the sign of a. float16 and
    bfloat16 compute in float32 (their rounded quotient could truncate to the wrong integer)."""
    a, b = _t(input, "fmod", "input"), _t(other, "fmod", "other")
    low = _C.result_type(a, b) in (_C.dtype.float16, _C.dtype.bfloat16)
    if low:
        out_dtype, a, b = _C.result_type(a, b), a.to_dtype(_C.dtype.float32), b.to_dtype(_C.dtype.float32)
    out = a - _C.div(a, b, rounding_mode="trunc") * b
    return out.to_dtype(out_dtype) if low else out


def ldexp(input, other):
    """input * 2 ** other, in the floating result type of the two."""
    x, e = _floating_pair(input, other, "ldexp")
    return x * _C.pow(2.0, e)


def fmax(input, other):
    """maximum that ignores NaN: the other operand where one is NaN (torch's gradient: ties go to input)."""
    return _C.where((input >= other) | _C.isnan(other), input, other)


def fmin(input, other):
    return _C.where((input <= other) | _C.isnan(other), input, other)


def _finfo_max(dt):
    if dt == _C.dtype.bfloat16:
        return 3.3895313892515355e38
    return float(np.finfo({_C.dtype.float16: np.float16, _C.dtype.float32: np.float32,
                           _C.dtype.float64: np.float64}[dt]).max)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN -> nan, +inf -> posinf (default: the dtype's largest), -inf -> neginf (its lowest)."""
    if not input.dtype.is_floating_point:
        return input.clone()
    big = _finfo_max(input.dtype)
    out = _C.where(_C.isnan(input), nan, input)
    out = _C.where(input == math.inf, big if posinf is None else posinf, out)
    return _C.where(input == -math.inf, -big if neginf is None else neginf, out)


def positive(input):
    if input.dtype == _C.dtype.bool:
        raise TypeError("positive: the + operator, on a bool tensor, is not supported")
    return input


def isposinf(input):
    return input == math.inf if input.dtype.is_floating_point else _C.zeros_like(input, dtype=_C.dtype.bool)


def isneginf(input):
    return input == -math.inf if input.dtype.is_floating_point else _C.zeros_like(input, dtype=_C.dtype.bool)


def isreal(input):
    return _C.ones_like(input, dtype=_C.dtype.bool)  # lucid has no complex dtypes


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element is in test_elements (either may be a number), as torch.isin."""
    e = _t(elements, "isin", "elements")
    t = _t(test_elements, "isin", "test_elements").reshape(-1)
    hit = (e.unsqueeze(-1) == t).any(-1) if t.numel() else _C.zeros_like(e, dtype=_C.dtype.bool)
    return ~hit if invert else hit


def rsub(input, other, alpha=1):
    return _C.sub(other, input, alpha=alpha)


def _trapezoid_parts(y, x, dx, dim, op):
    """(y[i] + y[i+1]) * spacing[i] along the last dim (y moved so that dim is last)."""
    if not isinstance(y, Tensor):
        raise TypeError(f"{op}: argument 'y' expected a Tensor, got {type(y).__name__}")
    y = y.movedim(dim, -1)
    n = y.shape[-1]
    pairs = y.narrow(-1, 0, max(n - 1, 0)) + y.narrow(-1, 1, max(n - 1, 0))
    if x is None:
        return pairs * ((1.0 if dx is None else dx) / 2)
    x = x if x.ndim == 1 else x.movedim(dim, -1)
    if x.shape[-1] != n:
        raise ArgumentError(f"{op}: argument 'x' has {x.shape[-1]} points along dim, expected {n} (the size of y)")
    return pairs * (x.narrow(-1, 1, n - 1) - x.narrow(-1, 0, n - 1)) / 2


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along dim, with sample points x (a tensor) or a constant spacing dx."""
    return _trapezoid_parts(y, x, dx, dim, "trapezoid").sum(-1)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    return _trapezoid_parts(y, x, dx, dim, "cumulative_trapezoid").cumsum(-1).movedim(-1, dim)


trapz = trapezoid


_BITS = {"bool": 1, "uint8": 8, "int8": 8, "int32": 32, "int64": 64}
# Euclid's steps for the worst case (consecutive Fibonacci numbers) of each integer width
_GCD_STEPS = {"bool": 2, "uint8": 13, "int8": 12, "int32": 47, "int64": 93}


def _integer_pair(input, other, op):
    a, b = _t(input, op, "input"), _t(other, op, "other")
    dt = _C.result_type(a, b)
    if dt.is_floating_point or dt == _C.dtype.bool:
        raise TypeError(f"{op}: expected integer tensors, got {a.dtype} and {b.dtype}")
    return a.to_dtype(dt), b.to_dtype(dt)


def gcd(input, other):
    """Greatest common divisor (non-negative), by a fixed number of Euclid steps (traceable)."""
    a, b = _integer_pair(input, other, "gcd")
    a, b = _C.abs(a), _C.abs(b)
    a, b = _C.broadcast_tensors(a, b)
    for _ in range(_GCD_STEPS[a.dtype.name]):
        nz = b != 0
        r = _C.remainder(a, _C.where(nz, b, 1))
        a, b = _C.where(nz, b, a), _C.where(nz, r, 0)
    return a


def lcm(input, other):
    a, b = _integer_pair(input, other, "lcm")
    g = gcd(a, b)
    return _C.where(g == 0, 0, _C.abs(_C.floor_divide(a, _C.where(g == 0, 1, g)) * b))


def bitwise_left_shift(input, other):
    """a << b for integers (0 once b reaches the width, as torch)."""
    a, b = _integer_pair(input, other, "bitwise_left_shift")
    bits = _BITS[a.dtype.name]
    shifted = a * _C.pow(_C.full_like(b, 2), _C.clamp(b, 0, bits - 1))
    return _C.where(b >= bits, 0, shifted)


def bitwise_right_shift(input, other):
    """a >> b for integers, arithmetic (floor division by 2**b); once b reaches the width only the
    sign is left (-1 or 0), as torch."""
    a, b = _integer_pair(input, other, "bitwise_right_shift")
    cap = _BITS[a.dtype.name] - (1 if a.dtype.is_signed else 0)
    shifted = _C.floor_divide(a, _C.pow(_C.full_like(b, 2), _C.clamp(b, 0, cap - 1)))
    return _C.where(b >= cap, -(a < 0).to_dtype(a.dtype), shifted)


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent and 0.5 <= |mantissa| < 1
    (0, inf and NaN give themselves and exponent 0); exponent is int32, as torch.frexp."""
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        raise TypeError(f"frexp: expected a floating-point tensor, got "
                        f"{input.dtype if isinstance(input, Tensor) else type(input).__name__}")
    x = input if input.dtype == _C.dtype.float64 else input.to_dtype(_C.dtype.float32)
    ordinary = _C.isfinite(x) & (x != 0)
    ax = _C.where(ordinary, _C.abs(x), 1.0)
    e = _C.floor(_C.log(ax) / _LN2) + 1

    def scaled(e):  # ax / 2**e in two halves, so that neither power overflows
        h = _C.trunc(e / 2)
        return ax * _C.pow(2.0, -h) * _C.pow(2.0, h - e)
    m = scaled(e)
    e = e + (m >= 1).to_dtype(e.dtype) - (m < 0.5).to_dtype(e.dtype)
    m = _C.where(x < 0, -scaled(e), scaled(e))
    return (_C.where(ordinary, m, x).to_dtype(input.dtype), _C.where(ordinary, e, 0.0).to_dtype(_C.dtype.int32))


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension p: sum_j lgamma(x - j/2) + p(p-1)/4 log(pi)."""
    if p < 1:
        raise ArgumentError(f"mvlgamma: p has to be greater than or equal to 1, got {p}")
    x = _float_of(input)
    if x.numel() and not bool((x > (p - 1) / 2).all().item()):
        raise ArgumentError(f"mvlgamma: all elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    out = _C.lgamma(x)
    for j in range(1, p):
        out = out + _C.lgamma(x - j / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)

__all__ = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc", "erfinv", "atan2",
           "lgamma", "digamma", "polygamma",
           "arccos", "arcsin", "arctan", "arctan2", "arccosh", "arcsinh", "arctanh", "fix", "sgn", "exp2",
           "logaddexp", "logaddexp2", "xlogy", "hypot", "signbit", "copysign", "heaviside", "sinc", "logit",
           "deg2rad", "rad2deg", "frac", "float_power", "fmod", "ldexp", "fmax", "fmin", "nan_to_num", "positive",
           "isposinf", "isneginf", "isreal", "isin", "rsub", "trapezoid", "trapz", "cumulative_trapezoid",
           "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift", "frexp", "mvlgamma"]
