"""lucid.nn.functional: torch.nn.functional's names.

The ops themselves live in the op families (lucid._ops_nn, _ops_nn_extra and _ops_nn_spatial
(composites of existing ops), _ops_linalg, _ops_elementwise and the top-level lucid namespace)
and are re-exported here by name. Only functions that are Python composites in torch as well are
written here (multi_head_attention_forward).
"""
import math
import sys

import lucid
from lucid._missing import missing
from lucid import _ops_nn, _ops_nn_extra, _ops_nn_spatial, _ops_linalg, _ops_elementwise, _ops_movement

_F_NAMES = [
    # activations
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "celu", "gelu", "silu", "mish",
    "hardswish", "hardsigmoid", "hardtanh", "hardtanh_", "softplus", "softsign", "sigmoid", "tanh", "logsigmoid",
    "tanhshrink", "softshrink", "hardshrink", "threshold", "threshold_", "selu_", "celu_", "prelu", "rrelu", "rrelu_",
    "glu", "softmax", "log_softmax",
    "softmin", "gumbel_softmax",
    # linear / conv / pool
    "linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "conv_tbc",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "lp_pool2d", "unfold", "fold",
    "adaptive_avg_pool3d", "adaptive_max_pool3d", "lp_pool1d", "lp_pool3d", "max_unpool1d", "max_unpool2d",
    "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "interpolate", "upsample",
    "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid",
    # norms
    "batch_norm", "layer_norm", "group_norm", "rms_norm", "instance_norm", "local_response_norm", "normalize",
    # sparse / dropout / misc
    "embedding", "embedding_bag", "one_hot", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "feature_alpha_dropout",
    "pad", "cosine_similarity", "pairwise_distance", "pdist", "scaled_dot_product_attention",
    # losses
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "gaussian_nll_loss", "hinge_embedding_loss",
    "margin_ranking_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss",
    "ctc_loss",
]

_SOURCES = (_ops_nn, _ops_nn_extra, _ops_nn_spatial, _ops_linalg, _ops_elementwise, _ops_movement, lucid)


def _lookup(name):
    for src in _SOURCES:
        fn = getattr(src, name, None)
        if fn is not None:
            return fn
    return None


__all__ = []
for _name in _F_NAMES:
    _fn = _lookup(_name)
    if _fn is not None:
        globals()[_name] = _fn
        __all__.append(_name)


def __getattr__(name):
    # Late lookup, so ops bound after this module was imported are still found.
    fn = _lookup(name) if name in _F_NAMES else None
    if fn is not None:
        return fn
    raise missing("nn.functional", __name__, name, sys.modules[__name__])  # a torch name says it is not implemented


# ---------------------------------------------------------------- composites
# Used only when no op family provides the name. Each is a few ops, as torch's own Python or
# CompositeImplicitAutograd definition is; autograd flows through the ops they use.

def _softsign(input):
    return input / (input.abs() + 1)


def _tanhshrink(input):
    return input - lucid.tanh(input)


def _logsigmoid(input):
    return -softplus(-input)


def _mish(input, inplace=False):
    return input * lucid.tanh(softplus(input))


def _selu(input, inplace=False):
    return 1.0507009873554804934193349852946 * elu(input, 1.6732632423543772848170429916717)


def _celu(input, alpha=1.0, inplace=False):
    return elu(input / alpha, 1.0) * alpha


def _glu(input, dim=-1):
    a, b = input.chunk(2, dim)
    return a * lucid.sigmoid(b)


def _prelu(input, weight):
    w = weight
    if weight.numel() != 1 and input.dim() >= 2:
        w = weight.reshape((1, -1) + (1,) * (input.dim() - 2))
    return lucid.where(input >= 0, input, w * input)


def _one_hot(tensor, num_classes=-1):
    if num_classes < 0:
        num_classes = int(tensor.max().item()) + 1
    return (tensor.unsqueeze(-1) == lucid.arange(num_classes, device=tensor.device)).to(lucid.int64)


def _inplace_of(name):
    def fn(input, *args, **kwargs):
        return globals()[name](input, *args, inplace=True, **kwargs)
    fn.__name__ = name + "_"
    return fn


