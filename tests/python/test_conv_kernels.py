"""The CPU convolution kernel's paths against torch: pointwise convolutions (1x1, stride 1, no
padding, one group) run as one GEMM over the plain NCHW buffers; everything else as a oneDNN
convolution with nChw16c activations where the channels are a multiple of 16 and oneDNN's own
layout otherwise (e.g. a 3-channel first layer). Every path with and without bias, batch 1 and
several, 1-D and 2-D, the fused epilogues (residual before or after the activation), NaN/inf
inputs, zero-size batches, and bfloat16."""
import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import lucid
import lucid.nn.functional as F
from lucid import _C

CASES = [  # (x shape, w shape, stride, padding, groups)
    ((1, 24, 7, 7), (144, 24, 1, 1), 1, 0, 1),      # pointwise, channels not a multiple of 16
    ((3, 16, 5, 6), (32, 16, 1, 1), 1, 0, 1),       # pointwise, blocked-size channels, a batch
    ((2, 5, 9), (7, 5, 1), 1, 0, 1),                # pointwise 1-D
    ((2, 8, 6, 6), (12, 8, 1, 1), 2, 0, 1),         # 1x1 with stride: a convolution
    ((1, 16, 6, 6), (16, 16, 1, 1), 1, 1, 1),       # 1x1 with padding: a convolution
    ((1, 32, 6, 6), (32, 8, 1, 1), 1, 0, 4),        # grouped 1x1: a convolution
    ((2, 3, 12, 12), (16, 3, 7, 7), 2, 3, 1),       # first layer: 3 channels in, blocked out
    ((1, 24, 8, 8), (24, 1, 3, 3), 1, 1, 24),       # depthwise, neither side blocked
    ((1, 32, 8, 8), (48, 32, 3, 3), 2, 1, 1),       # blocked both sides
]


def arrays(xs, ws, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32) * 0.3,
            rng.standard_normal(ws[0]).astype(np.float32))


def torch_conv(x, w, b, s, p, g):
    return (TF.conv1d if x.ndim == 3 else TF.conv2d)(x, w, b, s, p, 1, g)


def lucid_conv(x, w, b, s, p, g):
    return (F.conv1d if x.ndim == 3 else F.conv2d)(x, w, b, s, p, 1, g)


@pytest.mark.parametrize("case,bias", list(itertools.product(CASES, [True, False])))
def test_conv_forward_matches_torch(case, bias):
    xs, ws, s, p, g = case
    x, w, b = arrays(xs, ws, len(xs) * 7 + ws[0])
    tb = torch.from_numpy(b) if bias else None
    lb = lucid.tensor(b) if bias else None
    ref = torch_conv(torch.from_numpy(x), torch.from_numpy(w), tb, s, p, g).numpy()
    for _ in range(3):  # the weights are packed on the second sighting, served on the third
        got = lucid_conv(lucid.tensor(x), lucid.tensor(w), lb, s, p, g).numpy()
        np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("case,act,residual_first", list(itertools.product(CASES[:2] + CASES[-1:], ["none", "relu"], [False, True])))
def test_conv_fused_epilogues_match_torch(case, act, residual_first):
    xs, ws, s, p, g = case
    x, w, b = arrays(xs, ws, 3)
    tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
    y = torch_conv(tx, tw, tb, s, p, g)
    r = torch.from_numpy(np.random.default_rng(4).standard_normal(tuple(y.shape)).astype(np.float32))
    if residual_first:
        ref = y + r if act == "none" else torch.relu(y + r)
    else:
        ref = (y if act == "none" else torch.relu(y)) + r
    got = _C._conv_fused(lucid.tensor(x), lucid.tensor(w), lucid.tensor(b), lucid.tensor(r.numpy()), stride=s,
                         padding=p, groups=g, activation=act, residual_first=residual_first)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("case", CASES[:3])
def test_pointwise_specials_and_empty_batch(case):
    xs, ws, s, p, g = case
    x, w, b = arrays(xs, ws, 5)
    x.reshape(-1)[::7] = np.nan
    x.reshape(-1)[3::11] = np.inf
    ref = torch_conv(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), s, p, g).numpy()
    got = lucid_conv(lucid.tensor(x), lucid.tensor(w), lucid.tensor(b), s, p, g).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=2e-4, atol=2e-4)
    empty = np.zeros((0,) + xs[1:], np.float32)
    out = lucid_conv(lucid.tensor(empty), lucid.tensor(w), lucid.tensor(b), s, p, g)
    assert tuple(out.shape) == tuple(torch_conv(torch.from_numpy(empty), torch.from_numpy(w), None, s, p, g).shape)


@pytest.mark.parametrize("case", [CASES[0], CASES[-1]])
def test_conv_bfloat16(case):
    xs, ws, s, p, g = case
    x, w, b = arrays(xs, ws, 6)
    tx, tw, tb = (torch.from_numpy(a).bfloat16() for a in (x, w, b))
    ref = torch_conv(tx, tw, tb, s, p, g).float().numpy()
    got = lucid_conv(lucid.tensor(x).bfloat16(), lucid.tensor(w).bfloat16(), lucid.tensor(b).bfloat16(), s, p, g)
    np.testing.assert_allclose(got.float().numpy(), ref, rtol=2e-2, atol=5e-2)
