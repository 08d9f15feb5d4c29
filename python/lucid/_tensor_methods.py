"""The one place where the torch.* breadth functions (lucid/_ops_math, _ops_matrix,
_ops_reduce_extra, _ops_movement_extra, _ops_query) become lucid.Tensor methods, where torch has the
method; plus torch's method aliases (x.arccos is x.acos: the same object), the in-place forms of the
Python composites, the torch-level in-place functions (lucid.exp_(x)), the remaining random fills
(exponential_, cauchy_, log_normal_, geometric_, random_) and small properties (H, mH, nbytes, ...).

In-place forms of composites are made generically: x.f_(...) computes f on x and writes it back
with copy_, after torch's in-place checks: the result must be castable to x's dtype (torch's rule:
never float -> integer or integer -> bool), must have x's shape, and a leaf that requires grad
raises. copy_ bumps x's version counter and records the autograd edge, so gradients equal torch's.
When x is part of a graph, f runs on a clone of x, so what f saved for backward is not the storage
being overwritten."""
from lucid._C import ArgumentError  # a ValueError and a RuntimeError, as torch raises
import math

import numpy as np

from lucid import _C
from lucid._C import Tensor
from lucid._creation import tensor as _tensor_of
from lucid import _ops_math as math_ops
from lucid import _ops_matrix as matrix_ops
from lucid import _ops_movement as movement_ops
from lucid import _ops_movement_extra as movement_extra
from lucid import _ops_query as query_ops
from lucid import _ops_reduce_extra as reduce_extra
from lucid._ops_elementwise import prelu
from lucid.autograd import grad_mode


def _check_inplace(self, name, result):
    if not query_ops.can_cast(result.dtype, self.dtype):
        raise TypeError(f"{name}: result type {result.dtype.name} can't be cast to the desired output type "
                        f"{self.dtype.name}")
    if tuple(result.shape) != tuple(self.shape):
        raise ArgumentError(f"{name}: output with shape {list(self.shape)} doesn't match the broadcast shape "
                         f"{list(result.shape)}")


def inplace_form(fn, name):
    """x.name(...) = x.copy_(fn(x, ...)) with torch's in-place checks (see the module comment)."""
    def method(self, *args, **kwargs):
        recording = grad_mode.is_grad_enabled() and self.requires_grad
        if recording and self.is_leaf:
            raise RuntimeError(f"{name}: a leaf tensor that requires grad is being used in an in-place operation; "
                               "wrap it in lucid.no_grad() or use the out-of-place form")
        result = fn(self.clone() if recording else self, *args, **kwargs)
        _check_inplace(self, name, result)
        self.copy_(result)
        return self
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place {fn.__name__}: x.{name}(...) writes {fn.__name__}(x, ...) into x."
    return method


def _float_power_(self, exponent):
    if self.dtype != _C.dtype.float64:
        raise TypeError(f"float_power_: the base given to float_power_ has dtype {self.dtype.name} but the "
                        "operation's result requires dtype float64")
    return _float_power_inplace(self, exponent)


_float_power_inplace = inplace_form(math_ops.float_power, "float_power_")

