"""Python wrappers of the nn and loss ops (owned by the nn family), with torch.nn.functional
names and signatures. Argument normalisation only; the work is done by the C++ ops (_C._nn_*).

Random numbers: dropout (and its channel / alpha variants, and the dropout of
scaled_dot_product_attention) take their keep-mask as a tensor input of the op, drawn by
_keep_mask with lucid.rand, so the random draw is its own (traceable) op.
"""
from lucid._autocast_policy import autocast_policy
import math
import numbers

import numpy as np

import lucid
from lucid import _C

__all__ = ["softmax", "log_softmax", "softmin", "dropout", "instance_norm", "kl_div", "batch_norm", "layer_norm", "group_norm", "rms_norm", "embedding",
           "scaled_dot_product_attention", "interpolate", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"]


# ---- random keep-masks --------------------------------------------------------------------
def _keep_mask(shape, p, device):
    """Bool tensor of `shape` on `device`, True with probability 1 - p, from the engine's Philox
    generator (lucid.rand; reproducible under lucid.manual_seed, the same mask on every device)."""
    return lucid.rand(tuple(int(s) for s in shape), device=device) >= p


# ---- helpers ------------------------------------------------------------------------------
def _reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _softmax_args(input, dim, dtype):
    """torch's legacy default dim (0 for 0-, 1- and 3-d inputs, else 1) and the optional cast."""
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return (input if dtype is None else input.to(dtype)), dim


# ---- activations --------------------------------------------------------------------------
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C._nn_softmax(*_softmax_args(input, dim, dtype))


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C._nn_log_softmax(*_softmax_args(input, dim, dtype))


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    x, dim = _softmax_args(input, dim, dtype)
    return _C._nn_softmax(-x, dim)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements with probability p and scales the rest by 1/(1-p)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    mask = _keep_mask(input.shape, p, input.device)
    if inplace:
        return _C._nn_dropout_(input, mask, float(p))
    return _C._nn_dropout(input, mask, float(p))


# ---- normalisation ------------------------------------------------------------------------
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    if momentum is None:
        raise TypeError("batch_norm: argument 'momentum' must be float, not None (modules with momentum=None "
                        "pass their cumulative-average factor)")
    return _C._nn_batch_norm(input, running_mean, running_var, weight, bias, bool(training), float(momentum), float(eps))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    return _C._nn_layer_norm(input, tuple(normalized_shape), weight, bias, float(eps))


_FINFO_EPS = {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07,
              "float64": 2.220446049250313e-16}


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    if eps is None:
        eps = _FINFO_EPS.get(input.dtype.name, 1.1920928955078125e-07)
    return _C._nn_rms_norm(input, tuple(normalized_shape), weight, float(eps))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    return _C._nn_group_norm(input, int(num_groups), weight, bias, float(eps))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-05):
    """Per-sample, per-channel normalisation: group_norm with one group per channel; with running
    statistics, batch_norm over the (1, N*C, *) view with the statistics repeated per sample and
    averaged back, as torch does."""
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected input with 3 or more dims (N, C, *), got {input.ndim}-D")
    if use_input_stats and running_mean is None and running_var is None:
        return _C._nn_group_norm(input, int(input.shape[1]), weight, bias, float(eps))
    if running_mean is None or running_var is None:
        raise ValueError("instance_norm: expected running_mean and running_var to be both defined when "
                         "use_input_stats is False")
    b, c = int(input.shape[0]), int(input.shape[1])
    rm, rv = running_mean.repeat(b), running_var.repeat(b)
    out = _C._nn_batch_norm(input.reshape(1, b * c, *input.shape[2:]), rm, rv,
                            None if weight is None else weight.repeat(b), None if bias is None else bias.repeat(b),
                            bool(use_input_stats), float(momentum), float(eps))
    if use_input_stats:
        with lucid.no_grad():
            running_mean.copy_(rm.reshape(b, c).mean(0))
            running_var.copy_(rv.reshape(b, c).mean(0))
    return out.reshape(tuple(input.shape))


# ---- embedding, attention, resampling -----------------------------------------------------
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not supported")
    num = weight.shape[0]
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx >= 0:
        if padding_idx >= num:
            raise ValueError(f"embedding: padding_idx {padding_idx} must be within num_embeddings ({num})")
    else:
        if padding_idx < -num:
            raise ValueError(f"embedding: padding_idx {padding_idx} must be within num_embeddings ({num})")
        padding_idx += num
    return _C._nn_embedding(weight, input, int(padding_idx))


