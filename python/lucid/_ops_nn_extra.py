"""torch.nn.functional ops that are composites of existing lucid ops (no kernels of their own):
rrelu, feature_alpha_dropout, pixel/channel shuffles, local_response_norm, pdist, embedding_bag,
multilabel_margin_loss, triplet_margin_with_distance_loss, ctc_loss, affine_grid, grid_sample
(3-D convolution and pooling, fractional pooling and unpooling are in _ops_nn_spatial).

Each function here is a few reshapes, gathers, scatters and reductions over ops that already have
kernels, VJPs and lowerings, so autograd and lucid.compile work through them with nothing new in
C++. torch writes several of them as Python composites too (local_response_norm,
triplet_margin_with_distance_loss, affine_grid). lucid.nn.functional re-exports them by name.
"""
from lucid._autocast_policy import autocast_policy
from lucid._C import ArgumentError  # a ValueError and a RuntimeError, as torch raises
import numbers

import numpy as np

import lucid
from lucid import _C
from lucid._ops_nn import _alpha_dropout, _pnorm, _reduce, _reduction, pairwise_distance, interpolate
from lucid._ops_nn_spatial import _check_ndim

__all__ = ["rrelu", "rrelu_", "feature_alpha_dropout", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
           "native_channel_shuffle", "local_response_norm", "pdist", "embedding_bag", "multilabel_margin_loss",
           "triplet_margin_with_distance_loss", "ctc_loss", "upsample_nearest", "upsample_bilinear", "affine_grid",
           "grid_sample"]