_COMPOSITES = {
    "softsign": _softsign, "tanhshrink": _tanhshrink, "logsigmoid": _logsigmoid, "mish": _mish, "selu": _selu,
    "celu": _celu, "glu": _glu, "prelu": _prelu, "one_hot": _one_hot,
}
for _name, _fn in _COMPOSITES.items():
    if _name not in globals():
        globals()[_name] = _fn
        __all__.append(_name)
for _name in ("relu", "leaky_relu", "elu", "hardtanh"):
    if _name + "_" not in globals() and _name in globals():
        globals()[_name + "_"] = _inplace_of(_name)
        __all__.append(_name + "_")


def _bilinear_composite(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o], with one matmul (ATen's bilinear is a
    composite of _trilinear as well); used when no op family provides `bilinear`."""
    out_f, in1, in2 = weight.shape
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    t = lucid.matmul(x1, weight.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    y = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (out_f,))


if "bilinear" not in globals():
    bilinear = _bilinear_composite
    __all__.append("bilinear")


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch.nn.functional.multi_head_attention_forward for (L, N, E) inputs (or unbatched (L, E))."""
    if bias_k is not None or bias_v is not None or add_zero_attn or static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: bias_k/bias_v/add_zero_attn/static_k/static_v "
                                  "are not supported")
    F = lucid.nn.functional
    is_batched = query.dim() == 3
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")

    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint.")

    # input projections
    if not use_separate_proj_weight:
        w_q, w_k, w_v = in_proj_weight.chunk(3)
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
    else:
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
    if not use_separate_proj_weight and query is key and key is value:
        # Self-attention: one GEMM for q, k and v (as PyTorch's packed in-projection), whose
        # backward is one GEMM for the input gradient and one for the packed weight's.
        q, k, v = F.linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)
    else:
        q = F.linear(query, w_q, b_q)
        k = F.linear(key, w_k, b_k)
        v = F.linear(value, w_v, b_v)

    # (L, N, E) -> (N, H, L, D)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1).reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(src_len, bsz * num_heads, head_dim).transpose(0, 1).reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(src_len, bsz * num_heads, head_dim).transpose(0, 1).reshape(bsz, num_heads, src_len, head_dim)

    # merge masks into one additive float mask of shape (N, H, L, S) / (L, S)
    mask = None
    if attn_mask is not None:
        if attn_mask.dtype == lucid.bool:
            m = lucid.zeros(attn_mask.shape, dtype=q.dtype,
                            device=attn_mask.device).masked_fill(attn_mask, float("-inf"))
        else:
            m = attn_mask.to(q.dtype)
        if m.dim() == 3:  # (N*H, L, S)
            m = m.reshape(bsz, num_heads, tgt_len, src_len)
        mask = m
    if key_padding_mask is not None:
        if key_padding_mask.dtype == lucid.bool:
            kpm = lucid.zeros(key_padding_mask.shape, dtype=q.dtype,
                              device=key_padding_mask.device).masked_fill(key_padding_mask, float("-inf"))
        else:
            kpm = key_padding_mask.to(q.dtype)
        kpm = kpm.reshape(bsz, 1, 1, src_len)
        mask = kpm if mask is None else mask + kpm

    if not training:
        dropout_p = 0.0
    if need_weights or _lookup("scaled_dot_product_attention") is None:
        scores = lucid.matmul(q * math.sqrt(1.0 / float(head_dim)), k.transpose(-2, -1))
        if mask is not None:
            scores = scores + mask
        attn = F.softmax(scores, dim=-1)
        if dropout_p > 0.0:
            attn = F.dropout(attn, p=dropout_p)
        out = lucid.matmul(attn, v)
        if not need_weights:
            attn = None
    else:
        attn = None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)

    # (N, H, L, D) -> (L, N, E)
    out = out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if attn is not None:
        if average_attn_weights:
            attn = attn.mean(dim=1)
        if not is_batched:
            attn = attn.squeeze(0)
    if not is_batched:
        out = out.squeeze(1)
    return out, attn


__all__.append("multi_head_attention_forward")
