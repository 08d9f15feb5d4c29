"""The model set of issue 3 (lucid.compile), each defined once and built twice: as a lucid model and
as a PyTorch twin with identical weights. Shared by tests/python/test_compile_models.py (compiled ==
eager == torch) and bench/compile_forward.py (latency), so the tests and the benchmark measure the
same models. Not a test file.

Each model is written once against a library namespace `lib` (the `lucid` or the `torch` module):
lucid mirrors torch's API name for name, so one definition gives two structurally identical models
with the same state_dict keys. The torch twin is initialised from a seed, its norm layers get random
affine parameters and running statistics (so eval-mode BatchNorm is not an identity and BN folding
is really exercised), and its state_dict is copied into the lucid model through NumPy.

Sizes are small (a 2-core machine runs the suite) but realistic: ResNet and MobileNet blocks at
16-64 channels on 32x32 images, transformer width 64 with 4 heads over 16 tokens.

Use: `spec = MODELS["resnet"]; lm, tm = spec.build(); largs, targs = spec.make_inputs(batch, seed)`;
`spec.make_numpy(batch, seed)` gives the same inputs as NumPy arrays (for other frameworks' twins).
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

import lucid

SEQ_LEN = 16      # tokens / time steps of the sequence models
D_MODEL = 64      # transformer width
N_HEAD = 4
VOCAB = 96        # GPT vocabulary


# ----------------------------------------------------------------------------------------------
# Model definitions, written once against `lib` (lucid or torch)
# ----------------------------------------------------------------------------------------------

def readme_mlp(lib):
    """The README's model: 784-256-10 with ReLU."""
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def lenet5(lib):
    """LeNet-5 on 1x32x32 (ReLU and max-pooling, as it is usually written today)."""
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def resnet_blocks(lib):
    """A CIFAR-style ResNet: stem, three basic blocks (one strided, with a 1x1 projection shortcut),
    global average pool and a linear head. Every conv is followed by BatchNorm."""
    nn = lib.nn
    F = lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 32, 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def depthwise_separable(lib):
    """MobileNet-v1 style: a stem conv, then two depthwise-separable blocks (3x3 depthwise conv with
    groups=C + BN + ReLU6, 1x1 pointwise conv + BN + ReLU6), the second strided; pool and head."""
    nn = lib.nn

    def ds_block(cin, cout, stride):
        return nn.Sequential(
            nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin, bias=False), nn.BatchNorm2d(cin), nn.ReLU6(),
            nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU6())

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU6(),
        ds_block(16, 32, 1), ds_block(32, 64, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def transformer_encoder(lib):
    """One post-norm nn.TransformerEncoderLayer (MultiheadAttention, LayerNorm, GELU MLP), batch
    first, with a causal float mask kept as a (non-persistent) buffer, plus a linear head."""
    nn = lib.nn

    class EncoderBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(D_MODEL, N_HEAD, dim_feedforward=4 * D_MODEL, dropout=0.0,
                                                    activation="gelu", batch_first=True)
            self.head = nn.Linear(D_MODEL, 10)
            mask = lib.triu(lib.full((SEQ_LEN, SEQ_LEN), float("-inf")), diagonal=1)
            self.register_buffer("causal_mask", mask, persistent=False)

        def forward(self, x):
            return self.head(self.layer(x, src_mask=self.causal_mask, is_causal=True))

    return EncoderBlock()


def lstm_classifier(lib):
    """A one-layer LSTM over SEQ_LEN steps (batch first) with a linear head on the last step."""
    nn = lib.nn

    class LSTMClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(16, 32, batch_first=True)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1])

    return LSTMClassifier()