# ---- activations --------------------------------------------------------------------------
def _rrelu_slope(input, lower, upper, training):
    """Per-element slope: 1 where input >= 0, else U(lower, upper) from lucid's generator in
    training, (lower + upper) / 2 in eval (as torch)."""
    if not training:
        neg = lucid.full_like(input, (lower + upper) / 2.0)
    else:
        neg = lucid.rand(*input.shape, dtype=input.dtype, device=input.device) * (upper - lower) + lower
    return lucid.where(input.detach() >= 0, lucid.ones_like(neg), neg)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if lower > upper:
        raise ArgumentError(f"rrelu: argument 'lower' ({lower}) must be at most 'upper' ({upper})")
    if inplace:
        return rrelu_(input, lower, upper, training)
    if not training:
        return lucid.nn.functional.leaky_relu(input, (lower + upper) / 2.0)
    return input * _rrelu_slope(input, lower, upper, True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    if lower > upper:
        raise ArgumentError(f"rrelu_: argument 'lower' ({lower}) must be at most 'upper' ({upper})")
    return input.mul_(_rrelu_slope(input, lower, upper, training))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout with one draw per (sample, channel), as torch's feature_alpha_dropout."""
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout(input, p, training, shape, "feature_alpha_dropout")



# ---- channel rearrangement ----------------------------------------------------------------
def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise ArgumentError(f"pixel_shuffle: expected input of at least 3 dims, got {input.ndim}-D {list(input.shape)}")
    if r <= 0:
        raise ArgumentError(f"pixel_shuffle: argument 'upscale_factor' must be positive, got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ArgumentError(f"pixel_shuffle: the channel dim ({c}) must be divisible by the square of "
                         f"upscale_factor ({r * r})")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W)."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise ArgumentError(f"pixel_unshuffle: expected input of at least 3 dims, got {input.ndim}-D "
                         f"{list(input.shape)}")
    if r <= 0:
        raise ArgumentError(f"pixel_unshuffle: argument 'downscale_factor' must be positive, got {r}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ArgumentError(f"pixel_unshuffle: the height ({h}) and width ({w}) must be divisible by "
                         f"downscale_factor ({r})")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """(N, g * k, *) -> the channels regrouped as (k, g) instead of (g, k)."""
    g = int(groups)
    if input.ndim < 3:
        raise ArgumentError(f"channel_shuffle: expected input of at least 3 dims, got {input.ndim}-D")
    c = input.shape[1]
    if g <= 0 or c % g:
        raise ArgumentError(f"channel_shuffle: the number of channels ({c}) must be divisible by groups ({g})")
    rest = tuple(input.shape[2:])
    return input.reshape(input.shape[0], g, c // g, *rest).transpose(1, 2).reshape(tuple(input.shape))


native_channel_shuffle = channel_shuffle


# ---- normalisation ------------------------------------------------------------------------
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta (torch's composite)."""
    if input.ndim < 3:
        raise ArgumentError(f"local_response_norm: expected 3D or higher dimensionality input (got {input.ndim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    sizes = tuple(input.shape)
    div = (input * input).reshape(sizes[0], 1, sizes[1], -1)  # (N, 1, C, rest)
    div = lucid.pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = _C._avg_pool2d(div, (size, 1), (1, 1), (0, 0), False, True, None).reshape(sizes)
    return input / (div * alpha + k) ** beta


# ---- distances ----------------------------------------------------------------------------
@autocast_policy(cuda="fp32")
def pdist(input, p=2):
    """p-norm distance between each pair of rows i < j of an (N, M) input, in row-major order."""
    if input.ndim != 2:
        raise ArgumentError(f"pdist: argument 'input' expected a 2-D tensor, got {input.ndim}-D {list(input.shape)}")
    if p < 0:
        raise ArgumentError(f"pdist: argument 'p' must be a non-negative value, got {p}")
    i, j = np.triu_indices(input.shape[0], 1)
    dev = input.device
    diff = input[lucid.tensor(i.astype(np.int64), device=dev)] - input[lucid.tensor(j.astype(np.int64), device=dev)]
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
        raise ArgumentError(f"{op}: argument 'mode' expected 'sum', 'mean' or 'max', got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"{op}: per_sample_weights was not None. per_sample_weights is only supported "
                                  f"for mode='sum' (got mode='{mode}')")
    if input.dtype not in (lucid.int64, lucid.int32):
        raise TypeError(f"{op}: argument 'input' expected an int64 or int32 tensor of indices, got {input.dtype}")
    if input.ndim == 2:
        if offsets is not None:
            raise ArgumentError(f"{op}: if input is 2-D, then offsets has to be None, as input is treated as a "
                             "mini-batch of fixed length sequences")
        nbags, length = input.shape
        bag = lucid.arange(nbags, device=input.device).reshape(-1, 1).expand(nbags, length).reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        input = input.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ArgumentError(f"{op}: offsets has to be a 1-D tensor but got None")
        if offsets.ndim != 1:
            raise ArgumentError(f"{op}: offsets has to be a 1-D tensor, got {offsets.ndim}-D")
        if include_last_offset:
            offsets = offsets[:-1]
        nbags = offsets.shape[0]
        positions = lucid.arange(input.shape[0], device=input.device).reshape(-1, 1)
        bag = (positions >= offsets.reshape(1, -1)).to(lucid.int64).sum(1) - 1
    else:
        raise ArgumentError(f"{op}: input has to be 1-D or 2-D, got {input.ndim}-D")
    member = bag.reshape(1, -1) == lucid.arange(nbags, device=input.device).reshape(-1, 1)  # (B, L)
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
@autocast_policy(cpu="fp32", cuda="fp32")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])) / C; the
    targets of a row are its entries before the first -1."""
    op = "multilabel_margin_loss"
    reduction = _reduction(size_average, reduce, reduction)
    _check_ndim(input, (1, 2), op)
    if tuple(target.shape) != tuple(input.shape):
        raise ArgumentError(f"{op}: argument 'target' expected the shape of input {list(input.shape)}, got "
                         f"{list(target.shape)}")
    if target.dtype != lucid.int64:
        raise TypeError(f"{op}: argument 'target' expected an int64 tensor, got {target.dtype}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    t = target if target.ndim == 2 else target.unsqueeze(0)
    c = x.shape[1]
    valid = (t == -1).to(lucid.int64).cumsum(1) == 0  # (N, J)
    safe_t = lucid.where(valid, t, lucid.zeros_like(t))
    classes = lucid.arange(c, device=t.device).reshape(1, 1, c)
    is_target = ((safe_t.unsqueeze(2) == classes) & valid.unsqueeze(2)).any(1)  # (N, C)
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
        raise ArgumentError(f"{op}: margin must be greater than 0, got {margin}")
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


def _lengths(v, device):
    """Lengths (a number, a sequence or a tensor on any device, as torch accepts CPU lengths for
    CUDA log_probs) as a 1-D int64 tensor on `device`."""
    if isinstance(v, numbers.Integral):
        return lucid.tensor([int(v)], dtype=lucid.int64, device=device)
    if isinstance(v, lucid.Tensor):
        return v.to(device, lucid.int64).reshape(-1)
    return lucid.tensor([int(e) for e in v], dtype=lucid.int64, device=device)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss: -log of the total probability of the
    alignments of each target, by the forward (alpha) recursion over the time steps in log space.
    log_probs (T, N, C) or (T, C); targets padded (N, S) or concatenated 1-D. The gradient
    reaching logits through log_softmax equals torch's (torch's own gradient w.r.t. log_probs
    presumes that log_softmax)."""
    op = "ctc_loss"
    if log_probs.ndim not in (2, 3):
        raise ArgumentError(f"{op}: argument 'log_probs' expected a (T, N, C) or (T, C) tensor, got {log_probs.ndim}-D")
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    tt, n, c = lp.shape
    if not 0 <= blank < c:
        raise ArgumentError(f"{op}: argument 'blank' must be in [0, {c}), got {blank}")
    dev = lp.device
    in_len = _lengths(input_lengths, dev)
    tg_len = _lengths(target_lengths, dev)
    if in_len.shape[0] != n or tg_len.shape[0] != n:
        raise ArgumentError(f"{op}: input_lengths and target_lengths must have {n} entries (the batch size), got "
                         f"{in_len.shape[0]} and {tg_len.shape[0]}")
    tg = targets.to(dev, lucid.int64)
    if unbatched:  # targets (S): one padded row
        tg = tg.reshape(1, -1)
    if tg.ndim == 2:
        s_max = tg.shape[1]
    elif tg.ndim == 1:  # concatenated targets: cut into a padded (N, max length) block
        s_max = int(tg_len.max().item()) if n else 0
        starts = tg_len.cumsum(0) - tg_len
        pos = starts.reshape(-1, 1) + lucid.arange(max(s_max, 1), device=dev).reshape(1, -1)
        tg = tg[pos.clamp(0, max(tg.shape[0] - 1, 0))] if tg.shape[0] else lucid.zeros(n, max(s_max, 1),
                                                                                     dtype=lucid.int64, device=dev)
        s_max = max(s_max, 1)
    else:
        raise ArgumentError(f"{op}: argument 'targets' expected a 1-D or 2-D tensor, got {tg.ndim}-D")
    # extended labels: blank, l1, blank, l2, ..., blank
    blanks = lucid.full((n, s_max), blank, dtype=lucid.int64, device=dev)
    ext = lucid.cat([lucid.stack([blanks, tg], 2).reshape(n, 2 * s_max), blanks[:, :1]], 1)
    width = 2 * s_max + 1
    emit = lp.gather(2, ext.unsqueeze(0).expand(tt, n, width))  # (T, N, 2S+1)
    no_skip = lucid.zeros(n, 2, dtype=lucid.bool, device=dev)
    skip = lucid.cat([no_skip, (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])], 1)
    neg = lucid.full((), _CTC_NEG, dtype=lp.dtype, device=dev)
    first = lucid.arange(width, device=dev).reshape(1, -1) < 2
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