# Functions that are also Tensor methods in torch (the function's first argument is self).
_METHODS = {f.__name__: f for f in (
    math_ops.exp2, math_ops.logaddexp, math_ops.logaddexp2, math_ops.xlogy, math_ops.hypot, math_ops.signbit,
    math_ops.copysign, math_ops.heaviside, math_ops.sinc, math_ops.logit, math_ops.deg2rad, math_ops.rad2deg,
    math_ops.frac, math_ops.float_power, math_ops.fmod, math_ops.ldexp, math_ops.fmax, math_ops.fmin,
    math_ops.nan_to_num, math_ops.positive, math_ops.isposinf, math_ops.isneginf, math_ops.isreal, math_ops.gcd,
    math_ops.lcm, math_ops.bitwise_left_shift, math_ops.bitwise_right_shift, math_ops.frexp, math_ops.mvlgamma,
    matrix_ops.outer, matrix_ops.inner, matrix_ops.vdot, matrix_ops.addmv, matrix_ops.addr, matrix_ops.baddbmm,
    matrix_ops.addbmm, matrix_ops.kron, matrix_ops.trace, matrix_ops.cov, matrix_ops.corrcoef, matrix_ops.diagflat,
    matrix_ops.adjoint, matrix_ops.cross, matrix_ops.dist,
    reduce_extra.nansum, reduce_extra.nanmean, reduce_extra.count_nonzero, reduce_extra.aminmax,
    reduce_extra.cummax, reduce_extra.cummin, reduce_extra.logcumsumexp, reduce_extra.diff, reduce_extra.bincount,
    reduce_extra.histc, reduce_extra.renorm, reduce_extra.histogram,
    movement_extra.hsplit, movement_extra.vsplit, movement_extra.dsplit, movement_extra.split_with_sizes,
    movement_extra.ravel, movement_extra.narrow_copy, movement_extra.diagonal_scatter, movement_extra.index_copy,
    movement_extra.masked_scatter, movement_extra.put, movement_extra.reshape_as, movement_extra.sum_to_size,
    movement_extra.nonzero_static, movement_extra.scatter_reduce, movement_extra.index_reduce,
    query_ops.is_complex, query_ops.is_signed, query_ops.is_nonzero, query_ops.is_same_size, query_ops.equal,
    query_ops.is_inference, query_ops.conj, query_ops.resolve_conj, query_ops.resolve_neg, query_ops.conj_physical,
    query_ops.is_conj, query_ops.is_neg,
    movement_ops.slice_scatter,
    prelu)}


def _method_of(fn, name):
    """An engine function (a nanobind function, which does not bind self) as a Tensor method."""
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    return method


_METHODS.update(ger=matrix_ops.outer, unsafe_split_with_sizes=movement_extra.split_with_sizes,
                **{n: _method_of(getattr(_C, n), n) for n in ("as_strided", "as_strided_scatter", "select_scatter",
                                                              "bernoulli")})

# torch's method aliases: the same object as the method they name.
_ALIASES = {"absolute": "abs", "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arctan2": "atan2",
            "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "divide": "div", "multiply": "mul",
            "subtract": "sub", "true_divide": "div", "greater": "gt", "greater_equal": "ge", "less": "lt",
            "less_equal": "le", "not_equal": "ne", "negative": "neg", "fix": "trunc", "sgn": "sign",
            "unsafe_chunk": "chunk", "unsafe_split": "split"}

# In-place forms made from the out-of-place method (generic copy_ form).
_INPLACE = ("exp2", "xlogy", "hypot", "copysign", "heaviside", "sinc", "logit", "deg2rad", "rad2deg", "frac",
            "fmod", "ldexp", "nan_to_num", "addmv", "addr", "baddbmm", "addbmm", "addmm", "index_copy",
            "masked_scatter", "put", "logical_not", "gcd", "lcm", "bitwise_left_shift",
            "bitwise_right_shift", "renorm", "mvlgamma", "conj_physical", "scatter_reduce", "index_reduce")

# torch.<name>_(input, ...) functions: the Tensor method of that name.
TORCH_INPLACE = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_",
    "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_",
    "ldexp_", "log_", "log1p_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "round_",
    "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_",
    "zero_", "index_put_", "gcd_", "lcm_", "conj_physical_", "log2_", "log10_")