def _repeat_heads(t, rep):
    """(..., H, S, E) -> (..., H * rep, S, E), each head repeated rep times (repeat_interleave)."""
    s = tuple(t.shape)
    lead, h, tail = s[:-3], s[-3], s[-2:]
    return t.reshape(*lead, h, 1, *tail).expand(*lead, h, rep, *tail).reshape(*lead, h * rep, *tail)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3:
        hq, hk = query.shape[-3], key.shape[-3]
        if hk != hq:
            if hq % hk or value.shape[-3] != hk:
                raise ValueError(f"scaled_dot_product_attention: enable_gqa needs the query heads ({hq}) to be a multiple "
                                 f"of the key/value heads ({hk}, {value.shape[-3]})")
            key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hk)
    dmask = None
    if dropout_p > 0.0:
        batch = np.broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2]), tuple(value.shape[:-2]))
        dmask = _keep_mask(tuple(batch) + (query.shape[-2], key.shape[-2]), dropout_p, query.device)
    return _C._nn_sdpa(query, key, value, attn_mask, dmask, float(dropout_p), bool(is_causal), scale)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    if input.ndim == 3 and mode in ("nearest", "nearest-exact", "linear"):
        # (N, C, L) as (N, C, 1, L); 'linear' is bilinear along W.
        size3 = None if size is None else (1, size if isinstance(size, numbers.Integral) else tuple(size)[0])
        sf3 = None if scale_factor is None else (
            1.0, scale_factor if isinstance(scale_factor, numbers.Number) else tuple(scale_factor)[0])
        out = interpolate(input.reshape(input.shape[0], input.shape[1], 1, input.shape[2]), size3, sf3,
                          "bilinear" if mode == "linear" else mode, align_corners, recompute_scale_factor, antialias)
        return out.reshape(out.shape[0], out.shape[1], out.shape[3])
    if input.ndim != 4:
        raise NotImplementedError(f"interpolate: {input.ndim}-D input is not supported with mode '{mode}' "
                                  "(4-D (N, C, H, W), or 3-D with nearest/linear)")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if mode in ("nearest", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
        align_corners = False
    elif mode in ("bilinear", "bicubic"):
        align_corners = bool(align_corners) if align_corners is not None else False
    else:
        raise NotImplementedError(f"interpolate: mode '{mode}' is not supported "
                                  "(nearest, nearest-exact, bilinear, bicubic; linear for 3-D)")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    scales = (-1.0, -1.0)
    if size is not None:
        size = (size, size) if isinstance(size, numbers.Integral) else tuple(size)
        if len(size) != 2:
            raise ValueError(f"interpolate: size must have 2 elements for 4-D input, got {size}")
    elif scale_factor is not None:
        sf = (scale_factor, scale_factor) if isinstance(scale_factor, numbers.Number) else tuple(scale_factor)
        if len(sf) != 2:
            raise ValueError(f"interpolate: scale_factor must have 2 elements for 4-D input, got {sf}")
        size = tuple(int(math.floor(float(input.shape[i + 2]) * float(sf[i]))) for i in range(2))
        if not recompute_scale_factor:
            scales = (float(sf[0]), float(sf[1]))
    else:
        raise ValueError("either size or scale_factor should be defined")
    return _C._nn_interpolate(input, int(size[0]), int(size[1]), mode, align_corners, scales[0], scales[1])


# ---- losses -------------------------------------------------------------------------------
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _C._nn_mse_loss(input, target, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _C._nn_l1_loss(input, target, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    return _C._nn_smooth_l1_loss(input, target, _reduction(size_average, reduce, reduction), float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0):
    return _C._nn_huber_loss(input, target, reduction, float(delta))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction = _reduction(size_average, reduce, reduction)
    if reduction == "batchmean":
        out = _C._nn_kl_div(input, target, "sum", bool(log_target))
        return out / input.shape[0] if input.ndim > 0 else out
    return _C._nn_kl_div(input, target, reduction, bool(log_target))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    return _C._nn_cross_entropy(input, target, weight, int(ignore_index), _reduction(size_average, reduce, reduction),
                                float(label_smoothing))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return _C._nn_nll_loss(input, target, weight, int(ignore_index), _reduction(size_average, reduce, reduction))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    return _C._nn_binary_cross_entropy(input, target, weight, _reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    return _C._nn_binary_cross_entropy_with_logits(input, target, weight, pos_weight,
                                                   _reduction(size_average, reduce, reduction))


# ---- composites (Python, like their torch counterparts) over ops of every family -----------
__all__ += ["upsample", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "gumbel_softmax", "normalize",
            "cosine_similarity", "pairwise_distance", "poisson_nll_loss", "gaussian_nll_loss", "hinge_embedding_loss",
            "margin_ranking_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "cosine_embedding_loss",
            "triplet_margin_loss", "multi_margin_loss"]


def _reduce(loss, reduction, op):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{op}: argument 'reduction' expected 'none', 'mean' or 'sum', got '{reduction}'")


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def _channel_dropout(input, p, training, inplace, batched_ndim, op):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim not in (batched_ndim - 1, batched_ndim):
        raise ValueError(f"{op}: expected {batched_ndim - 1}-D or {batched_ndim}-D input, got {input.ndim}-D")
    if not training or p == 0.0:
        return input
    lead = 2 if input.ndim == batched_ndim else 1  # (N, C) or unbatched (C)
    shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    mask = _keep_mask(shape, p, input.device).expand(*input.shape)
    if inplace:
        return _C._nn_dropout_(input, mask, float(p))
    return _C._nn_dropout(input, mask, float(p))


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 4, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 5, "dropout3d")


def _alpha_dropout(input, p, training, mask_shape, name):
    """SELU-preserving dropout over a keep mask of `mask_shape` (broadcast over input): dropped
    units get SELU's negative saturation value, then an affine correction keeps mean and
    variance. alpha_dropout draws per element, feature_alpha_dropout per (sample, channel)."""
    if p < 0.0 or p > 1.0:
        raise _C.ArgumentError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    alpha_p = -1.7580993408473766
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    keep = _keep_mask(mask_shape, p, input.device).to(input.dtype)
    return (input * keep + alpha_p * (1.0 - keep)) * a + (-a * alpha_p * p)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalising mean and variance."""
    return _alpha_dropout(input, p, training, tuple(input.shape), "alpha_dropout")


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    u = lucid.rand(*logits.shape, dtype=logits.dtype, device=logits.device)
    gumbels = -(-(u.clamp_min(1e-20)).log()).clamp_min(1e-20).log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    y_hard = (y_soft == y_soft.amax(dim, keepdim=True)).to(y_soft.dtype)
    return y_hard - y_soft.detach() + y_soft


def _pnorm(x, p, dim, keepdim):
    if p == 2:
        return (x * x).sum(dim, keepdim=keepdim).sqrt()
    if p == 1:
        return x.abs().sum(dim, keepdim=keepdim)
    if p == math.inf:
        return x.abs().amax(dim, keepdim=keepdim)
    return (x.abs() ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported")
    return input / _pnorm(input, p, dim, True).clamp_min(eps).expand_as(input)


@autocast_policy(cuda="fp32")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    n1 = _pnorm(x1, 2, dim, True).clamp_min(eps)
    n2 = _pnorm(x2, 2, dim, True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    return _pnorm(x1 - x2 + eps, p, -1, keepdim)


@autocast_policy(cpu="fp32", cuda="fp32")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-08, reduce=None,
                     reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe_t = lucid.where(target > 1, target, lucid.ones_like(target))
        stirling = safe_t * safe_t.log() - safe_t + 0.5 * (2 * math.pi * safe_t).log()
        loss = loss + lucid.where(target > 1, stirling, lucid.zeros_like(stirling))
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-06, reduction="mean"):
    if isinstance(var, (int, float)):
        var = lucid.full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError(f"gaussian_nll_loss: var of shape {tuple(var.shape)} is incompatible with input "
                             f"{tuple(input.shape)}")
    if bool((var < 0).any()):
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    vd = var.detach()
    v = var + (vd.clamp_min(eps) - vd)  # clamped value, gradient of var (as PyTorch's no_grad clamp)
    d = input - target
    loss = 0.5 * (v.log() + d * d / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


@autocast_policy(cpu="fp32", cuda="fp32")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    zeros = lucid.zeros_like(input)
    margin_clamp = (margin - input).clamp_min(0.0)
    loss = lucid.where(target != 1, margin_clamp, zeros) + lucid.where(target != -1, input, zeros)
    return _reduce(loss, reduction, "hinge_embedding_loss")


@autocast_policy(cpu="fp32", cuda="fp32")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0.0), reduction, "margin_ranking_loss")


@autocast_policy(cpu="fp32", cuda="fp32")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce(lucid.softplus(-target * input), reduction, "soft_margin_loss")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    # -(t * logsigmoid(x) + (1 - t) * logsigmoid(-x)), logsigmoid(x) = -softplus(-x)
    loss = target * lucid.softplus(-input) + (1 - target) * lucid.softplus(input)
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]
    return _reduce(loss, reduction, "multilabel_soft_margin_loss")


@autocast_policy(cpu="fp32", cuda="fp32")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    dim = input1.ndim - 1
    eps = 1e-12
    prod = (input1 * input2).sum(dim)
    mag = ((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)
    cos = prod / mag.sqrt()
    zeros = lucid.zeros_like(cos)
    loss = lucid.where(target == 1, 1 - cos, zeros) + lucid.where(target == -1, (cos - margin).clamp_min(0.0), zeros)
    return _reduce(loss, reduction, "cosine_embedding_loss")


@autocast_policy(cpu="fp32", cuda="fp32")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = lucid.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0.0), reduction, "triplet_margin_loss")


@autocast_policy(cpu="fp32", cuda="fp32")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("multi_margin_loss: only p == 1 and p == 2 are supported")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    t = target.reshape(-1, 1)
    c = x.shape[1]
    xy = x.gather(1, t)  # raises IndexError for a target outside [0, c), eagerly and compiled
    z = (margin - xy + x).clamp_min(0.0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.gather(0, t.reshape(-1)).reshape(-1, 1)
    not_target = lucid.arange(c, device=t.device).reshape(1, c) != t
    loss = (z * not_target.to(z.dtype)).sum(1) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction, "multi_margin_loss")