def _base_coords(n, align_corners, dtype, device):
    if n == 1:
        return lucid.zeros(1, dtype=dtype, device=device)
    c = lucid.arange(n, dtype=dtype, device=device) * (2.0 / (n - 1)) - 1.0
    return c if align_corners else c * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) or (N, D, H, W, 3) of theta applied to [-1, 1] base coordinates."""
    op = "affine_grid"
    align_corners = bool(align_corners) if align_corners is not None else False
    size = tuple(int(s) for s in size)
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
            raise ArgumentError(f"{op}: expected a batch of 2D affine matrices of shape Nx2x3 for size {size}, got "
                             f"{list(theta.shape)}")
        n, _, h, w = size
        xs = _base_coords(w, align_corners, theta.dtype, theta.device).reshape(1, w).expand(h, w)
        ys = _base_coords(h, align_corners, theta.dtype, theta.device).reshape(h, 1).expand(h, w)
        base = lucid.stack([xs, ys, lucid.ones_like(xs)], -1).reshape(1, h * w, 3)
        return lucid.matmul(base, theta.transpose(1, 2)).reshape(n, h, w, 2)
    if len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[1:]) != (3, 4):
            raise ArgumentError(f"{op}: expected a batch of 3D affine matrices of shape Nx3x4 for size {size}, got "
                             f"{list(theta.shape)}")
        n, _, d, h, w = size
        xs = _base_coords(w, align_corners, theta.dtype, theta.device).reshape(1, 1, w).expand(d, h, w)
        ys = _base_coords(h, align_corners, theta.dtype, theta.device).reshape(1, h, 1).expand(d, h, w)
        zs = _base_coords(d, align_corners, theta.dtype, theta.device).reshape(d, 1, 1).expand(d, h, w)
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


@autocast_policy(cpu="fp32", cuda="fp32")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples a 4-D input (N, C, H, W) at grid (N, Ho, Wo, 2) locations in [-1, 1] (x, y):
    gathers of the corner pixels weighted by their distances, so gradients reach input and grid."""
    op = "grid_sample"
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"{op}: mode '{mode}' is not supported (bilinear, nearest)")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ArgumentError(f"{op}: argument 'padding_mode' expected 'zeros', 'border' or 'reflection', got "
                         f"'{padding_mode}'")
    if input.ndim != 4:
        raise NotImplementedError(f"{op}: only 4-D input (N, C, H, W) is supported, got {input.ndim}-D")
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise ArgumentError(f"{op}: argument 'grid' expected shape (N={input.shape[0]}, H_out, W_out, 2), got "
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
