"""ViT-B/16 (Dosovitskiy et al., 2020) with torchvision's module tree, so its state_dict keys are
torchvision's (class_token, conv_proj.weight, encoder.pos_embedding,
encoder.layers.encoder_layer_0.self_attention.in_proj_weight, encoder.layers.encoder_layer_0.mlp.0.weight,
encoder.ln.weight, heads.head.weight, ...).

Patches by a strided conv, a class token, learned position embeddings, pre-LayerNorm encoder
blocks (eps 1e-6) of multi-head self-attention (nn.MultiheadAttention, batch_first) and a GELU
MLP, the class token's final state to a linear head. `image_size`, `patch_size`, `num_layers`,
`num_heads`, `hidden_dim`, `mlp_dim` give the reduced twins. Initialisation as torchvision's.
"""
import math
from collections import OrderedDict

import lucid
import lucid.nn as nn

from lucid.models._registry import register_model


class MLPBlock(nn.Sequential):
    """Linear, GELU, Dropout, Linear, Dropout: keys .0 and .3, as torchvision's MLPBlock."""

    def __init__(self, dim, mlp_dim, dropout):
        super().__init__(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(mlp_dim, dim),
                         nn.Dropout(dropout))
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.normal_(m.bias, std=1e-6)


class EncoderBlock(nn.Module):
    def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden_dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = nn.LayerNorm(hidden_dim, eps=1e-6)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, x):
        h = self.ln_1(x)
        h, _ = self.self_attention(h, h, h, need_weights=False)
        x = self.dropout(h) + x
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout):
        super().__init__()
        self.pos_embedding = nn.Parameter(lucid.empty(1, seq_length, hidden_dim))
        nn.init.normal_(self.pos_embedding, std=0.02)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.Sequential(OrderedDict(
            (f"encoder_layer_{i}", EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout))
            for i in range(num_layers)))
        self.ln = nn.LayerNorm(hidden_dim, eps=1e-6)

    def forward(self, x):
        return self.ln(self.layers(self.dropout(x + self.pos_embedding)))


class VisionTransformer(nn.Module):
    def __init__(self, image_size=224, patch_size=16, num_layers=12, num_heads=12, hidden_dim=768, mlp_dim=3072,
                 dropout=0.0, attention_dropout=0.0, num_classes=1000):
        super().__init__()
        if image_size % patch_size:
            raise ValueError(f"VisionTransformer: image_size {image_size} is not a multiple of patch_size {patch_size}")
        if hidden_dim % num_heads:
            raise ValueError(f"VisionTransformer: hidden_dim {hidden_dim} is not a multiple of num_heads {num_heads}")
        self.image_size, self.patch_size, self.hidden_dim = image_size, patch_size, hidden_dim
        self.conv_proj = nn.Conv2d(3, hidden_dim, patch_size, stride=patch_size)
        seq_length = (image_size // patch_size) ** 2 + 1
        self.class_token = nn.Parameter(lucid.zeros(1, 1, hidden_dim))
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout)
        self.heads = nn.Sequential(OrderedDict([("head", nn.Linear(hidden_dim, num_classes))]))
        fan_in = 3 * patch_size * patch_size
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.conv_proj.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def forward(self, x):
        n, _, h, w = x.shape
        if h != self.image_size or w != self.image_size:
            raise ValueError(f"VisionTransformer: expected {self.image_size}x{self.image_size} images, got {h}x{w}")
        x = self.conv_proj(x).reshape(n, self.hidden_dim, -1).permute(0, 2, 1)
        x = lucid.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


@register_model
def vit_b_16(**cfg):
    """ViT-B/16: 12 layers, 12 heads, width 768, MLP 3072, 16x16 patches of 224x224 images (torchvision's)."""
    return VisionTransformer(**cfg)
