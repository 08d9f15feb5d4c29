"""JAX twins of tests/python/compile_models.py's models (eval mode), for bench/compile_forward.py's
jax.jit column. Each twin is a pure function `f(params, *inputs)` over the torch model's state_dict
(as jnp arrays, same keys; Linear weights transposed, see params_from_torch), so it runs the same
weights; the benchmark checks every twin's output against the torch model before timing it.
Benchmark-only: the lucid package never imports jax.
"""
import math

import jax
import jax.numpy as jnp
import torch
from jax import lax

import compile_models as cmods


def params_from_torch(torch_model):
    """The torch state_dict as jnp arrays, except that each nn.Linear weight is stored transposed as
    `<prefix>.kernel` (in, out), the layout JAX code (flax) uses; measured faster under jax.jit than
    contracting the torch layout."""
    p = {k: jnp.asarray(v.detach().cpu().numpy()) for k, v in torch_model.state_dict().items()}
    for name, m in torch_model.named_modules():
        if isinstance(m, torch.nn.Linear):
            p[f"{name}.kernel"] = p.pop(f"{name}.weight").T
    return p


def _dense(x, w_out_in):
    """x @ w.T for a weight in torch's (out, in) layout, contracting directly (no transposed copy)."""
    return lax.dot_general(x, w_out_in, (((x.ndim - 1,), (1,)), ((), ())))


def _linear(p, prefix, x):
    y = x @ p[prefix + ".kernel"]
    b = p.get(prefix + ".bias")
    return y if b is None else y + b


def _conv(p, prefix, x, stride=1, padding=0, groups=1):
    y = lax.conv_general_dilated(x, p[prefix + ".weight"], (stride, stride), [(padding, padding)] * 2,
                                 dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=groups)
    b = p.get(prefix + ".bias")
    return y if b is None else y + b[None, :, None, None]


def _batchnorm_eval(p, prefix, x, eps=1e-5):
    scale = p[prefix + ".weight"] * lax.rsqrt(p[prefix + ".running_var"] + eps)
    shift = p[prefix + ".bias"] - p[prefix + ".running_mean"] * scale
    return x * scale[None, :, None, None] + shift[None, :, None, None]


def _layernorm(p, prefix, x, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * p[prefix + ".weight"] + p[prefix + ".bias"]


def _maxpool2(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def _gelu(x):
    return jax.nn.gelu(x, approximate=False)


def _attention(q, k, v, causal_mask):
    """q, k, v: (N, H, L, D); causal_mask: (L, L) additive."""
    scores = q @ jnp.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]) + causal_mask
    return jax.nn.softmax(scores, axis=-1) @ v


def _heads(x):
    n, length, e = x.shape
    return x.reshape(n, length, cmods.N_HEAD, e // cmods.N_HEAD).transpose(0, 2, 1, 3)


def _merge_heads(x):
    n, h, length, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(n, length, h * d)


def _causal(length):
    return jnp.triu(jnp.full((length, length), -jnp.inf, dtype=jnp.float32), 1)


def mlp(p, x):
    return _linear(p, "2", jax.nn.relu(_linear(p, "0", x)))


def lenet5(p, x):
    x = _maxpool2(jax.nn.relu(_conv(p, "0", x)))
    x = _maxpool2(jax.nn.relu(_conv(p, "3", x)))
    x = x.reshape(x.shape[0], -1)
    x = jax.nn.relu(_linear(p, "7", x))
    x = jax.nn.relu(_linear(p, "9", x))
    return _linear(p, "11", x)


def resnet(p, x):
    def block(prefix, x, stride, projection):
        out = jax.nn.relu(_batchnorm_eval(p, f"{prefix}.bn1", _conv(p, f"{prefix}.conv1", x, stride, 1)))
        out = _batchnorm_eval(p, f"{prefix}.bn2", _conv(p, f"{prefix}.conv2", out, 1, 1))
        short = _batchnorm_eval(p, f"{prefix}.shortcut.1", _conv(p, f"{prefix}.shortcut.0", x, stride)) \
            if projection else x
        return jax.nn.relu(out + short)

    x = jax.nn.relu(_batchnorm_eval(p, "1", _conv(p, "0", x, 1, 1)))
    x = block("3", x, 1, False)
    x = block("4", x, 2, True)
    x = block("5", x, 1, False)
    return _linear(p, "8", x.mean((2, 3)))


def mobilenet_ds(p, x):
    def ds(prefix, x, stride):
        x = jax.nn.relu6(_batchnorm_eval(p, f"{prefix}.1", _conv(p, f"{prefix}.0", x, stride, 1, x.shape[1])))
        return jax.nn.relu6(_batchnorm_eval(p, f"{prefix}.4", _conv(p, f"{prefix}.3", x)))

    x = jax.nn.relu6(_batchnorm_eval(p, "1", _conv(p, "0", x, 1, 1)))
    x = ds("4", ds("3", x, 1), 2)
    return _linear(p, "7", x.mean((2, 3)))


def transformer_encoder(p, x):
    """Post-norm TransformerEncoderLayer (GELU, causal mask) + linear head."""
    qkv = _dense(x, p["layer.self_attn.in_proj_weight"]) + p["layer.self_attn.in_proj_bias"]
    q, k, v = jnp.split(qkv, 3, axis=-1)
    sa = _merge_heads(_attention(_heads(q), _heads(k), _heads(v), _causal(x.shape[1])))
    x = _layernorm(p, "layer.norm1", x + _linear(p, "layer.self_attn.out_proj", sa))
    ff = _linear(p, "layer.linear2", _gelu(_linear(p, "layer.linear1", x)))
    x = _layernorm(p, "layer.norm2", x + ff)
    return _linear(p, "head", x)


def lstm(p, x):
    """One LSTM layer (torch gate order i, f, g, o) over the time axis with lax.scan, head on the last h."""
    n = x.shape[0]
    hidden = p["lstm.weight_hh_l0"].shape[1]
    x_proj = _dense(x, p["lstm.weight_ih_l0"]) + p["lstm.bias_ih_l0"] + p["lstm.bias_hh_l0"]

    def step(carry, xp):
        h, c = carry
        i, f, g, o = jnp.split(xp + _dense(h, p["lstm.weight_hh_l0"]), 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), None

    zeros = jnp.zeros((n, hidden), x.dtype)
    (h, _), _ = lax.scan(step, (zeros, zeros), jnp.swapaxes(x_proj, 0, 1))
    return _linear(p, "head", h)


def gpt_decoder(p, idx):
    """Token + position embedding, one pre-norm causal block, final LayerNorm, tied LM head."""
    t = idx.shape[1]
    x = p["wte.weight"][idx] + p["wpe.weight"][jnp.arange(t)]
    h = _layernorm(p, "block.ln_1", x)
    q, k, v = jnp.split(_linear(p, "block.attn.c_attn", h), 3, axis=-1)
    x = x + _linear(p, "block.attn.c_proj", _merge_heads(_attention(_heads(q), _heads(k), _heads(v), _causal(t))))
    h = _layernorm(p, "block.ln_2", x)
    x = x + _linear(p, "block.mlp.c_proj", _gelu(_linear(p, "block.mlp.c_fc", h)))
    return _linear(p, "lm_head", _layernorm(p, "ln_f", x))  # lm_head.kernel is wte.weight.T (tied)


TWINS = {"mlp": mlp, "lenet5": lenet5, "resnet": resnet, "mobilenet_ds": mobilenet_ds,
         "transformer_encoder": transformer_encoder, "lstm": lstm, "gpt_decoder": gpt_decoder}
