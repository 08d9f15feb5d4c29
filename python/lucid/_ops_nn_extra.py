"""torch.nn.functional ops that are composites of existing lucid ops (no kernels of their own).

Each function here is a few reshapes, gathers, scatters and reductions over ops that already have
kernels, VJPs and lowerings, so autograd and lucid.compile work through them with nothing new in
C++. torch writes several of them as Python composites too (local_response_norm, lp_pool3d,
triplet_margin_with_distance_loss, affine_grid). lucid.nn.functional re-exports them by name.

3-D convolution is a sum over the kD kernel planes of 2-D convolutions of strided D-slices
(conv_transpose3d: of 2-D transposed convolutions placed at stride along D), so it runs on the
oneDNN 2-D kernels, with their gradients.

3-D pooling is separable: the max (or mean) over a (kd, kh, kw) box is the max (mean) along D of
the max (mean) over (kh, kw), and torch's per-dimension output size, ceil-mode, padding and
divisor rules are products of per-dimension terms, so the 2-D pooling ops applied twice give
torch's result, including the flat D*H*W indices of max_pool3d (the first maximum in (d, h, w)
order, as torch picks).
"""
import numbers

import numpy as np

import lucid
from lucid import _C
from lucid._ops_nn import _pnorm, _reduce, _reduction, pairwise_distance, interpolate

__all__ = ["conv3d", "conv_transpose3d", "conv_tbc", "rrelu", "rrelu_", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle", "native_channel_shuffle", "local_response_norm", "max_unpool1d", "max_unpool2d",
           "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices", "pdist", "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d",
           "adaptive_max_pool3d", "lp_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "embedding_bag", "multilabel_margin_loss",
           "triplet_margin_with_distance_loss", "ctc_loss", "feature_alpha_dropout", "upsample_nearest",
           "upsample_bilinear", "affine_grid", "grid_sample"]


def _ntuple(v, n, op, arg):
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise ValueError(f"{op}: argument '{arg}' expected an int or {n} ints, got {tuple(v)}")
        return tuple(int(e) for e in v)
    if not isinstance(v, numbers.Integral):
        raise TypeError(f"{op}: argument '{arg}' expected an int or a tuple of {n} ints, got {type(v).__name__}")
    return (int(v),) * n


def _check_ndim(input, dims, op):
    if input.ndim not in dims:
        raise ValueError(f"{op}: argument 'input' expected a {' or '.join(f'{d}-D' for d in dims)} tensor, "
                         f"got {input.ndim}-D {list(input.shape)}")


def _batched5(input, op):
    _check_ndim(input, (4, 5), op)
    return (input, False) if input.ndim == 5 else (input.unsqueeze(0), True)


