"""BERT-base (Devlin et al., 2018) encoder with Hugging Face transformers' BertModel module tree, so
its state_dict keys are HF's (embeddings.word_embeddings.weight, embeddings.LayerNorm.weight,
encoder.layer.0.attention.self.query.weight, encoder.layer.0.attention.output.LayerNorm.bias,
encoder.layer.0.intermediate.dense.weight, encoder.layer.0.output.dense.bias, pooler.dense.weight)
and an HF BertModel checkpoint saved as safetensors loads as it is.

Word + position + token-type embeddings and a LayerNorm (eps 1e-12), post-LayerNorm encoder
layers of multi-head self-attention (scaled_dot_product_attention with HF's extended attention
mask: (1 - mask) * the dtype's lowest value, added to the scores of padded keys) and an exact
(erf) GELU MLP, and the pooler (dense + tanh of the first token). Position ids are
arange(sequence) and token types default to 0, as HF's non-persistent buffers give (not in the
state_dict). `vocab_size`, `hidden_size`, `num_hidden_layers`, `num_attention_heads`,
`intermediate_size`, `max_position_embeddings` and the dropout probabilities give reduced twins.
Initialisation as HF's _init_weights.

The Hub's files load too (google-bert/bert-base-uncased was saved from BertForPreTraining), as HF's
BertModel.from_pretrained takes them: the `bert.` prefix is removed, the pre-training heads
(`cls.*`) and the `embeddings.position_ids` buffer are dropped, and the old LayerNorm names
`gamma`/`beta` read as `weight`/`bias`; any other unexpected or missing key still raises under
strict=True.
"""
import re

import lucid
import lucid.nn as nn
import lucid.nn.functional as F

from lucid.models._registry import register_model


class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size, hidden_size, max_position_embeddings, type_vocab_size, pad_token_id,
                 layer_norm_eps, hidden_dropout_prob):
        super().__init__()
        self.max_position_embeddings = max_position_embeddings
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size, padding_idx=pad_token_id)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):
        s = input_ids.shape[1]
        if s > self.max_position_embeddings:
            raise ValueError(f"BertModel: a sequence of {s} tokens is longer than max_position_embeddings "
                             f"({self.max_position_embeddings})")
        x = (self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
             + self.position_embeddings(lucid.arange(s, device=input_ids.device)))
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, attention_probs_dropout_prob):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(attention_probs_dropout_prob)  # applied inside scaled_dot_product_attention

    def forward(self, x, extended_mask):
        b, s, c = x.shape

        def heads(t):  # (B, S, C) -> (B, H, S, D)
            return t.reshape(b, s, self.num_attention_heads, self.attention_head_size).transpose(1, 2)
        y = F.scaled_dot_product_attention(heads(self.query(x)), heads(self.key(x)), heads(self.value(x)),
                                           attn_mask=extended_mask,
                                           dropout_p=self.dropout.p if self.training else 0.0)
        return y.transpose(1, 2).reshape(b, s, c)


class BertSelfOutput(nn.Module):
    """dense, dropout, then LayerNorm of the residual sum (also BertOutput's shape, from intermediate)."""

    def __init__(self, in_features, hidden_size, layer_norm_eps, hidden_dropout_prob):
        super().__init__()
        self.dense = nn.Linear(in_features, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(hidden_dropout_prob)

    def forward(self, h, residual):
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)


class BertAttention(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, layer_norm_eps, hidden_dropout_prob,
                 attention_probs_dropout_prob):
        super().__init__()
        self.self = BertSelfAttention(hidden_size, num_attention_heads, attention_probs_dropout_prob)
        self.output = BertSelfOutput(hidden_size, hidden_size, layer_norm_eps, hidden_dropout_prob)

    def forward(self, x, extended_mask):
        return self.output(self.self(x, extended_mask), x)


