"""torch.nn.functional's 3-D convolutions, 3-D / fractional pooling and max unpooling, as
composites of lucid's 2-D convolution and pooling ops, gathers and scatters (no kernels of their
own), so autograd and lucid.compile work through them; lucid.nn.functional re-exports them.

3-D convolution is a sum over the kD kernel planes of 2-D convolutions of strided D-slices
(conv_transpose3d: of 2-D transposed convolutions placed at stride along D), so it runs on the
oneDNN 2-D kernels, with their gradients.

3-D pooling is separable: the max (or mean) over a (kd, kh, kw) box is the max (mean) along D of
the max (mean) over (kh, kw), and torch's per-dimension output size, ceil-mode, padding and
divisor rules are products of per-dimension terms, so the 2-D pooling ops applied twice give
torch's result, including the flat D*H*W indices of max_pool3d (the first maximum in (d, h, w)
order, as torch picks).
"""
from lucid._C import ArgumentError  # a ValueError and a RuntimeError, as torch raises
import numbers

import numpy as np

import lucid
from lucid import _C

__all__ = ["conv3d", "conv_transpose3d", "conv_tbc", "max_unpool1d", "max_unpool2d", "max_unpool3d", "avg_pool3d",
           "max_pool3d", "max_pool3d_with_indices", "adaptive_avg_pool3d", "adaptive_max_pool3d",
           "adaptive_max_pool3d_with_indices", "lp_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "fractional_max_pool2d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _ntuple(v, n, op, arg):
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise ArgumentError(f"{op}: argument '{arg}' expected an int or {n} ints, got {tuple(v)}")
        return tuple(int(e) for e in v)
    if not isinstance(v, numbers.Integral):
        raise TypeError(f"{op}: argument '{arg}' expected an int or a tuple of {n} ints, got {type(v).__name__}")
    return (int(v),) * n


def _check_ndim(input, dims, op):
    if input.ndim not in dims:
        raise ArgumentError(f"{op}: argument 'input' expected a {' or '.join(f'{d}-D' for d in dims)} tensor, "
                         f"got {input.ndim}-D {list(input.shape)}")


def _batched5(input, op):
    _check_ndim(input, (4, 5), op)
    return (input, False) if input.ndim == 5 else (input.unsqueeze(0), True)


# ---- 3-D convolution ----------------------------------------------------------------------
def _check_conv3d_weight(input, weight, groups, op, transposed):
    if weight.ndim != 5:
        layout = "[in_channels, out_channels/groups, kD, kH, kW]" if transposed else \
            "[out_channels, in_channels/groups, kD, kH, kW]"
        raise ArgumentError(f"{op}: argument 'weight' expected a 5-D tensor {layout}, got {weight.ndim}-D "
                         f"{list(weight.shape)}")
    if groups <= 0:
        raise ArgumentError(f"{op}: argument 'groups' must be positive, got {groups}")
    want = weight.shape[0] if transposed else weight.shape[1] * groups
    if input.shape[1] != want:
        raise ArgumentError(f"{op}: input has {input.shape[1]} channels, but weight {list(weight.shape)} with "
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
                raise ArgumentError(f"{op}: padding='same' is not supported for strided convolutions")
            pd_l = dl[0] * (kd - 1) // 2
            pd_r = dl[0] * (kd - 1) - pd_l
            hw_pad = "same"
        else:
            raise ArgumentError(f"{op}: argument 'padding' expected 'same', 'valid' or ints, got '{padding}'")
    else:
        p = _ntuple(padding, 3, op, "padding")
        pd_l = pd_r = p[0]
        hw_pad = p[1:]
    if pd_l or pd_r:
        x = lucid.pad(x, (0, 0, 0, 0, pd_l, pd_r))
    n, c, d, h, w = x.shape
    od = (d - dl[0] * (kd - 1) - 1) // s[0] + 1
    if od <= 0:
        raise ArgumentError(f"{op}: padded input depth {d} is smaller than the dilated kernel depth "
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
            raise ArgumentError(f"{op}: output padding must be smaller than either stride or dilation, got "
                             f"output_padding={opad}, stride={s}, dilation={dl}")
    n, ic, idd, ih, iw = x.shape
    kd = weight.shape[2]
    full = (idd - 1) * s[0] + dl[0] * (kd - 1) + 1 + opad[0]
    if full - 2 * p[0] <= 0:
        raise ArgumentError(f"{op}: output depth would be {full - 2 * p[0]}, which is not positive")
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
        raise ArgumentError(f"conv_tbc: expected a 3-D input (T, B, C) and a 3-D weight (K, C_in, C_out), got "
                         f"{list(input.shape)} and {list(weight.shape)}")
    y = lucid.nn.functional.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, int(pad))
    return y.permute(2, 0, 1)


# ---- unpooling ----------------------------------------------------------------------------
def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd, op):
    _check_ndim(input, (nd + 1, nd + 2), op)
    if tuple(indices.shape) != tuple(input.shape):
        raise ArgumentError(f"{op}: argument 'indices' expected the shape of input {list(input.shape)}, got "
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
            raise ArgumentError(f"{op}: output_size should be a sequence containing {nd} or {nd + 2} elements, but it "
                             f"has a length of {len(out)}")
        for i in range(nd):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < out[i] < hi:
                raise ArgumentError(f"{op}: invalid output_size {out} (dim {i} must be between {lo + 1} and {hi - 1})")
    lead = tuple(input.shape[:-nd])
    flat_in = input.reshape(*lead, -1)
    flat = lucid.zeros(*lead, int(np.prod(out)), dtype=input.dtype, device=input.device)
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
            raise ArgumentError(f"{op}: pad should be at most half of effective kernel size, but got pad={p}, "
                             f"kernel_size={k} and dilation={dl}")
        span = spatial[i] + 2 * p[i] - eff
        o = (-(-span // s[i]) if ceil_mode else span // s[i]) + 1
        if ceil_mode and (o - 1) * s[i] >= spatial[i] + p[i]:
            o -= 1
        out.append(o)
    if min(out) < 1:
        raise ArgumentError(f"{op}: given input size {tuple(spatial)}, the calculated output size {tuple(out)} is too "
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
        raise ArgumentError(f"{op}: argument 'output_size' expected an int or 3 values, got {tuple(size)}")
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
            raise ArgumentError(f"{op} requires specifying either an output_size or an output_ratio")
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd
        out = tuple(int(spatial[i] * float(ratio[i])) for i in range(nd))
    else:
        out = _ntuple(output_size, nd, op, "output_size")
    for i in range(nd):  # torch's bounds: output + kernel - 1 <= input in 2-D, < input in 3-D
        if out[i] + k[i] - 1 > spatial[i] - (nd == 3):
            raise ArgumentError(f"{op}: output_size {out} with kernel_size {k} is too large for an input of spatial "
                             f"size {spatial} (needs output + kernel - 1 {'<' if nd == 3 else '<='} input in every "
                             "dim)")
    if samples is None:
        samples = lucid.rand(n, c, nd, dtype=x.dtype, device=x.device)
    elif tuple(samples.shape) != (n, c, nd):
        raise ArgumentError(f"{op}: argument '_random_samples' expected shape {[n, c, nd]}, got {list(samples.shape)}")
    order = list(range(nd))[::-1] if nd == 2 else list(range(nd))  # sample index for each spatial dim
    starts = []
    for d in range(nd):
        u = samples[:, :, order[d]].to(x.dtype).reshape(n, c, 1)
        if out[d] > 1:
            alpha = float(np.array(spatial[d] - k[d], dtype=np.float64) / (out[d] - 1))
            ramp = lucid.arange(out[d], dtype=x.dtype, device=x.device).reshape(1, 1, -1)
            seq = ((ramp + u) * alpha).floor() - (u * alpha).floor()
            last = lucid.full((n, c, 1), float(spatial[d] - k[d]), dtype=x.dtype, device=x.device)
            seq = lucid.cat([seq[:, :, :-1], last], 2)
        else:
            seq = lucid.full((n, c, 1), float(spatial[d] - k[d]), dtype=x.dtype, device=x.device)
        starts.append(seq.to(lucid.int64))
    # flat input index of every (output position, window offset), as (N, C, *out, *k)
    flat = None
    stride = 1
    for d in reversed(range(nd)):
        pos = starts[d].unsqueeze(-1) + lucid.arange(k[d], device=x.device).reshape(1, 1, 1, -1)  # (N, C, out_d, k_d)
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
