"""Python wrappers of the linalg ops (owned by the linalg family).

lucid.matmul / mm / bmm / mv / dot / addmm come straight from C++. The functional entry points
(conv1d, conv2d, conv_transpose1d/2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d, linear)
have torch.nn.functional signatures; lucid.nn.functional re-exports them. Argument parsing and
validation happen in C++ (python/src/linalg_bind.cpp, csrc/lucid/ops/{linalg,conv,pool}_ops.cpp).
"""
from lucid import _C
from lucid._C import matmul, mm, bmm, mv, dot, addmm  # noqa: F401

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "addmm", "linear", "conv1d", "conv2d", "conv_transpose1d",
           "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]


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


def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d; output_size is an int or a pair (None keeps a size)."""
    return _C._adaptive_avg_pool2d(input, output_size)
