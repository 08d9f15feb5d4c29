"""The CPU layout pass (backends/cpu/compile/layout.cpp): activations between convolutions stay in
the convolutions' own layout: oneDNN's channel-blocked nChw16c, held as [N, C/16, H, W, 16]
tensors (nChw8c, [N, C/8, H, W, 8], for float32 on AVX2 CPUs), or, for bfloat16 on a CPU with AMX, nhwc, held as [N, 1, H, W, C] (the same 5-D form with
block C; ops/blocked_layout.h).

- The blocked kernels (block 16 and block C) compute what the NCHW kernels compute, bit for bit, at NaN, infinities,
  signed zeros and ties (the pooling windows' order, max's first-maximum-wins, the average's
  partial sums, eval batch norm's rounding).
- Compiled nets that mix every construct the pass handles (residual adds, depthwise and grouped
  convs, channel counts that are and are not multiples of 16, max / average / adaptive pooling,
  eval BatchNorm after a concatenation, squeeze-excite's broadcast multiply, a returned
  intermediate) equal eager mode, with NaN in the input, in float32 and under bfloat16 autocast,
  and the pass did fire (the blocked ops are in the compiled IR, with no reorder inside a chain).
- Random nets (a seed table) and a training step (backward reads the activations through
  UnblockChannels) equal eager mode too.
Reference values come from lucid's eager mode and from torch (the op-spec rows of
specs/blocked_layout.py hold the ops themselves to torch)."""
import os
import re

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from harness import assert_close_to_eager, assert_same_values, ir_top_level_ops, with_specials

C = lucid._C
# The pass runs where the convolutions have a blocked layout of their own
# (cpu::conv_activation_layout): nChw16c on AVX-512 (nChw8c for float32 on AVX2), and nhwc for
# bfloat16 where oneDNN has AMX; bfloat16 has none on AVX2.
_FLAGS = open("/proc/cpuinfo").read()
_ON = os.environ.get("LUCID_CONV_LAYOUT", "blocked") == "blocked"
BLOCKED_BF16 = _ON and "avx512f" in _FLAGS
BLOCKED = BLOCKED_BF16 or (_ON and "avx2" in _FLAGS)  # float32
AMX = BLOCKED_BF16 and "amx_bf16" in _FLAGS


def block(x, b=16):
    return C._block_channels(x, b)


def unblock(x):
    return C._unblock_channels(x)


