"""Python wrappers of the linalg ops (owned by the linalg family).

lucid.matmul / mm / bmm / mv / dot / addmm come straight from C++. The functional entry points
(conv1d, conv2d, conv_transpose1d/2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d, linear)
have torch.nn.functional signatures; lucid.nn.functional re-exports them. Argument parsing and
validation happen in C++ (python/src/linalg_bind.cpp, csrc/lucid/ops/{linalg,conv,pool}_ops.cpp).
lucid.einsum (_einsum.py) and lucid.norm / Tensor.norm (lucid/linalg/_norms.py) are composites;
the decompositions live in lucid.linalg.
"""
from lucid import _C
from lucid._C import Tensor, matmul, mm, bmm, mv, dot, addmm  # noqa: F401
from lucid._einsum import einsum  # noqa: F401
from lucid.linalg._norms import tensor_norm as norm  # noqa: F401
from lucid.linalg import det, slogdet, inv as inverse, matrix_power  # noqa: F401

__all__ = ["einsum", "norm", "det", "slogdet", "logdet", "inverse", "pinverse", "matrix_power", "matmul", "mm", "bmm", "mv", "dot", "addmm", "linear", "conv1d", "conv2d", "conv_transpose1d",
           "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "max_pool1d", "avg_pool1d",
           "adaptive_avg_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d", "lp_pool2d", "lp_pool1d", "unfold", "fold"]


def linear(input, weight, bias=None):
    """y = input @ weight.T + bias (torch.nn.functional.linear)."""
    return _C._linear(input, weight, bias)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv1d; padding may be an int, a 1-tuple, 'same' or 'valid'."""
    return _C._conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d; padding may be an int, a pair, 'same' or 'valid'."""
    return _C._conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.nn.functional.conv_transpose1d (weight is [in_channels, out_channels/groups, kW])."""
    return _C._conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.nn.functional.conv_transpose2d (weight is [in_channels, out_channels/groups, kH, kW])."""
    return _C._conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool2d; with return_indices=True returns (values, int64 indices)."""
    out, idx = _C._max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool2d."""
    return _C._avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d; with return_indices=True returns (values, int64 indices)."""
    out, idx = _C._adaptive_max_pool2d(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d; output_size is an int or a pair (None keeps a size)."""
    return _C._adaptive_avg_pool2d(input, output_size)


# ---- 1-D pooling: the 2-D ops over a unit height (indices then index the length, as in PyTorch) ----
def _single(v, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise ValueError(f"{name}: expected an int or 1 value, got {len(v)}")
        return int(v[0])
    return int(v)


def _unit_height(input, name):
    if input.ndim not in (2, 3):
        raise ValueError(f"{name}: argument 'input' expected a 2-D (unbatched) or 3-D (batched) tensor, "
                         f"got {input.ndim}-D {list(input.shape)}")
    return input.reshape(*input.shape[:-1], 1, input.shape[-1])


def _drop_height(t):
    return t.reshape(*t.shape[:-2], t.shape[-1])


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool1d."""
    k = _single(kernel_size, "max_pool1d")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else _single(stride, "max_pool1d")
    out, idx = _C._max_pool2d(_unit_height(input, "max_pool1d"), (1, k), (1, s), (0, _single(padding, "max_pool1d")),
                              (1, _single(dilation, "max_pool1d")), ceil_mode)
    out, idx = _drop_height(out), _drop_height(idx)
    return (out, idx) if return_indices else out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """torch.nn.functional.avg_pool1d."""
    k = _single(kernel_size, "avg_pool1d")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else _single(stride, "avg_pool1d")
    return _drop_height(_C._avg_pool2d(_unit_height(input, "avg_pool1d"), (1, k), (1, s),
                                       (0, _single(padding, "avg_pool1d")), ceil_mode, count_include_pad, None))


def adaptive_avg_pool1d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool1d."""
    return _drop_height(_C._adaptive_avg_pool2d(_unit_height(input, "adaptive_avg_pool1d"),
                                                (1, _single(output_size, "adaptive_avg_pool1d"))))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool1d."""
    out, idx = _C._adaptive_max_pool2d(_unit_height(input, "adaptive_max_pool1d"),
                                       (1, _single(output_size, "adaptive_max_pool1d")))
    out, idx = _drop_height(out), _drop_height(idx)
    return (out, idx) if return_indices else out


# ---- power-average pooling: a Python composite in PyTorch as well --------------------------
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool2d: (sum over the window of x**p) ** (1/p)."""
    import lucid
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    out = avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode)
    return (lucid.sign(out) * lucid.relu(lucid.abs(out))).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool1d."""
    import lucid
    k = _single(kernel_size, "lp_pool1d")
    out = avg_pool1d(input.pow(norm_type), k, stride, 0, ceil_mode)
    return (lucid.sign(out) * lucid.relu(lucid.abs(out))).mul(k).pow(1.0 / norm_type)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold (im2col): [N, C, H, W] -> [N, C*kh*kw, L]."""
    return _C._unfold(input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold (col2im, overlaps summed): [N, C*kh*kw, L] -> [N, C, H, W]."""
    return _C._fold(input, output_size, kernel_size, dilation, padding, stride)


def logdet(input):
    """log(det(input)): nan where the determinant is negative, -inf where it is 0 (torch.logdet)."""
    import lucid
    sign, logabsdet = slogdet(input)
    return lucid.where(sign < 0, lucid.full_like(logabsdet, float("nan")), logabsdet)


def pinverse(input, rcond=1e-15):
    """torch.pinverse: linalg.pinv with rtol=rcond."""
    import lucid
    return lucid.linalg.pinv(input, rtol=rcond)


# Tensor methods of the linalg family with torch's signatures.
Tensor.norm = norm  # Tensor.norm(p='fro', dim=None, keepdim=False, dtype=None)
Tensor.det = det
Tensor.slogdet = slogdet
Tensor.logdet = logdet
Tensor.inverse = inverse
Tensor.pinverse = pinverse
Tensor.matrix_power = matrix_power
