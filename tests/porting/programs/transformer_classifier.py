"""A Transformer encoder classifier over token sequences: nn.Embedding plus a learned positional
embedding, nn.TransformerEncoder of two TransformerEncoderLayers (batch_first, GELU, norm_first),
a key padding mask for the padded tail, masked mean pooling, AdamW with a LambdaLR warmup,
clip_grad_norm_, and the predictions at the end. Dropout is 0 (deterministic mode:
tests/porting)."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

COMPILE = None  # set by the harness: None, "compile" or "fused"
VOCAB, MAXLEN, PAD = 20, 12, 0


class Classifier(nn.Module):
    def __init__(self, d_model=16, nhead=2, num_layers=2, num_classes=3):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        self.pos = nn.Parameter(torch.zeros(1, MAXLEN, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=32, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)
        nn.init.normal_(self.pos, std=0.02)

    def forward(self, tokens):
        pad = tokens == PAD
        h = self.embed(tokens) * math.sqrt(self.embed.embedding_dim) + self.pos[:, :tokens.shape[1]]
        h = self.encoder(h, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).to(h.dtype)
        pooled = (self.norm(h) * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)
        return self.head(pooled)


def build():
    torch.manual_seed(0)
    return Classifier()


def make_batch(rng, n):
    lengths = rng.integers(4, MAXLEN + 1, n)
    tokens = np.zeros((n, MAXLEN), dtype=np.int64)
    labels = np.zeros(n, dtype=np.int64)
    for i, L in enumerate(lengths):
        tokens[i, :L] = rng.integers(1, VOCAB, L)
        labels[i] = int(tokens[i, :L].sum() % 3)
    return torch.tensor(tokens), torch.tensor(labels)


def main(model):
    rng = np.random.default_rng(0)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, betas=(0.9, 0.98), weight_decay=0.01)
    warmup = 4
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    net = torch.compile(model) if COMPILE == "compile" else model
    if COMPILE == "fused":
        step = torch.compile.fused_step(model, F.cross_entropy, opt, max_grad_norm=1.0)
    losses = []
    for _ in range(8):
        tokens, labels = make_batch(rng, 16)
        if COMPILE == "fused":
            loss = step(tokens, labels)
        else:
            opt.zero_grad()
            loss = F.cross_entropy(net(tokens), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    tokens, labels = make_batch(rng, 8)
    with torch.no_grad():
        logits = net(tokens)
    return {"losses": losses, "logits": logits, "pred": logits.argmax(-1)}