class BertIntermediate(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, intermediate_size)
        self.intermediate_act_fn = nn.GELU()  # HF's "gelu": the exact, erf form

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, intermediate_size, layer_norm_eps, hidden_dropout_prob,
                 attention_probs_dropout_prob):
        super().__init__()
        self.attention = BertAttention(hidden_size, num_attention_heads, layer_norm_eps, hidden_dropout_prob,
                                       attention_probs_dropout_prob)
        self.intermediate = BertIntermediate(hidden_size, intermediate_size)
        self.output = BertSelfOutput(intermediate_size, hidden_size, layer_norm_eps, hidden_dropout_prob)

    def forward(self, x, extended_mask):
        a = self.attention(x, extended_mask)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, num_hidden_layers, **layer_cfg):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(**layer_cfg) for _ in range(num_hidden_layers))

    def forward(self, x, extended_mask):
        for layer in self.layer:
            x = layer(x, extended_mask)
        return x


class BertPooler(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.Tanh()

    def forward(self, x):
        return self.activation(self.dense(x[:, 0]))


class BertModel(nn.Module):
    def __init__(self, vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12,
                 pad_token_id=0, add_pooling_layer=True):
        super().__init__()
        if hidden_size % num_attention_heads:
            raise ValueError(f"BertModel: hidden_size {hidden_size} is not a multiple of num_attention_heads "
                             f"{num_attention_heads}")
        self.embeddings = BertEmbeddings(vocab_size, hidden_size, max_position_embeddings, type_vocab_size,
                                         pad_token_id, layer_norm_eps, hidden_dropout_prob)
        self.encoder = BertEncoder(num_hidden_layers, hidden_size=hidden_size, num_attention_heads=num_attention_heads,
                                   intermediate_size=intermediate_size, layer_norm_eps=layer_norm_eps,
                                   hidden_dropout_prob=hidden_dropout_prob,
                                   attention_probs_dropout_prob=attention_probs_dropout_prob)
        self.pooler = BertPooler(hidden_size) if add_pooling_layer else None
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=initializer_range)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)
        with lucid.no_grad():
            self.embeddings.word_embeddings.weight[pad_token_id].fill_(0)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        """(last_hidden_state (batch, sequence, hidden), pooler_output (batch, hidden); None without
        the pooling layer). attention_mask: 1 for tokens to attend to, 0 for padding."""
        if input_ids.ndim != 2 or input_ids.dtype.is_floating_point:
            raise ValueError(f"BertModel: input_ids must be integer token ids of shape (batch, sequence), got "
                             f"{tuple(input_ids.shape)} of dtype {input_ids.dtype}")
        b, s = input_ids.shape
        if token_type_ids is None:
            token_type_ids = lucid.zeros(b, s, dtype=lucid.int64, device=input_ids.device)
        x = self.embeddings(input_ids, token_type_ids)
        extended_mask = None
        if attention_mask is not None:
            if tuple(attention_mask.shape) != (b, s):
                raise ValueError(f"BertModel: attention_mask must have the shape of input_ids {(b, s)}, got "
                                 f"{tuple(attention_mask.shape)}")
            # HF's get_extended_attention_mask: (B, 1, 1, S), 0 where attended, the lowest value where padded
            keep = attention_mask.to(x.dtype).reshape(b, 1, 1, s)
            extended_mask = (1.0 - keep) * lucid.finfo(x.dtype).min
        h = self.encoder(x, extended_mask)
        return h, (self.pooler(h) if self.pooler is not None else None)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        return super().load_state_dict(_from_hub_layout(state_dict), strict, assign)


_OLD_NORM_NAME = re.compile(r"(LayerNorm)\.(gamma|beta)$")


def _from_hub_layout(state_dict):
    """BertForPreTraining's keys (`bert.` prefix, `cls.*` heads, gamma/beta) as BertModel's."""
    prefixed = any(k.startswith("bert.") for k in state_dict)
    out = {}
    for k, v in state_dict.items():
        if prefixed:
            if not k.startswith("bert."):
                if k.startswith("cls."):
                    continue  # the pre-training heads, which BertModel does not have
                out[k] = v  # an unexpected key: load_state_dict names it
                continue
            k = k[len("bert."):]
        if k == "embeddings.position_ids":
            continue
        out[_OLD_NORM_NAME.sub(lambda m: m.group(1) + (".weight" if m.group(2) == "gamma" else ".bias"), k)] = v
    return out


@register_model
def bert_base(**cfg):
    """BERT-base encoder: 12 layers, 12 heads, width 768, MLP 3072, 30522 tokens (HF's BertModel)."""
    return BertModel(**cfg)