# ---- the blocked kernels against lucid's NCHW kernels, bit for bit ---------------------------
def _specials(rng, shape):
    a = with_specials(rng.uniform(-2, 2, size=shape).astype(np.float32), rng, 0.08)
    flat = a.reshape(-1)
    flat[rng.choice(flat.size, size=flat.size // 10, replace=False)] = 0.75  # ties
    return a


KERNEL_CASES = [
    ("max", dict(k=(3, 3), s=(2, 2), p=(1, 1), d=(1, 1), ceil=False)),
    ("max", dict(k=(2, 3), s=(1, 2), p=(1, 1), d=(2, 1), ceil=True)),
    ("max", dict(k=(2, 2), s=(2, 2), p=(0, 0), d=(1, 1), ceil=True)),
    ("avg", dict(k=(2, 2), s=(2, 2), p=(0, 0), ceil=False, cip=True, div=0)),
    ("avg", dict(k=(3, 3), s=(2, 2), p=(1, 1), ceil=True, cip=False, div=0)),
    ("avg", dict(k=(3, 2), s=(1, 1), p=(1, 0), ceil=False, cip=True, div=7)),
    ("avg", dict(k=(9, 10), s=(1, 1), p=(0, 0), ceil=False, cip=True, div=0)),  # rows longer than 8: the partial sums
    ("adaptive", dict(o=(1, 1))),
    ("adaptive", dict(o=(4, 3))),
    ("bn", dict(eps=1e-5, affine=True)),
    ("bn", dict(eps=1e-3, affine=False)),
    ("bn", dict(eps=1e-5, affine=True, relu=True)),
]


@pytest.mark.parametrize("ch,blk", [(32, 16), (24, 8), (32, 32), (20, 20)], ids=["nChw16c", "nChw8c", "nhwc", "nhwc-20"])
@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
@pytest.mark.parametrize("kind,cfg", KERNEL_CASES, ids=[f"{k}{i}" for i, (k, _) in enumerate(KERNEL_CASES)])
def test_blocked_kernels_equal_the_nchw_kernels_bit_for_bit(kind, cfg, dt, ch, blk):
    """blk = ch is the channels-last form; 20 lanes: the vector lanes and a scalar tail."""
    rng = np.random.default_rng(len(str(cfg)))
    x = lucid.tensor(_specials(rng, (3, ch, 9, 10))).to(getattr(lucid, dt))
    block = lambda t: C._block_channels(t, blk)  # noqa: E731
    if kind == "max":
        want, _ = C._max_pool2d(x, cfg["k"], cfg["s"], cfg["p"], cfg["d"], cfg["ceil"])
        got = C._max_pool2d_blocked(block(x), cfg["k"], cfg["s"], cfg["p"], cfg["d"], cfg["ceil"])
    elif kind == "avg":
        want = C._avg_pool2d(x, cfg["k"], cfg["s"], cfg["p"], cfg["ceil"], cfg["cip"], cfg["div"] or None)
        got = C._avg_pool2d_blocked(block(x), cfg["k"], cfg["s"], cfg["p"], cfg["ceil"], cfg["cip"], cfg["div"])
    elif kind == "adaptive":
        want = C._adaptive_avg_pool2d(x, cfg["o"])
        got = C._adaptive_avg_pool2d_blocked(block(x), cfg["o"])
    else:
        rm, rv = lucid.tensor(rng.normal(size=ch).astype(np.float32)), lucid.tensor(rng.uniform(0.2, 3, ch).astype(np.float32))
        w = lucid.tensor(rng.normal(size=ch).astype(np.float32)) if cfg["affine"] else None
        b = lucid.tensor(rng.normal(size=ch).astype(np.float32)) if cfg["affine"] else None
        want = F.batch_norm(x, rm, rv, w, b, training=False, eps=cfg["eps"])
        want = F.relu(want) if cfg.get("relu") else want
        got = C._batch_norm_blocked(block(x), rm, rv, w, b, cfg["eps"], cfg.get("relu", False))
    assert_same_values(unblock(got), want, f"{kind} {cfg} {dt}")


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float64"])  # float64: the strided-copy path
def test_block_and_unblock_are_inverse_and_match_torch(dt):
    x = np.random.default_rng(0).normal(size=(2, 48, 5, 7)).astype(np.float32)
    t = torch.tensor(x).to(getattr(torch, dt))
    lx = lucid.tensor(x).to(getattr(lucid, dt))
    for b, ref in ((16, t.reshape(2, 3, 16, 5, 7).permute(0, 1, 3, 4, 2)),
                   (8, t.reshape(2, 6, 8, 5, 7).permute(0, 1, 3, 4, 2)),
                   (48, t.contiguous(memory_format=torch.channels_last).permute(0, 2, 3, 1).reshape(2, 1, 5, 7, 48))):
        got = block(lx, b)
        assert tuple(got.shape) == tuple(ref.shape)
        np.testing.assert_array_equal(got.float().numpy(), ref.float().numpy(), err_msg=f"block {b}")
        np.testing.assert_array_equal(unblock(got).float().numpy(), lx.float().numpy(), err_msg=f"unblock {b}")


@pytest.mark.parametrize("call,msg", [
    (lambda: C._block_channels(lucid.zeros(1, 24, 2, 2), 16), "block_channels: argument 'block' expected a positive divisor"),
    (lambda: C._unblock_channels(lucid.zeros(1, 24, 2, 2)), "unblock_channels: argument 'input' expected a 5-D"),
    (lambda: C._max_pool2d_blocked(lucid.zeros(1, 16, 4, 4), (2, 2), (2, 2), (0, 0), (1, 1), False),
     "max_pool2d_blocked: argument 'input' expected a 5-D"),
])
def test_bad_blocked_inputs_raise(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


# ---- compiled nets against eager ---------------------------------------------------------------
class SqueezeExcite(nn.Module):
    def __init__(self, c, r):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, r, 1), nn.Conv2d(r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * lucid.sigmoid(self.fc2(F.silu(self.fc1(s))))


class MixedNet(nn.Module):
    """Every construct the pass handles, with 24 (not a multiple of 16) channels in the middle."""

    def __init__(self, returns_mid=False):
        super().__init__()
        self.returns_mid = returns_mid
        self.stem, self.bn0 = nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32)
        self.c1, self.bn1 = nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32)
        self.c2, self.bn2 = nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.grouped = nn.Conv2d(32, 64, 3, padding=1, groups=2)
        self.se = SqueezeExcite(64, 8)
        self.down = nn.Conv2d(64, 24, 1)  # 24 channels: NCHW, read and written by convs that reorder themselves
        self.up = nn.Conv2d(24, 48, 1)
        self.grow = nn.Conv2d(48, 16, 3, padding=1)
        self.bn_cat = nn.BatchNorm2d(64)
        self.head = nn.Linear(64, 5)

    def forward(self, x):
        x = F.relu(self.bn0(self.stem(x)))
        x = F.max_pool2d(x, 3, 2, 1)
        y = F.relu(self.bn1(self.c1(x)))
        x = F.relu(self.bn2(self.c2(y)) + x)  # residual
        mid = x
        x = F.relu6(self.dw(x))
        x = self.se(self.grouped(x))
        x = F.relu(self.up(self.down(x)))
        x = lucid.cat([x, self.grow(x)], 1)  # 48 + 16 channels
        x = F.relu(self.bn_cat(x))
        x = F.avg_pool2d(x, 2, 2, ceil_mode=True)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        out = self.head(x)
        return (out, mid) if self.returns_mid else out


def _randomize_bn(m, rng):
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            n = mod.num_features
            mod.running_mean.copy_(lucid.tensor(rng.normal(0, 0.5, n).astype(np.float32)))
            mod.running_var.copy_(lucid.tensor(rng.uniform(0.5, 2, n).astype(np.float32)))
            mod.weight.data.copy_(lucid.tensor(rng.uniform(0.5, 1.5, n).astype(np.float32)))
            mod.bias.data.copy_(lucid.tensor(rng.normal(0, 0.2, n).astype(np.float32)))
    return m


def _as_tuple(o):
    return o if isinstance(o, tuple) else (o,)


@pytest.mark.parametrize("returns_mid", [False, True])
@pytest.mark.parametrize("specials", [False, True])
@pytest.mark.parametrize("n,hw", [(1, 32), (3, 29)])
def test_compiled_mixed_net_equals_eager_and_the_pass_fired(n, hw, specials, returns_mid):
    rng = np.random.default_rng(n * 100 + hw)
    lucid.manual_seed(n)
    m = _randomize_bn(MixedNet(returns_mid), rng).eval()
    a = rng.normal(size=(n, 3, hw, hw)).astype(np.float32)
    x = lucid.tensor(with_specials(a, rng, 0.002) if specials else a)
    f = lucid.compile(m)
    with lucid.no_grad():
        want = _as_tuple(m(x))
        for _ in range(2):  # the first call and a cached one (prepacked weights)
            got = _as_tuple(f(x))
            for g, w, name in zip(got, want, ["out", "mid"]):
                assert_close_to_eager(g, w, name, 1e-5)
    if not BLOCKED:
        return  # no blocked layout here: the pass leaves the graph as it is (the values are checked above)
    ops = ir_top_level_ops(f.ir())
    for op in ("MaxPool2dBlocked", "AdaptiveAvgPool2dBlocked", "AvgPool2dBlocked", "BatchNormBlocked"):
        assert op in ops, (op, f.ir())
    assert "MaxPool2d" not in ops and "BatchNorm" not in ops and "AvgPool2d" not in ops
    # The ReLU after bn_cat runs inside it.
    assert re.search(r"= BatchNormBlocked\(.*relu=true", f.ir()), f.ir()
    # One reorder at most: the returned intermediate (the final pool's 1x1 output is a reshape).
    assert ops.count("UnblockChannels") == (1 if returns_mid else 0), f.ir()
    assert "BlockChannels" not in ops


def test_compiled_mixed_net_under_bfloat16_autocast_equals_eager():
    rng = np.random.default_rng(5)
    m = _randomize_bn(MixedNet(), rng).eval()
    x = lucid.tensor(rng.normal(size=(2, 3, 32, 32)).astype(np.float32))
    f = lucid.compile(m)
    with lucid.no_grad(), lucid.autocast("cpu"):
        want = m(x)
        for _ in range(2):
            got = f(x)
            assert_close_to_eager(got.float(), want.float(), "bf16 out", 2e-2)
    if not BLOCKED_BF16:
        return
    ir = f.ir()
    assert "MaxPool2dBlocked" in ir_top_level_ops(ir)
    # With AMX the bfloat16 activations are nhwc ([N, 1, H, W, C]: the 32-channel convs carry
    # block 32 and the concatenation runs along the lanes, dim 4); without, nChw16c.
    convs = re.findall(r"ConvFused\(.*\{.*in_block=(\d+).*\} : bfloat16\[(.*)\]", ir)
    assert convs, ir
    for blk, shape in convs:
        dims = [int(d) for d in shape.split(",")]
        assert (int(blk) == 32 if AMX else int(blk) == 16) or dims[-1] != 32, (blk, shape)
    assert re.search(r"Cat\(.*\{dim=%d\} : bfloat16\[2,%s\]" % ((4, "1,8,8,64") if AMX else (1, "4,8,8,16")), ir), ir


def test_the_layout_pass_changes_no_value_of_a_resnet_block():
    """Bit for bit against the same compiled program without the pass: the 3x3 convs run the
    same oneDNN primitive on the same layout, the pooling kernels compute as the NCHW ones."""
    import subprocess
    import sys
    code = r"""
import numpy as np, lucid, lucid.nn as nn, lucid.nn.functional as F
class B(nn.Module):
    def __init__(s):
        super().__init__()
        s.a, s.b, s.c = nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 32, 3, padding=1), nn.Conv2d(32, 32, 3, padding=1)
    def forward(s, x):
        y = F.max_pool2d(F.relu(s.a(x)), 2)
        return F.adaptive_avg_pool2d(F.relu(s.c(F.relu(s.b(y))) + y), 2)
lucid.manual_seed(0); m = B().eval(); f = lucid.compile(m)
x = lucid.tensor(np.random.default_rng(1).normal(size=(2, 3, 16, 16)).astype(np.float32))
with lucid.no_grad():
    f(x); np.save(__import__("sys").argv[1], f(x).numpy())
"""
    outs = []
    for disable in ("", "layout"):
        path = f"/tmp/lucid_layout_{os.getpid()}_{disable or 'on'}.npy"
        env = {**os.environ, "LUCID_COMPILE_DISABLE": disable, "LUCID_COMPILE_CACHE_DIR": ""}
        subprocess.run([sys.executable, "-c", code, path], check=True, env=env)
        outs.append(np.load(path))
        os.remove(path)
    np.testing.assert_array_equal(outs[0], outs[1])


# ---- random nets --------------------------------------------------------------------------------
class RandomNet(nn.Module):
    def __init__(self, rng):
        super().__init__()
        self.plan = []
        c = int(rng.choice([16, 32]))
        self.layers = nn.ModuleList([nn.Conv2d(3, c, 3, padding=1)])
        self.plan.append(("conv", 0))
        for _ in range(int(rng.integers(3, 7))):
            kind = rng.choice(["conv", "dw", "pw_odd", "res", "pool", "cat", "bn"])
            if kind == "conv":
                c2 = int(rng.choice([16, 32, 48]))
                self.layers.append(nn.Conv2d(c, c2, int(rng.choice([1, 3])), padding="same"))
                c = c2
            elif kind == "dw":
                self.layers.append(nn.Conv2d(c, c, 3, padding=1, groups=c))
            elif kind == "pw_odd":  # through an odd channel count and back
                self.layers.append(nn.Sequential(nn.Conv2d(c, 20, 1), nn.ReLU(), nn.Conv2d(20, c, 1)))
            elif kind == "res":
                self.layers.append(nn.Conv2d(c, c, 3, padding=1))
            elif kind == "cat":
                self.layers.append(nn.Conv2d(c, 16, 3, padding=1))
            elif kind == "bn":
                self.layers.append(nn.BatchNorm2d(c))
            else:
                self.layers.append(nn.Identity())
            self.plan.append((str(kind), len(self.layers) - 1))
            if kind == "cat":
                c += 16
        self.head = nn.Linear(c, 3)

    def forward(self, x):
        for kind, i in self.plan:
            layer = self.layers[i]
            if kind == "res":
                x = F.relu(layer(x) + x)
            elif kind == "pool":
                x = F.max_pool2d(x, 2, 2, ceil_mode=True) if x.shape[-1] > 2 else x
            elif kind == "cat":
                x = lucid.cat([x, layer(x)], 1)
            elif kind == "bn":
                x = F.relu(layer(x))
            else:
                x = F.relu(layer(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16-autocast"])
@pytest.mark.parametrize("seed", range(12))
def test_random_conv_nets_compiled_equal_eager(seed, autocast):
    """float32 (nChw16c) and under bfloat16 autocast (nhwc where oneDNN has AMX): the same
    primitives on the same layouts as eager's convolutions, so within rounding of the unfused ops."""
    rng = np.random.default_rng(seed)
    lucid.manual_seed(seed)
    m = _randomize_bn(RandomNet(rng), rng).eval()
    x = lucid.tensor(rng.normal(size=(int(rng.integers(1, 4)), 3, 12, 12)).astype(np.float32))
    f = lucid.compile(m)
    tol = 2e-2 if autocast else 1e-5
    with lucid.no_grad(), lucid.autocast("cpu", enabled=autocast):
        want = m(x).float()
        assert_close_to_eager(f(x).float(), want, f"seed {seed}", tol)
        assert_close_to_eager(f(x).float(), want, f"seed {seed} cached", tol)


def test_training_through_blocked_convs_equals_eager():
    """A compiled training step: the forward convs keep their outputs blocked, the backward ops
    read them through UnblockChannels; the gradients are eager's."""
    rng = np.random.default_rng(3)

    def make():
        lucid.manual_seed(3)
        return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(32, 16, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4))

    x = lucid.tensor(rng.normal(size=(2, 3, 10, 10)).astype(np.float32))
    eager, comp = make(), make()
    eager(x).square().sum().backward()
    f = lucid.compile(comp)
    f(x).square().sum().backward()
    for (name, pe), pc in zip(eager.named_parameters(), comp.parameters()):
        assert_close_to_eager(pc.grad, pe.grad, name, 1e-5)
