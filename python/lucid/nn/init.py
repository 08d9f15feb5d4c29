"""lucid.nn.init: in-place parameter initialisers with torch's formulas (fans, gains, bounds).

Every function runs under no_grad and fills the tensor through the random/creation family's
in-place methods (uniform_, normal_, fill_, ...), so it works on Parameters that require grad.
"""
import math
import warnings

import lucid

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_"]


def calculate_gain(nonlinearity, param=None):
    """Recommended gain for a nonlinearity (same table as torch.nn.init.calculate_gain)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.shape[1]
    num_output_fmaps = tensor.shape[0]
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    fan_in = num_input_fmaps * receptive_field_size
    fan_out = num_output_fmaps * receptive_field_size
    return fan_in, fan_out


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _gen_kw(generator):
    return {} if generator is None else {"generator": generator}


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    with lucid.no_grad():
        tensor.uniform_(a, b, **_gen_kw(generator))
    return tensor


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2)."""
    with lucid.no_grad():
        tensor.normal_(mean, std, **_gen_kw(generator))
    return tensor


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) truncated to [a, b] (inverse-CDF method, as torch)."""
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    with lucid.no_grad():
        lo = norm_cdf((a - mean) / std)
        up = norm_cdf((b - mean) / std)
        tensor.uniform_(2 * lo - 1, 2 * up - 1, **_gen_kw(generator))
        if hasattr(tensor, "erfinv_"):
            tensor.erfinv_()
        else:
            tensor.copy_(_erfinv(tensor))
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
        return tensor


def _erfinv(x):
    """erfinv for |x| < 1 (Giles 2010, single-precision polynomial), computed in float64; used by
    trunc_normal_ when the elementwise family has no erfinv."""
    xd = x.to(lucid.float64)
    w = -lucid.log((1.0 - xd) * (1.0 + xd))
    w1 = w - 2.5
    p1 = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p1 = c + p1 * w1
    w2 = lucid.sqrt(lucid.clamp(w, min=5.0)) - 3.0
    p2 = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        p2 = c + p2 * w2
    return (lucid.where(w < 5.0, p1, p2) * xd).to(x.dtype)


def constant_(tensor, val):
    with lucid.no_grad():
        tensor.fill_(val)
    return tensor


def ones_(tensor):
    with lucid.no_grad():
        tensor.fill_(1.0)
    return tensor


def zeros_(tensor):
    with lucid.no_grad():
        tensor.zero_()
    return tensor


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with lucid.no_grad():
        tensor.copy_(lucid.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor, groups=1):
    """The identity convolution: a {3,4,5}-d weight whose output equals its input (channel i of
    each group reads input channel i at the kernel centre), as torch's."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_per = tensor.shape[0] // groups
    if tensor.shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    n = min(out_per, tensor.shape[1])
    with lucid.no_grad():
        tensor.zero_()
        centre = tuple(k // 2 for k in tensor.shape[2:])
        for g in range(groups):
            for d in range(n):
                tensor[(g * out_per + d, d) + centre] = 1.0
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix from the QR decomposition of a normal sample (as torch)."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    import numpy as np  # boundary: QR on the host, like a one-off initialisation
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flattened = lucid.empty((rows, cols), dtype=lucid.float64, device="cpu")  # read by NumPy below
    with lucid.no_grad():
        flattened.normal_(0, 1, **_gen_kw(generator))
    a = flattened.numpy()
    if rows < cols:
        a = a.T
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with lucid.no_grad():
        tensor.copy_(lucid.tensor(np.ascontiguousarray(q * gain), device=tensor.device).reshape(tensor.shape))
    return tensor


from lucid._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("nn.init", "lucid.nn.init")  # a PyTorch name lucid lacks says so