def _torch_inplace(name):
    def f(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: argument 'input' expected a Tensor, got {type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)
    f.__name__ = f.__qualname__ = name
    return f


# ---- random fills, drawn from lucid's generator (rand/randn/randint), written into self ----
def _uniform64(self, generator):
    return _C.rand(list(self.shape), dtype=_C.dtype.float64, device=self.device, generator=generator)


def _fill_with(self, name, values):
    if not self.dtype.is_floating_point:
        raise TypeError(f"{name}: expects a floating-point tensor, got {self.dtype}")
    return self.copy_(values)


def _exponential_(self, lambd=1.0, *, generator=None):
    if not lambd > 0:
        raise ArgumentError(f"exponential_: expects lambda > 0.0, but found lambda={lambd}")
    return _fill_with(self, "exponential_", -_C.log1p(-_uniform64(self, generator)) / lambd)


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    if not sigma > 0:
        raise ArgumentError(f"cauchy_: expects sigma > 0.0, but found sigma={sigma}")
    u = _uniform64(self, generator)
    return _fill_with(self, "cauchy_", median + sigma * _C.tan(math.pi * (u - 0.5)))


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    if not std > 0:
        raise ArgumentError(f"log_normal_: expects std > 0.0, but found std={std}")
    z = _C.randn(list(self.shape), dtype=_C.dtype.float64, device=self.device, generator=generator)
    return _fill_with(self, "log_normal_", _C.exp(z * std + mean))


def _geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise ArgumentError(f"geometric_: expects p to be in (0, 1), but got p={p}")
    u = _uniform64(self, generator)
    k = _C.clamp_min(_C.ceil(_C.log1p(-u) / math.log1p(-p)), 1.0)
    return self.copy_(k)


# exclusive tops of random_(): floats up to 2**mantissa inclusive, integers up to their maximum
_RANDOM_TOP = {"float16": 2 ** 11 + 1, "bfloat16": 2 ** 8 + 1, "float32": 2 ** 24 + 1, "float64": 2 ** 53 + 1,
               "bool": 2,
               "uint8": 2 ** 8, "int8": 2 ** 7, "int32": 2 ** 31, "int64": 2 ** 63 - 1}


def _random_(self, from_=0, to=None, *, generator=None):
    """Integers uniform in [from, to) (to defaults to the dtype's exactly representable top)."""
    if to is None:  # random_() draws up to the top; random_(to) from 0
        from_, to = 0, (from_ or _RANDOM_TOP[self.dtype.name])
    if from_ >= to:
        raise ArgumentError(f"random_: expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    return self.copy_(_C.randint(from_, to, list(self.shape), dtype=_C.dtype.int64, device=self.device,
                                  generator=generator))


# ---- small properties and helpers ----
def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A copy of data with self's dtype and device unless dtype= / device= say otherwise (torch's)."""
    device = self.device if device is None else device
    if isinstance(data, Tensor):
        out = data.detach().to(device).clone().to_dtype(dtype or data.dtype)
    else:
        out = _tensor_of(data, dtype=dtype or self.dtype, device=device)
    return out.requires_grad_() if requires_grad else out


def _new(self, *args, dtype=None, device=None):
    """The legacy Tensor.new: x.new(sizes...) is new_empty, x.new(data) is new_tensor (x's dtype)."""
    if not args:
        return self.new_empty(0, dtype=dtype or self.dtype, device=device)
    if len(args) == 1 and not isinstance(args[0], int):
        return _new_tensor(self, args[0], dtype=dtype, device=device)
    return self.new_empty(*args, dtype=dtype or self.dtype, device=device)


def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
    return query_ops.empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                                   requires_grad=requires_grad)


def _H(self):
    if self.ndim not in (0, 2):
        raise ArgumentError(f"Tensor.H: expected a matrix or a scalar, got a {self.ndim}-D tensor (use mH for batches)")
    return self.t() if self.ndim == 2 else self


def _fill_diagonal_(self, fill_value, wrap=False):
    """Fills the main diagonal (2-D, or all dims equal); with wrap, a tall matrix's diagonal restarts
    after a skipped row (numpy's fill_diagonal rule)."""
    if self.ndim < 2:
        raise ArgumentError(f"fill_diagonal_: dimensions must larger than 1, got {self.ndim}")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise ArgumentError(f"fill_diagonal_: all dimensions of input must be of equal length, got {tuple(self.shape)}")
    n = self.numel()
    step = sum(int(np.prod(self.shape[i + 1:])) for i in range(self.ndim))
    stop = n if wrap and self.ndim == 2 else min(self.shape) * step
    mask = np.zeros(n, dtype=bool)
    mask[0:min(stop, n):step] = True
    return self.masked_fill_(_tensor_of(mask.reshape(list(self.shape)), device=self.device), fill_value)