# ---- 3-D convolution ----------------------------------------------------------------------
def _check_conv3d_weight(input, weight, groups, op, transposed):
    if weight.ndim != 5:
        layout = "[in_channels, out_channels/groups, kD, kH, kW]" if transposed else \
            "[out_channels, in_channels/groups, kD, kH, kW]"
        raise ValueError(f"{op}: argument 'weight' expected a 5-D tensor {layout}, got {weight.ndim}-D "
                         f"{list(weight.shape)}")
    if groups <= 0:
        raise ValueError(f"{op}: argument 'groups' must be positive, got {groups}")
    want = weight.shape[0] if transposed else weight.shape[1] * groups
    if input.shape[1] != want:
        raise ValueError(f"{op}: input has {input.shape[1]} channels, but weight {list(weight.shape)} with "
                         f"groups={groups} expects {want}")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    op = "conv3d"
    x, unbatched = _batched5(input, op)
    _check_conv3d_weight(x, weight, groups, op, False)
    s, dl = _ntuple(stride, 3, op, "stride"), _ntuple(dilation, 3, op, "dilation")
    kd = weight.shape[2]
    if isinstance(padding, str):
        if padding == "valid":
            pd_l = pd_r = 0
            hw_pad = (0, 0)
        elif padding == "same":
            if any(v != 1 for v in s):
                raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
            pd_l = dl[0] * (kd - 1) // 2
            pd_r = dl[0] * (kd - 1) - pd_l
            hw_pad = "same"
        else:
            raise ValueError(f"{op}: argument 'padding' expected 'same', 'valid' or ints, got '{padding}'")
    else:
        p = _ntuple(padding, 3, op, "padding")
        pd_l = pd_r = p[0]
        hw_pad = p[1:]
    if pd_l or pd_r:
        x = lucid.pad(x, (0, 0, 0, 0, pd_l, pd_r))
    n, c, d, h, w = x.shape
    od = (d - dl[0] * (kd - 1) - 1) // s[0] + 1
    if od <= 0:
        raise ValueError(f"{op}: padded input depth {d} is smaller than the dilated kernel depth "
                         f"{dl[0] * (kd - 1) + 1}")
    out = None
    for k in range(kd):
        plane = x[:, :, k * dl[0]:k * dl[0] + (od - 1) * s[0] + 1:s[0]]
        plane = plane.permute(0, 2, 1, 3, 4).reshape(n * od, c, h, w)
        y = lucid.nn.functional.conv2d(plane, weight[:, :, k], None, s[1:], hw_pad, dl[1:], groups)
        out = y if out is None else out + y
    oc, oh, ow = out.shape[1:]
    out = out.reshape(n, od, oc, oh, ow).permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    op = "conv_transpose3d"
    x, unbatched = _batched5(input, op)
    _check_conv3d_weight(x, weight, groups, op, True)
    s, p = _ntuple(stride, 3, op, "stride"), _ntuple(padding, 3, op, "padding")
    opad, dl = _ntuple(output_padding, 3, op, "output_padding"), _ntuple(dilation, 3, op, "dilation")
    for i in range(3):
        if opad[i] >= max(s[i], dl[i]):
            raise ValueError(f"{op}: output padding must be smaller than either stride or dilation, got "
                             f"output_padding={opad}, stride={s}, dilation={dl}")
    n, ic, idd, ih, iw = x.shape
    kd = weight.shape[2]
    full = (idd - 1) * s[0] + dl[0] * (kd - 1) + 1 + opad[0]
    if full - 2 * p[0] <= 0:
        raise ValueError(f"{op}: output depth would be {full - 2 * p[0]}, which is not positive")
    planes = x.permute(0, 2, 1, 3, 4).reshape(n * idd, ic, ih, iw)
    out = None
    for k in range(kd):
        y = lucid.nn.functional.conv_transpose2d(planes, weight[:, :, k], None, s[1:], p[1:], opad[1:], groups,
                                                 dl[1:])
        oc, oh, ow = y.shape[1:]
        y = y.reshape(n, idd, oc, oh, ow)
        if s[0] > 1:  # the input planes land stride apart along D
            y = lucid.pad(y.unsqueeze(2), (0, 0, 0, 0, 0, 0, 0, s[0] - 1)).reshape(n, idd * s[0], oc, oh, ow)
            y = y[:, :(idd - 1) * s[0] + 1]
        left = k * dl[0]
        y = lucid.pad(y, (0, 0, 0, 0, 0, 0, left, full - left - y.shape[1]))
        out = y if out is None else out + y
    out = out[:, p[0]:full - p[0]].permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution in (time, batch, channel) layout: weight (kernel, in, out), bias (out)."""
    if input.ndim != 3 or weight.ndim != 3:
        raise ValueError(f"conv_tbc: expected a 3-D input (T, B, C) and a 3-D weight (K, C_in, C_out), got "
                         f"{list(input.shape)} and {list(weight.shape)}")
    y = lucid.nn.functional.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, int(pad))
    return y.permute(2, 0, 1)


# ---- activations --------------------------------------------------------------------------
def _rrelu_slope(input, lower, upper, training):
    """Per-element slope: 1 where input >= 0, else U(lower, upper) from lucid's generator in
    training, (lower + upper) / 2 in eval (as torch)."""
    if not training:
        neg = lucid.full_like(input, (lower + upper) / 2.0)
    else:
        neg = lucid.rand(*input.shape, dtype=input.dtype) * (upper - lower) + lower
    return lucid.where(input.detach() >= 0, lucid.ones_like(neg), neg)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if lower > upper:
        raise ValueError(f"rrelu: argument 'lower' ({lower}) must be at most 'upper' ({upper})")
    if inplace:
        return rrelu_(input, lower, upper, training)
    if not training:
        return lucid.nn.functional.leaky_relu(input, (lower + upper) / 2.0)
    return input * _rrelu_slope(input, lower, upper, True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    if lower > upper:
        raise ValueError(f"rrelu_: argument 'lower' ({lower}) must be at most 'upper' ({upper})")
    return input.mul_(_rrelu_slope(input, lower, upper, training))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout with one draw per (sample, channel), as torch's feature_alpha_dropout."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"feature_alpha_dropout: dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    alpha_p = -1.7580993408473766
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = (lucid.rand(*shape) >= p).to(input.dtype)
    return (input * keep + alpha_p * (1.0 - keep)) * a + (-a * alpha_p * p)



# ---- channel rearrangement ----------------------------------------------------------------
def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise ValueError(f"pixel_shuffle: expected input of at least 3 dims, got {input.ndim}-D {list(input.shape)}")
    if r <= 0:
        raise ValueError(f"pixel_shuffle: argument 'upscale_factor' must be positive, got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: the channel dim ({c}) must be divisible by the square of "
                         f"upscale_factor ({r * r})")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W)."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise ValueError(f"pixel_unshuffle: expected input of at least 3 dims, got {input.ndim}-D "
                         f"{list(input.shape)}")
    if r <= 0:
        raise ValueError(f"pixel_unshuffle: argument 'downscale_factor' must be positive, got {r}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: the height ({h}) and width ({w}) must be divisible by "
                         f"downscale_factor ({r})")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """(N, g * k, *) -> the channels regrouped as (k, g) instead of (g, k)."""
    g = int(groups)
    if input.ndim < 3:
        raise ValueError(f"channel_shuffle: expected input of at least 3 dims, got {input.ndim}-D")
    c = input.shape[1]
    if g <= 0 or c % g:
        raise ValueError(f"channel_shuffle: the number of channels ({c}) must be divisible by groups ({g})")
    rest = tuple(input.shape[2:])
    return input.reshape(input.shape[0], g, c // g, *rest).transpose(1, 2).reshape(tuple(input.shape))


native_channel_shuffle = channel_shuffle


# ---- normalisation ------------------------------------------------------------------------
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta (torch's composite)."""
    if input.ndim < 3:
        raise ValueError(f"local_response_norm: expected 3D or higher dimensionality input (got {input.ndim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    sizes = tuple(input.shape)
    div = (input * input).reshape(sizes[0], 1, sizes[1], -1)  # (N, 1, C, rest)
    div = lucid.pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = _C._avg_pool2d(div, (size, 1), (1, 1), (0, 0), False, True, None).reshape(sizes)
    return input / (div * alpha + k) ** beta


# ---- unpooling ----------------------------------------------------------------------------
def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd, op):
    _check_ndim(input, (nd + 1, nd + 2), op)
    if tuple(indices.shape) != tuple(input.shape):
        raise ValueError(f"{op}: argument 'indices' expected the shape of input {list(input.shape)}, got "
                         f"{list(indices.shape)}")
    k = _ntuple(kernel_size, nd, op, "kernel_size")
    s = k if stride is None else _ntuple(stride, nd, op, "stride")
    p = _ntuple(padding, nd, op, "padding")
    spatial = tuple(input.shape[-nd:])
    default = tuple((spatial[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(nd))
    if output_size is None:
        out = default
    else:
        out = tuple(int(v) for v in output_size)
        if len(out) == nd + 2:
            out = out[-nd:]
        if len(out) != nd:
            raise ValueError(f"{op}: output_size should be a sequence containing {nd} or {nd + 2} elements, but it "
                             f"has a length of {len(out)}")
        for i in range(nd):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < out[i] < hi:
                raise ValueError(f"{op}: invalid output_size {out} (dim {i} must be between {lo + 1} and {hi - 1})")
    lead = tuple(input.shape[:-nd])
    flat_in = input.reshape(*lead, -1)
    flat = lucid.zeros(*lead, int(np.prod(out)), dtype=input.dtype)
    flat = flat.scatter(len(lead), indices.reshape(*lead, -1), flat_in)
    return flat.reshape(*lead, *out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")


# ---- 3-D pooling (separable: 2-D over (H, W), then 2-D over a unit height along D) ---------
def _d_last(y):
    """(N, C, D, H, W) -> (N, C*H*W, 1, D), the layout the 2-D ops pool along D in."""
    n, c, d, h, w = y.shape
    return y.permute(0, 1, 3, 4, 2).reshape(n, c * h * w, 1, d)


def _d_back(z, n, c, h, w):
    """(N, C*H*W, 1, D') -> (N, C, D', H, W)."""
    return z.reshape(n, c, h, w, z.shape[-1]).permute(0, 1, 4, 2, 3)


def _check_pool3d(spatial, k, s, p, dl, ceil_mode, op):
    """torch's pooling bounds, checked here so errors name the 3-D op (not the 2-D ops it runs on)."""
    out = []
    for i in range(3):
        eff = (k[i] - 1) * dl[i] + 1
        if p[i] > eff // 2:
            raise ValueError(f"{op}: pad should be at most half of effective kernel size, but got pad={p}, "
                             f"kernel_size={k} and dilation={dl}")
        span = spatial[i] + 2 * p[i] - eff
        o = (-(-span // s[i]) if ceil_mode else span // s[i]) + 1
        if ceil_mode and (o - 1) * s[i] >= spatial[i] + p[i]:
            o -= 1
        out.append(o)
    if min(out) < 1:
        raise ValueError(f"{op}: given input size {tuple(spatial)}, the calculated output size {tuple(out)} is too "
                         "small")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    op = "avg_pool3d"
    x, unbatched = _batched5(input, op)
    k = _ntuple(kernel_size, 3, op, "kernel_size")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else _ntuple(stride, 3, op,
                                                                                                     "stride")
    p = _ntuple(padding, 3, op, "padding")
    n, c, d, h, w = x.shape
    _check_pool3d((d, h, w), k, s, p, (1, 1, 1), ceil_mode, op)
    div = None if divisor_override is None else 1  # sums in both stages, one division at the end
    y = _C._avg_pool2d(x.reshape(n, c * d, h, w), k[1:], s[1:], p[1:], ceil_mode, count_include_pad, div)
    ho, wo = y.shape[-2:]
    y = y.reshape(n, c, d, ho, wo)
    z = _C._avg_pool2d(_d_last(y), (1, k[0]), (1, s[0]), (0, p[0]), ceil_mode, count_include_pad, div)
    out = _d_back(z, n, c, ho, wo)
    if divisor_override is not None:
        out = out / float(divisor_override)
    return out.squeeze(0) if unbatched else out


def _max_pool3d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, op):
    x, unbatched = _batched5(input, op)
    k = _ntuple(kernel_size, 3, op, "kernel_size")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else _ntuple(stride, 3, op,
                                                                                                     "stride")
    p = _ntuple(padding, 3, op, "padding")
    dl = _ntuple(dilation, 3, op, "dilation")
    n, c, d, h, w = x.shape
    _check_pool3d((d, h, w), k, s, p, dl, ceil_mode, op)
    y, hw_idx = _C._max_pool2d(x.reshape(n, c * d, h, w), k[1:], s[1:], p[1:], dl[1:], ceil_mode)
    ho, wo = y.shape[-2:]
    y, hw_idx = y.reshape(n, c, d, ho, wo), hw_idx.reshape(n, c, d, ho, wo)
    z, d_idx = _C._max_pool2d(_d_last(y), (1, k[0]), (1, s[0]), (0, p[0]), (1, dl[0]), ceil_mode)
    out, d_idx = _d_back(z, n, c, ho, wo), _d_back(d_idx, n, c, ho, wo)
    # flat index = d * H * W + (the (h, w) index of the maximum in plane d)
    hw_at_d = hw_idx.gather(2, d_idx)
    idx = d_idx * (h * w) + hw_at_d
    if unbatched:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return out, idx


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out, idx = _max_pool3d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d")
    return (out, idx) if return_indices else out


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_pool3d_impl(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d_with_indices")


def _adaptive_size3(input, output_size, op):
    size = _ntuple(output_size, 3, op, "output_size") if not isinstance(output_size, (tuple, list)) else tuple(
        output_size)
    if len(size) != 3:
        raise ValueError(f"{op}: argument 'output_size' expected an int or 3 values, got {tuple(size)}")
    return tuple(input.shape[-3 + i] if size[i] is None else int(size[i]) for i in range(3))


def adaptive_avg_pool3d(input, output_size):
    op = "adaptive_avg_pool3d"
    x, unbatched = _batched5(input, op)
    od, oh, ow = _adaptive_size3(x, output_size, op)
    n, c, d, h, w = x.shape
    y = _C._adaptive_avg_pool2d(x.reshape(n, c * d, h, w), (oh, ow)).reshape(n, c, d, oh, ow)
    out = _d_back(_C._adaptive_avg_pool2d(_d_last(y), (1, od)), n, c, oh, ow)
    return out.squeeze(0) if unbatched else out


def _adaptive_max_pool3d_impl(input, output_size, op):
    x, unbatched = _batched5(input, op)
    od, oh, ow = _adaptive_size3(x, output_size, op)
    n, c, d, h, w = x.shape
    y, hw_idx = _C._adaptive_max_pool2d(x.reshape(n, c * d, h, w), (oh, ow))
    y, hw_idx = y.reshape(n, c, d, oh, ow), hw_idx.reshape(n, c, d, oh, ow)
    z, d_idx = _C._adaptive_max_pool2d(_d_last(y), (1, od))
    out, d_idx = _d_back(z, n, c, oh, ow), _d_back(d_idx, n, c, oh, ow)
    idx = d_idx * (h * w) + hw_idx.gather(2, d_idx)
    if unbatched:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return out, idx


def adaptive_max_pool3d(input, output_size, return_indices=False):
    out, idx = _adaptive_max_pool3d_impl(input, output_size, "adaptive_max_pool3d")
    return (out, idx) if return_indices else out


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max_pool3d_impl(input, output_size, "adaptive_max_pool3d_with_indices")


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kd, kh, kw = _ntuple(kernel_size, 3, "lp_pool3d", "kernel_size")
    out = avg_pool3d(input.pow(norm_type), (kd, kh, kw), stride, 0, ceil_mode)
    return (lucid.sign(out) * lucid.relu(lucid.abs(out))).mul(kd * kh * kw).pow(1.0 / norm_type)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return lucid.nn.functional.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return lucid.nn.functional.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return lucid.nn.functional.adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return lucid.nn.functional.adaptive_max_pool2d(input, output_size, True)


# ---- fractional max pooling (Graham, 2014) ------------------------------------------------
def _fractional_max_pool(input, kernel_size, output_size, output_ratio, samples, nd, op):
    """Max over pseudo-random k-windows whose starts, per dim, are torch's generate_intervals of a
    sample u in [0, 1): floor((i + u) * alpha) - floor(u * alpha), alpha = (in - k) / (out - 1),
    the last window ending at the input's edge. The samples come from lucid's generator unless
    given (N, C, nd); sample j drives the spatial dims from the last (2-D: W, H) or, in 3-D, the
    first (T, H, W), as torch's kernels use them."""
    _check_ndim(input, (nd + 1, nd + 2), op)
    unbatched = input.ndim == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    n, c = x.shape[:2]
    spatial = tuple(x.shape[2:])
    k = _ntuple(kernel_size, nd, op, "kernel_size")
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd
        out = tuple(int(spatial[i] * float(ratio[i])) for i in range(nd))
    else:
        out = _ntuple(output_size, nd, op, "output_size")
    for i in range(nd):  # torch's bounds: output + kernel - 1 <= input in 2-D, < input in 3-D
        if out[i] + k[i] - 1 > spatial[i] - (nd == 3):
            raise ValueError(f"{op}: output_size {out} with kernel_size {k} is too large for an input of spatial "
                             f"size {spatial} (needs output + kernel - 1 {'<' if nd == 3 else '<='} input in every "
                             "dim)")
    if samples is None:
        samples = lucid.rand(n, c, nd, dtype=x.dtype)
    elif tuple(samples.shape) != (n, c, nd):
        raise ValueError(f"{op}: argument '_random_samples' expected shape {[n, c, nd]}, got {list(samples.shape)}")
    order = list(range(nd))[::-1] if nd == 2 else list(range(nd))  # sample index for each spatial dim
    starts = []
    for d in range(nd):
        u = samples[:, :, order[d]].to(x.dtype).reshape(n, c, 1)
        if out[d] > 1:
            alpha = float(np.array(spatial[d] - k[d], dtype=np.float64) / (out[d] - 1))
            seq = ((lucid.arange(out[d], dtype=x.dtype).reshape(1, 1, -1) + u) * alpha).floor() - (u * alpha).floor()
            seq = lucid.cat([seq[:, :, :-1], lucid.full((n, c, 1), float(spatial[d] - k[d]), dtype=x.dtype)], 2)
        else:
            seq = lucid.full((n, c, 1), float(spatial[d] - k[d]), dtype=x.dtype)
        starts.append(seq.to(lucid.int64))
    # flat input index of every (output position, window offset), as (N, C, *out, *k)
    flat = None
    stride = 1
    for d in reversed(range(nd)):
        pos = starts[d].unsqueeze(-1) + lucid.arange(k[d]).reshape(1, 1, 1, -1)  # (N, C, out_d, k_d)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = out[d], k[d]
        term = pos.reshape(*shape) * stride
        flat = term if flat is None else flat + term
        stride *= spatial[d]
    flat = flat.expand(n, c, *out, *k).reshape(n, c, -1)
    vals = x.reshape(n, c, -1).gather(2, flat).reshape(n, c, *out, int(np.prod(k)))
    values, arg = vals.max(-1)
    idx = flat.reshape(n, c, *out, int(np.prod(k))).gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    if unbatched:
        values, idx = values.squeeze(0), idx.squeeze(0)
    return values, idx


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    out, idx = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2,
                                    "fractional_max_pool2d")
    return (out, idx) if return_indices else out


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2,
                                "fractional_max_pool2d_with_indices")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    out, idx = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3,
                                    "fractional_max_pool3d")
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3,
                                "fractional_max_pool3d_with_indices")


# ---- distances ----------------------------------------------------------------------------
def pdist(input, p=2):
    """p-norm distance between each pair of rows i < j of an (N, M) input, in row-major order."""
    if input.ndim != 2:
        raise ValueError(f"pdist: argument 'input' expected a 2-D tensor, got {input.ndim}-D {list(input.shape)}")
    if p < 0:
        raise ValueError(f"pdist: argument 'p' must be a non-negative value, got {p}")
    i, j = np.triu_indices(input.shape[0], 1)
    diff = input[lucid.tensor(i.astype(np.int64))] - input[lucid.tensor(j.astype(np.int64))]
    if p == 0:
        return (diff != 0).to(input.dtype).sum(-1)
    return _pnorm(diff, p, -1, False)


# ---- embedding bags -----------------------------------------------------------------------
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sum, mean or max of the embedding rows in each bag. Bags are a (B, L) input, or a 1-D input
    cut at `offsets`; membership is a (B, L) mask, so sum and mean are one matmul with the rows."""
    op = "embedding_bag"
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(f"{op}: max_norm, scale_grad_by_freq and sparse are not supported")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"{op}: argument 'mode' expected 'sum', 'mean' or 'max', got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"{op}: per_sample_weights was not None. per_sample_weights is only supported "
                                  f"for mode='sum' (got mode='{mode}')")
    if input.dtype not in (lucid.int64, lucid.int32):
        raise TypeError(f"{op}: argument 'input' expected an int64 or int32 tensor of indices, got {input.dtype}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"{op}: if input is 2-D, then offsets has to be None, as input is treated as a "
                             "mini-batch of fixed length sequences")
        nbags, length = input.shape
        bag = lucid.arange(nbags).reshape(-1, 1).expand(nbags, length).reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        input = input.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError(f"{op}: offsets has to be a 1-D tensor but got None")
        if offsets.ndim != 1:
            raise ValueError(f"{op}: offsets has to be a 1-D tensor, got {offsets.ndim}-D")
        if include_last_offset:
            offsets = offsets[:-1]
        nbags = offsets.shape[0]
        bag = (lucid.arange(input.shape[0]).reshape(-1, 1) >= offsets.reshape(1, -1)).to(lucid.int64).sum(1) - 1
    else:
        raise ValueError(f"{op}: input has to be 1-D or 2-D, got {input.ndim}-D")
    member = bag.reshape(1, -1) == lucid.arange(nbags).reshape(-1, 1)  # (B, L)
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += weight.shape[0]
        member = member & (input != padding_idx).reshape(1, -1)
    rows = lucid.nn.functional.embedding(input, weight)  # (L, D)
    if mode == "max":
        neg = lucid.full((), float("-inf"), dtype=weight.dtype)
        picked = lucid.where(member.unsqueeze(-1), rows.unsqueeze(0), neg).amax(1)
        return lucid.where(member.any(1, keepdim=True), picked, lucid.zeros_like(picked))
    m = member.to(weight.dtype)
    if per_sample_weights is not None:
        m = m * per_sample_weights.reshape(1, -1).to(weight.dtype)
    out = lucid.matmul(m, rows)
    if mode == "mean":
        out = out / member.to(weight.dtype).sum(1, keepdim=True).clamp_min(1.0)
    return out


# ---- losses -------------------------------------------------------------------------------
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])) / C; the
    targets of a row are its entries before the first -1."""
    op = "multilabel_margin_loss"
    reduction = _reduction(size_average, reduce, reduction)
    _check_ndim(input, (1, 2), op)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"{op}: argument 'target' expected the shape of input {list(input.shape)}, got "
                         f"{list(target.shape)}")
    if target.dtype != lucid.int64:
        raise TypeError(f"{op}: argument 'target' expected an int64 tensor, got {target.dtype}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    t = target if target.ndim == 2 else target.unsqueeze(0)
    c = x.shape[1]
    valid = (t == -1).to(lucid.int64).cumsum(1) == 0  # (N, J)
    safe_t = lucid.where(valid, t, lucid.zeros_like(t))
    is_target = ((safe_t.unsqueeze(2) == lucid.arange(c).reshape(1, 1, c)) & valid.unsqueeze(2)).any(1)  # (N, C)
    x_t = x.gather(1, safe_t)  # (N, J)
    margins = (1.0 - x_t.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0.0)  # (N, J, C)
    keep = (valid.unsqueeze(2) & ~is_target.unsqueeze(1)).to(x.dtype)
    loss = (margins * keep).sum((1, 2)) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction, op)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    op = "triplet_margin_with_distance_loss"
    if margin <= 0:
        raise ValueError(f"{op}: margin must be greater than 0, got {margin}")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = lucid.minimum(d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0.0), reduction, op)


