"""GPT-2 (Radford et al., 2019) with Hugging Face transformers' GPT2LMHeadModel module tree, so its
state_dict keys are HF's (transformer.wte.weight, transformer.wpe.weight,
transformer.h.0.ln_1.weight, transformer.h.0.attn.c_attn.weight, transformer.h.0.mlp.c_fc.bias,
transformer.ln_f.bias, lm_head.weight) and an HF checkpoint saved as safetensors loads as it is.

HF's linear layers here are its Conv1D: weight (in, out), y = x @ W + b; `Conv1D` keeps that layout
so the files' tensors load without transposing. Pre-LayerNorm blocks of causal multi-head
self-attention (scaled_dot_product_attention, is_causal=True) and a GELU-tanh ("gelu_new") MLP.

The LM head is tied to the token embedding (one Parameter, as HF's tie_weights): state_dict lists
it under both keys, as torch's does, and a file that stores it once, under either key (HF's
save_pretrained keeps transformer.wte.weight, safetensors' save_model keeps lm_head.weight),
loads with strict=True. `n_layer`, `n_head`, `n_embd`, `vocab_size`, `n_positions` and the
dropout probabilities give reduced twins. Initialisation as HF's _init_weights.

The Hub's files load too (openai-community/gpt2's model.safetensors was saved from GPT2Model): a
checkpoint whose keys lack the `transformer.` prefix gets it, and the causal-mask buffers older
files store (`h.N.attn.bias`, `h.N.attn.masked_bias`: HF's _keys_to_ignore_on_load_unexpected) are
dropped; any other unexpected or missing key still raises under strict=True.
"""
import math
import re

import lucid
import lucid.nn as nn
import lucid.nn.functional as F

from lucid.models._registry import register_model


class Conv1D(nn.Module):
    """HF's Conv1D: a linear layer whose weight is stored (in_features, out_features)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(lucid.empty(nx, nf))
        self.bias = nn.Parameter(lucid.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        out = lucid.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight)
        return out.reshape(*x.shape[:-1], self.nf)


class GPT2Attention(nn.Module):
    def __init__(self, n_embd, n_head, attn_pdrop, resid_pdrop):
        super().__init__()
        self.n_head, self.head_dim = n_head, n_embd // n_head
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(attn_pdrop)  # applied inside scaled_dot_product_attention
        self.resid_dropout = nn.Dropout(resid_pdrop)

    def forward(self, x):
        b, t, c = x.shape
        # (B, T, 3C) -> three (B, H, T, D)
        q, k, v = self.c_attn(x).reshape(b, t, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_dropout.p if self.training else 0.0,
                                           is_causal=True)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).reshape(b, t, c)))


class GPT2MLP(nn.Module):
    def __init__(self, n_embd, n_inner, resid_pdrop):
        super().__init__()
        self.c_fc = Conv1D(n_inner, n_embd)
        self.c_proj = Conv1D(n_embd, n_inner)
        self.act = nn.GELU(approximate="tanh")
        self.dropout = nn.Dropout(resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, n_embd, n_head, n_inner, layer_norm_epsilon, attn_pdrop, resid_pdrop):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=layer_norm_epsilon)
        self.attn = GPT2Attention(n_embd, n_head, attn_pdrop, resid_pdrop)
        self.ln_2 = nn.LayerNorm(n_embd, eps=layer_norm_epsilon)
        self.mlp = GPT2MLP(n_embd, n_inner, resid_pdrop)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    """The transformer: token and position embeddings, n_layer blocks, a final LayerNorm."""

    def __init__(self, vocab_size, n_positions, n_embd, n_layer, n_head, n_inner, layer_norm_epsilon, embd_pdrop,
                 attn_pdrop, resid_pdrop):
        super().__init__()
        self.n_positions = n_positions
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.drop = nn.Dropout(embd_pdrop)
        self.h = nn.ModuleList(GPT2Block(n_embd, n_head, n_inner, layer_norm_epsilon, attn_pdrop, resid_pdrop)
                               for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd, eps=layer_norm_epsilon)

    def forward(self, input_ids):
        if input_ids.ndim != 2 or input_ids.dtype.is_floating_point:
            raise ValueError(f"GPT2Model: input_ids must be integer token ids of shape (batch, sequence), got "
                             f"{tuple(input_ids.shape)} of dtype {input_ids.dtype}")
        t = input_ids.shape[1]
        if t > self.n_positions:
            raise ValueError(f"GPT2Model: a sequence of {t} tokens is longer than n_positions ({self.n_positions})")
        x = self.drop(self.wte(input_ids) + self.wpe(lucid.arange(t, device=input_ids.device)))
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    # tied key -> the key that holds the shared Parameter (HF's _tied_weights_keys)
    _tied_weights_keys = {"lm_head.weight": "transformer.wte.weight"}

    def __init__(self, vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12, n_inner=None,
                 layer_norm_epsilon=1e-5, embd_pdrop=0.1, attn_pdrop=0.1, resid_pdrop=0.1, initializer_range=0.02):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"GPT2LMHeadModel: n_embd {n_embd} is not a multiple of n_head {n_head}")
        self.transformer = GPT2Model(vocab_size, n_positions, n_embd, n_layer, n_head, n_inner or 4 * n_embd,
                                     layer_norm_epsilon, embd_pdrop, attn_pdrop, resid_pdrop)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # GPT-2's residual projections scaled by 1/sqrt(2 n_layer)
                nn.init.normal_(p, std=initializer_range / math.sqrt(2 * n_layer))
            elif name.endswith(("wte.weight", "wpe.weight", "c_attn.weight", "c_fc.weight")):
                nn.init.normal_(p, std=initializer_range)
        self.tie_weights()

    def tie_weights(self):
        """lm_head.weight becomes transformer.wte.weight (one Parameter)."""
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, input_ids):
        """Logits (batch, sequence, vocab_size) of the next token at every position."""
        return self.lm_head(self.transformer(input_ids))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # A tied weight stored once (under either key) fills the other key; the children load from
        # this same dict afterwards, as they do after torch's load_state_dict pre-hooks.
        for tied, source in self._tied_weights_keys.items():
            tied, source = prefix + tied, prefix + source
            if tied in state_dict and source in state_dict:
                a, b = state_dict[tied], state_dict[source]
                if (isinstance(a, lucid.Tensor) and isinstance(b, lucid.Tensor) and a.shape == b.shape
                        and not bool(lucid.equal(a, b))):
                    error_msgs.append(f"{tied} is tied to {source}, but the checkpoint gives them different values")
            elif tied in state_dict:
                state_dict[source] = state_dict[tied]
            elif source in state_dict:
                state_dict[tied] = state_dict[source]
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        result = super().load_state_dict(_from_hub_layout(state_dict), strict, assign)
        self.tie_weights()  # assign=True puts a new Parameter under each key
        return result


_MASK_BUFFER = re.compile(r"transformer\.h\.\d+\.attn\.(bias|masked_bias)")


def _from_hub_layout(state_dict):
    """GPT2Model's keys (no `transformer.` prefix) as GPT2LMHeadModel's, without the mask buffers."""
    bare = not any(k.startswith("transformer.") or k == "lm_head.weight" for k in state_dict)
    out = {}
    for k, v in state_dict.items():
        name = "transformer." + k if bare else k
        if not _MASK_BUFFER.fullmatch(name):
            out[name] = v
    return out


@register_model
def gpt2(**cfg):
    """GPT-2 small: 12 layers, 12 heads, width 768, 50257 tokens, 1024 positions (HF's GPT2LMHeadModel)."""
    return GPT2LMHeadModel(**cfg)