def _apply_(self, callable):
    """Applies a Python function to each element, in place (CPU, no autograd), as torch's apply_."""
    if self.requires_grad:
        raise RuntimeError("apply_: can't call apply_() on a tensor that requires grad")
    vals = np.vectorize(callable, otypes=[np.float64])(self.to_dtype(_C.dtype.float64).numpy())
    with grad_mode.no_grad():
        self.copy_(_tensor_of(vals))
    return self


def _map_(self, tensor, callable):
    """self[i] = callable(self[i], tensor[i]) (tensor broadcast to self), in place, as torch's map_."""
    if self.requires_grad:
        raise RuntimeError("map_: can't call map_() on a tensor that requires grad")
    other = tensor.expand(self.shape).to_dtype(_C.dtype.float64).numpy()
    vals = np.vectorize(callable, otypes=[np.float64])(self.to_dtype(_C.dtype.float64).numpy(), other)
    with grad_mode.no_grad():
        self.copy_(_tensor_of(vals))
    return self


def _install():
    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)
    for alias, target in _ALIASES.items():
        setattr(Tensor, alias, getattr(Tensor, target))
        if hasattr(Tensor, target + "_") and alias not in ("unsafe_chunk", "unsafe_split"):
            setattr(Tensor, alias + "_", getattr(Tensor, target + "_"))
    for name in _INPLACE:
        setattr(Tensor, name + "_", inplace_form(getattr(Tensor, name), name + "_"))
    Tensor.float_power_ = _float_power_
    Tensor.exponential_ = _exponential_
    Tensor.cauchy_ = _cauchy_
    Tensor.log_normal_ = _log_normal_
    Tensor.geometric_ = _geometric_
    Tensor.random_ = _random_
    Tensor.new_tensor = _new_tensor
    Tensor.new_empty_strided = _new_empty_strided
    Tensor.new = _new
    Tensor.fill_diagonal_ = _fill_diagonal_
    Tensor.apply_ = _apply_
    Tensor.map_ = _map_
    Tensor.H = property(_H)
    Tensor.mH = property(lambda self: self.transpose(-2, -1))
    Tensor.nbytes = property(lambda self: self.numel() * self.dtype.itemsize)
    Tensor.itemsize = property(lambda self: self.dtype.itemsize)
    Tensor.ndimension = lambda self: self.ndim
    Tensor.nelement = lambda self: self.numel()
    Tensor.byte = lambda self: self.to_dtype(_C.dtype.uint8)
    Tensor.char = lambda self: self.to_dtype(_C.dtype.int8)
    Tensor.const_data_ptr = Tensor.data_ptr
    Tensor.is_shared = lambda self: False
    Tensor.to_dense = lambda self, dtype=None, *, masked_grad=None: self if dtype is None else self.to_dtype(dtype)
    Tensor.dim_order = lambda self: tuple(sorted(range(self.ndim), key=lambda d: -self.stride()[d]))
    Tensor.__lshift__ = math_ops.bitwise_left_shift
    Tensor.__rshift__ = math_ops.bitwise_right_shift
    Tensor.__rlshift__ = lambda self, other: math_ops.bitwise_left_shift(other, self)
    Tensor.__rrshift__ = lambda self, other: math_ops.bitwise_right_shift(other, self)
    Tensor.__ilshift__ = Tensor.bitwise_left_shift_
    Tensor.__irshift__ = Tensor.bitwise_right_shift_
    for flag in ("is_sparse", "is_quantized", "is_meta", "is_mkldnn", "is_nested", "is_sparse_csr", "is_xpu", "is_ipu",
                 "is_maia", "is_mps", "is_mtia", "is_vulkan", "is_xla"):
        setattr(Tensor, flag, property(lambda self: False))


_install()

__all__ = list(TORCH_INPLACE)
globals().update({n: _torch_inplace(n) for n in TORCH_INPLACE})