def gpt_decoder(lib):
    """nanoGPT-style: token + position embeddings (positions from arange inside forward), one
    pre-norm block (fused qkv projection, causal scaled_dot_product_attention, GELU MLP), final
    LayerNorm and an LM head whose weight is tied to the token embedding."""
    nn = lib.nn
    F = lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(D_MODEL, 3 * D_MODEL)
            self.c_proj = nn.Linear(D_MODEL, D_MODEL)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(x).split(D_MODEL, dim=2)
            q = q.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2)
            k = k.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2)
            v = v.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(D_MODEL, 4 * D_MODEL)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * D_MODEL, D_MODEL)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(D_MODEL)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(D_MODEL)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, D_MODEL)
            self.wpe = nn.Embedding(SEQ_LEN, D_MODEL)
            self.block = Block()
            self.ln_f = nn.LayerNorm(D_MODEL)
            self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)
            self.lm_head.weight = self.wte.weight  # weight tying, as in GPT-2

        def forward(self, idx):
            t = idx.shape[1]
            pos = lib.arange(t, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            return self.lm_head(self.ln_f(self.block(x)))

    return GPT()


# ----------------------------------------------------------------------------------------------
# Inputs (NumPy, so every framework gets the same numbers)
# ----------------------------------------------------------------------------------------------

def _normal(shape):
    def make(batch, seed):
        return (np.random.default_rng(seed).standard_normal((batch, *shape)).astype(np.float32),)
    return make


def _tokens(batch, seed):
    return (np.random.default_rng(seed).integers(0, VOCAB, (batch, SEQ_LEN)).astype(np.int64),)


# ----------------------------------------------------------------------------------------------
# Twins
# ----------------------------------------------------------------------------------------------

def _randomise_norms(tm, seed):
    """Random affine parameters and running statistics for every BatchNorm/LayerNorm of the torch
    model, so that normalisation is not an identity in eval mode."""
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in tm.modules():
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
                m.weight.copy_(1.0 + 0.2 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.2 * torch.randn(m.bias.shape, generator=g))
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(0.2 * torch.randn(m.running_mean.shape, generator=g))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=g))


def copy_torch_to_lucid(tm, lm):
    """Load the torch model's state_dict into the lucid model (through NumPy), insisting that every
    key matches."""
    sd = {k: lucid.tensor(v.detach().cpu().numpy().copy()) for k, v in tm.state_dict().items()}
    res = lm.load_state_dict(sd)
    assert not res.missing_keys and not res.unexpected_keys, res


@dataclass(frozen=True)
class ModelSpec:
    name: str
    define: Callable          # define(lib) -> model of that library
    make_numpy: Callable      # make_numpy(batch, seed) -> tuple of np.ndarray
    has_batchnorm: bool = False
    eager_tol: float = 1e-5   # lucid eager vs torch eager: max error relative to the output's scale
    compiled_tol: float = 1e-5  # lucid compiled vs lucid eager, same measure
    note: str = ""

    def build(self, seed=0, train=False):
        """(lucid_model, torch_model) with identical weights, both in train or eval mode."""
        torch.manual_seed(seed)
        tm = self.define(torch)
        _randomise_norms(tm, seed)
        lm = self.define(lucid)
        copy_torch_to_lucid(tm, lm)
        tm.train(train)
        lm.train(train)
        return lm, tm

    def make_inputs(self, batch, seed=0):
        """(lucid_args, torch_args): the same values as tuples of tensors."""
        arrays = self.make_numpy(batch, seed)
        return tuple(lucid.tensor(a) for a in arrays), tuple(torch.from_numpy(a.copy()) for a in arrays)


MODELS = {s.name: s for s in [
    ModelSpec("mlp", readme_mlp, _normal((784,))),
    ModelSpec("lenet5", lenet5, _normal((1, 32, 32))),
    ModelSpec("resnet", resnet_blocks, _normal((3, 32, 32)), has_batchnorm=True),
    ModelSpec("mobilenet_ds", depthwise_separable, _normal((3, 32, 32)), has_batchnorm=True),
    ModelSpec("transformer_encoder", transformer_encoder, _normal((SEQ_LEN, D_MODEL))),
    ModelSpec("lstm", lstm_classifier, _normal((SEQ_LEN, 16))),
    ModelSpec("gpt_decoder", gpt_decoder, _tokens),
]}


def max_rel_err(out, ref):
    """max |out - ref| / max |ref|: the error relative to the output's scale (an elementwise relative
    error is meaningless for outputs that cross zero)."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert out.shape == ref.shape, f"shape {out.shape} vs reference {ref.shape}"
    scale = max(float(np.max(np.abs(ref))), np.finfo(np.float32).tiny)
    return float(np.max(np.abs(out - ref))) / scale