_CTC_NEG = -1e30  # "log 0" of the CTC recursion: finite, so unreachable states keep finite gradients


def _lse(*xs):
    m = xs[0]
    for x in xs[1:]:
        m = lucid.maximum(m, x)
    m = m.detach()
    total = None
    for x in xs:
        e = (x - m).exp()
        total = e if total is None else total + e
    return m + total.log()


def _lengths(v):
    if isinstance(v, numbers.Integral):
        return lucid.tensor([int(v)], dtype=lucid.int64)
    if isinstance(v, lucid.Tensor):
        return v.to(lucid.int64).reshape(-1)
    return lucid.tensor([int(e) for e in v], dtype=lucid.int64)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss: -log of the total probability of the
    alignments of each target, by the forward (alpha) recursion over the time steps in log space.
    log_probs (T, N, C) or (T, C); targets padded (N, S) or concatenated 1-D. The gradient
    reaching logits through log_softmax equals torch's (torch's own gradient w.r.t. log_probs
    presumes that log_softmax)."""
    op = "ctc_loss"
    if log_probs.ndim not in (2, 3):
        raise ValueError(f"{op}: argument 'log_probs' expected a (T, N, C) or (T, C) tensor, got {log_probs.ndim}-D")
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    tt, n, c = lp.shape
    if not 0 <= blank < c:
        raise ValueError(f"{op}: argument 'blank' must be in [0, {c}), got {blank}")
    in_len = _lengths(input_lengths)
    tg_len = _lengths(target_lengths)
    if in_len.shape[0] != n or tg_len.shape[0] != n:
        raise ValueError(f"{op}: input_lengths and target_lengths must have {n} entries (the batch size), got "
                         f"{in_len.shape[0]} and {tg_len.shape[0]}")
    tg = targets.to(lucid.int64)
    if unbatched:  # targets (S): one padded row
        tg = tg.reshape(1, -1)
    if tg.ndim == 2:
        s_max = tg.shape[1]
    elif tg.ndim == 1:  # concatenated targets: cut into a padded (N, max length) block
        s_max = int(tg_len.max().item()) if n else 0
        starts = tg_len.cumsum(0) - tg_len
        pos = starts.reshape(-1, 1) + lucid.arange(max(s_max, 1)).reshape(1, -1)
        tg = tg[pos.clamp(0, max(tg.shape[0] - 1, 0))] if tg.shape[0] else lucid.zeros(n, max(s_max, 1),
                                                                                     dtype=lucid.int64)
        s_max = max(s_max, 1)
    else:
        raise ValueError(f"{op}: argument 'targets' expected a 1-D or 2-D tensor, got {tg.ndim}-D")
    # extended labels: blank, l1, blank, l2, ..., blank
    blanks = lucid.full((n, s_max), blank, dtype=lucid.int64)
    ext = lucid.cat([lucid.stack([blanks, tg], 2).reshape(n, 2 * s_max), blanks[:, :1]], 1)
    width = 2 * s_max + 1
    emit = lp.gather(2, ext.unsqueeze(0).expand(tt, n, width))  # (T, N, 2S+1)
    skip = lucid.cat([lucid.zeros(n, 2, dtype=lucid.bool), (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])], 1)
    neg = lucid.full((), _CTC_NEG, dtype=lp.dtype)
    first = lucid.arange(width).reshape(1, -1) < 2
    alpha = lucid.where(first, emit[0], neg)
    for t in range(1, tt):
        a1 = lucid.cat([neg.expand(n, 1), alpha[:, :-1]], 1)
        a2 = lucid.where(skip, lucid.cat([neg.expand(n, 2), alpha[:, :-2]], 1), neg)
        nxt = _lse(alpha, a1, a2) + emit[t]
        alpha = lucid.where((in_len > t).reshape(-1, 1), nxt, alpha)
    last = alpha.gather(1, (2 * tg_len).reshape(-1, 1)).reshape(-1)
    prev = alpha.gather(1, (2 * tg_len - 1).clamp_min(0).reshape(-1, 1)).reshape(-1)
    loss = -_lse(last, lucid.where(tg_len > 0, prev, neg))
    infeasible = loss > -_CTC_NEG / 2
    if zero_infinity:
        loss = lucid.where(infeasible, lucid.zeros_like(loss), loss)
    else:
        loss = lucid.where(infeasible, lucid.full_like(loss, float("inf")), loss)
    if reduction == "mean":
        return (loss / tg_len.clamp_min(1).to(loss.dtype)).mean()
    if unbatched and reduction == "none":
        return loss.reshape(())
    return _reduce(loss, reduction, op)


# ---- resampling ---------------------------------------------------------------------------
def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _base_coords(n, align_corners, dtype):
    if n == 1:
        return lucid.zeros(1, dtype=dtype)
    c = lucid.arange(n, dtype=dtype) * (2.0 / (n - 1)) - 1.0
    return c if align_corners else c * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) or (N, D, H, W, 3) of theta applied to [-1, 1] base coordinates."""
    op = "affine_grid"
    align_corners = bool(align_corners) if align_corners is not None else False
    size = tuple(int(s) for s in size)
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
            raise ValueError(f"{op}: expected a batch of 2D affine matrices of shape Nx2x3 for size {size}, got "
                             f"{list(theta.shape)}")
        n, _, h, w = size
        xs = _base_coords(w, align_corners, theta.dtype).reshape(1, w).expand(h, w)
        ys = _base_coords(h, align_corners, theta.dtype).reshape(h, 1).expand(h, w)
        base = lucid.stack([xs, ys, lucid.ones_like(xs)], -1).reshape(1, h * w, 3)
        return lucid.matmul(base, theta.transpose(1, 2)).reshape(n, h, w, 2)
    if len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[1:]) != (3, 4):
            raise ValueError(f"{op}: expected a batch of 3D affine matrices of shape Nx3x4 for size {size}, got "
                             f"{list(theta.shape)}")
        n, _, d, h, w = size
        xs = _base_coords(w, align_corners, theta.dtype).reshape(1, 1, w).expand(d, h, w)
        ys = _base_coords(h, align_corners, theta.dtype).reshape(1, h, 1).expand(d, h, w)
        zs = _base_coords(d, align_corners, theta.dtype).reshape(d, 1, 1).expand(d, h, w)
        base = lucid.stack([xs, ys, zs, lucid.ones_like(xs)], -1).reshape(1, d * h * w, 4)
        return lucid.matmul(base, theta.transpose(1, 2)).reshape(n, d, h, w, 3)
    raise NotImplementedError(f"{op}: only 2D (4-element size) and 3D (5-element size) grids are supported, got "
                              f"{size}")


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1.0) * ((size - 1) / 2.0)
    return ((coord + 1.0) * size - 1.0) / 2.0


