"""Python wrappers of the nn and loss ops (owned by the nn family), with torch.nn.functional
names and signatures. Argument normalisation only; the work is done by the C++ ops (_C._nn_*).

Random numbers: dropout and the dropout of scaled_dot_product_attention take their keep-mask as
a tensor input of the op, drawn by _keep_mask: with lucid.rand (the engine's Philox generator)
when it exists, otherwise with a NumPy Generator seeded from lucid.initial_seed() (or 0). Once
lucid.rand is merged, the NumPy fallback line (and _tmp_rng) can simply be deleted.
"""
import math
import numbers

import numpy as np

import lucid
from lucid import _C

__all__ = ["softmax", "log_softmax", "softmin", "dropout", "instance_norm", "kl_div", "batch_norm", "layer_norm", "group_norm", "rms_norm", "embedding",
           "scaled_dot_product_attention", "interpolate", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"]


# ---- random keep-masks (temporary source) -------------------------------------------------
_tmp_state = {"seed": None, "gen": None}


def _tmp_rng():
    seed_fn = getattr(lucid, "initial_seed", None)
    seed = int(seed_fn()) if seed_fn is not None else 0
    if _tmp_state["gen"] is None or _tmp_state["seed"] != seed:
        _tmp_state["seed"], _tmp_state["gen"] = seed, np.random.default_rng(seed)
    return _tmp_state["gen"]


def _keep_mask(shape, p):
    """Bool tensor of `shape`, True with probability 1 - p. Uses the engine generator
    (lucid.rand, with lucid.ge) when both exist, else the temporary NumPy source below."""
    shape = tuple(int(s) for s in shape)
    rand, ge = getattr(lucid, "rand", None), getattr(lucid, "ge", None)
    if rand is not None and ge is not None:
        return ge(rand(shape), p)
    return lucid.tensor(_tmp_rng().random(shape) >= p)  # temporary: delete once lucid.rand exists


# ---- helpers ------------------------------------------------------------------------------
def _reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


# ---- activations --------------------------------------------------------------------------
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return _C._nn_softmax(input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return _C._nn_log_softmax(input, dim)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return _C._nn_softmax(-input, dim)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements with probability p and scales the rest by 1/(1-p)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    mask = _keep_mask(input.shape, p)
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
    """Per-sample, per-channel normalisation: group_norm with one group per channel."""
    if not use_input_stats or running_mean is not None or running_var is not None:
        raise NotImplementedError("instance_norm: running statistics (track_running_stats) are not supported")
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected input with 3 or more dims (N, C, *), got {input.ndim}-D")
    return _C._nn_group_norm(input, int(input.shape[1]), weight, bias, float(eps))


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
        dmask = _keep_mask(tuple(batch) + (query.shape[-2], key.shape[-2]), dropout_p)
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