def _reflect(coord, lo, hi):
    """Reflect coordinates into [lo, hi] (torch's reflect_coordinates, on doubled bounds)."""
    if hi == lo:
        return lucid.zeros_like(coord)
    span = (hi - lo) / 2.0
    c = (coord - lo / 2.0).abs()
    flips = (c / span).floor()
    extra = c - flips * span
    even = (flips.remainder(2) == 0)
    return lucid.where(even, extra + lo / 2.0, span - extra + lo / 2.0)


def _source_coord(coord, size, padding_mode, align_corners):
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        c = c.clamp(0, size - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = c.clamp(0, size - 1)
    return c


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples a 4-D input (N, C, H, W) at grid (N, Ho, Wo, 2) locations in [-1, 1] (x, y):
    gathers of the corner pixels weighted by their distances, so gradients reach input and grid."""
    op = "grid_sample"
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"{op}: mode '{mode}' is not supported (bilinear, nearest)")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"{op}: argument 'padding_mode' expected 'zeros', 'border' or 'reflection', got "
                         f"'{padding_mode}'")
    if input.ndim != 4:
        raise NotImplementedError(f"{op}: only 4-D input (N, C, H, W) is supported, got {input.ndim}-D")
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise ValueError(f"{op}: argument 'grid' expected shape (N={input.shape[0]}, H_out, W_out, 2), got "
                         f"{list(grid.shape)}")
    align_corners = bool(align_corners) if align_corners is not None else False
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    ix = _source_coord(grid[..., 0], w, padding_mode, align_corners)
    iy = _source_coord(grid[..., 1], h, padding_mode, align_corners)
    flat = input.reshape(n, c, h * w)

    def tap(xi, yi):
        """input[n, :, yi, xi] as (N, C, Ho, Wo), zero where (xi, yi) lies outside."""
        inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        xc, yc = xi.clamp(0, w - 1), yi.clamp(0, h - 1)
        idx = (yc * w + xc).to(lucid.int64).reshape(n, 1, ho * wo).expand(n, c, ho * wo)
        v = flat.gather(2, idx).reshape(n, c, ho, wo)
        return v * inside.to(input.dtype).unsqueeze(1)

    if mode == "nearest":
        return tap(lucid.round(ix.detach()), lucid.round(iy.detach()))
    x0, y0 = ix.detach().floor(), iy.detach().floor()
    x1, y1 = x0 + 1, y0 + 1
    wx1, wy1 = ix - x0, iy - y0
    wx0, wy0 = 1.0 - wx1, 1.0 - wy1
    return (tap(x0, y0) * (wx0 * wy0).unsqueeze(1) + tap(x1, y0) * (wx1 * wy0).unsqueeze(1)
            + tap(x0, y1) * (wx0 * wy1).unsqueeze(1) + tap(x1, y1) * (wx1 * wy1).unsqueeze(1))

