"""The flash-style CPU attention kernel (backends/cpu/kernels/attention.cpp) against PyTorch:
shapes that cross many query and key tiles (64 x 128) and their ragged edges, causal with
Tq != Tk, bool and float masks broadcast over heads, head dims 8..128, float64/float32/bfloat16,
fully masked and NaN rows, gradients, and compiled == eager for a GPT-2 block. bfloat16 on a CPU
with AMX runs the AMX matmul path (scores of a call in float32, up to 8M of them; beyond, the
flash kernel): the same table of cases against torch's bfloat16."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lucid
from lucid.models.gpt2 import GPT2Block

rng = np.random.default_rng(13)


def qkv(B, H, Tq, Tk, D, dtype=np.float32):
    return [rng.standard_normal((B, H, t, D)).astype(dtype) for t in (Tq, Tk, Tk)]


def lucid_sdpa(arrays, **kw):
    return lucid.scaled_dot_product_attention(*[lucid.tensor(a) for a in arrays], **kw).numpy()


def torch_sdpa(arrays, **kw):
    return F.scaled_dot_product_attention(*[torch.tensor(a) for a in arrays], **kw).numpy()


@pytest.mark.parametrize("T", [1, 63, 65, 200, 513])
@pytest.mark.parametrize("causal", [False, True])
def test_many_tiles_float32(T, causal):
    a = qkv(1, 2, T, T, 32)
    np.testing.assert_allclose(lucid_sdpa(a, is_causal=causal), torch_sdpa(a, is_causal=causal), atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("Tq,Tk", [(65, 300), (300, 65), (1, 257), (129, 128)])
def test_causal_with_tq_not_tk(Tq, Tk):
    a = qkv(2, 1, Tq, Tk, 16)
    np.testing.assert_allclose(lucid_sdpa(a, is_causal=True), torch_sdpa(a, is_causal=True), atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("D", [8, 24, 64, 128])
def test_head_dims_float64(D):
    a = qkv(1, 3, 130, 270, D, np.float64)
    np.testing.assert_allclose(lucid_sdpa(a), torch_sdpa(a), atol=1e-12, rtol=1e-11)


@pytest.mark.parametrize("shape", [(200, 300), (1, 1, 200, 300), (2, 1, 1, 300)])
def test_masks_broadcast(shape):
    a = qkv(2, 3, 200, 300, 16)
    keep = rng.random(shape) > 0.3
    additive = rng.standard_normal(shape).astype(np.float32)
    for m in (keep, additive):
        np.testing.assert_allclose(lucid_sdpa(a, attn_mask=lucid.tensor(m)), torch_sdpa(a, attn_mask=torch.tensor(m)),
                                   atol=2e-6, rtol=1e-5)


def test_bfloat16():
    a = qkv(1, 2, 150, 260, 64)
    lo = lucid.scaled_dot_product_attention(*[lucid.tensor(x).to(lucid.bfloat16) for x in a])
    to = F.scaled_dot_product_attention(*[torch.tensor(x).to(torch.bfloat16) for x in a])
    np.testing.assert_allclose(lo.float().numpy(), to.float().numpy(), atol=2e-2, rtol=2e-2)


SDPA_CASES = {
    "plain": dict(shape=(1, 12, 197, 197, 64), kw={}),
    "causal-tq-ne-tk": dict(shape=(2, 3, 70, 130, 32), kw=dict(is_causal=True)),
    "bool-mask": dict(shape=(1, 2, 90, 150, 64), mask="bool"),
    "float-mask": dict(shape=(2, 2, 40, 77, 16), mask="float"),
    "nan-and-fully-masked": dict(shape=(1, 2, 33, 64, 64), mask="bool", nan=True),
    "flash (over 8M scores)": dict(shape=(1, 2, 2100, 2100, 32), kw={}),
}


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", list(SDPA_CASES), ids=list(SDPA_CASES))
def test_cases_match_torch(case, dt):
    """bfloat16 takes the AMX path (where there is AMX), float32 the flash kernel: both as torch,
    NaN included (a NaN key under a bool mask is NaN in every row, as torch's additive mask)."""
    c = SDPA_CASES[case]
    ld, td, tol = getattr(lucid, dt), getattr(torch, dt), 2e-2 if dt == "bfloat16" else 2e-5
    B, H, Tq, Tk, D = c["shape"]
    a = qkv(B, H, Tq, Tk, D)
    kw_l, kw_t = dict(c.get("kw", {})), dict(c.get("kw", {}))
    if c.get("mask") == "bool":
        keep = rng.random((Tq, Tk)) > 0.4
        keep[5] = False  # a fully masked row
        kw_l["attn_mask"], kw_t["attn_mask"] = lucid.tensor(keep), torch.tensor(keep)
    elif c.get("mask") == "float":
        m = rng.standard_normal((B, 1, Tq, Tk)).astype(np.float32)
        kw_l["attn_mask"], kw_t["attn_mask"] = lucid.tensor(m).to(ld), torch.tensor(m).to(td)
    if c.get("nan"):
        a[1][0, 1, 9, 3] = np.nan  # a NaN key: every row of that head is NaN
    lo = lucid.scaled_dot_product_attention(*[lucid.tensor(x).to(ld) for x in a], **kw_l).float().numpy()
    to = F.scaled_dot_product_attention(*[torch.tensor(x).to(td) for x in a], **kw_t).float().numpy()
    np.testing.assert_array_equal(np.isnan(lo), np.isnan(to))
    np.testing.assert_allclose(np.nan_to_num(lo), np.nan_to_num(to), atol=tol, rtol=tol)
    if c.get("mask") == "bool" and not c.get("nan"):
        assert np.all(lo[:, :, 5] == 0)


def test_bfloat16_dropout_equals_float32_with_the_same_mask():
    """Dropout after the softmax's sum, as the flash kernel: the same seed draws the same keep-mask,
    so bfloat16 (AMX path) and float32 (flash kernel) agree to bfloat16's precision."""
    a = qkv(1, 2, 100, 120, 32)
    outs = []
    for dt in (lucid.float32, lucid.bfloat16):
        lucid.manual_seed(5)
        outs.append(lucid.scaled_dot_product_attention(*[lucid.tensor(x).to(dt) for x in a], dropout_p=0.3).float().numpy())
    np.testing.assert_allclose(outs[1], outs[0], atol=3e-2, rtol=3e-2)
    nodrop = lucid.scaled_dot_product_attention(*[lucid.tensor(x) for x in a]).numpy()
    assert np.abs(outs[0] - nodrop).max() > 0.1


def test_fully_masked_and_nan_rows_match_torch():
    a = qkv(1, 1, 140, 300, 16)
    keep = rng.random((140, 300)) > 0.5
    keep[3] = False  # fully masked row (over all three key tiles)
    keep[100, :200] = False  # kept keys only in the last tile
    a[0][0, 0, 7, 2] = np.nan  # NaN query row
    lo = lucid_sdpa(a, attn_mask=lucid.tensor(keep))
    to = torch_sdpa(a, attn_mask=torch.tensor(keep))
    np.testing.assert_array_equal(np.isnan(lo), np.isnan(to))
    np.testing.assert_allclose(np.nan_to_num(lo), np.nan_to_num(to), atol=2e-6, rtol=1e-5)
    assert np.all(lo[0, 0, 3] == 0) and np.isnan(lo[0, 0, 7]).all()


@pytest.mark.parametrize("T,causal", [(65, True), (200, False), (257, True)])
def test_grads_float32(T, causal):
    a = qkv(1, 2, T, T, 32)
    lt = [lucid.tensor(x).requires_grad_(True) for x in a]
    tt = [torch.tensor(x, requires_grad=True) for x in a]
    w = rng.standard_normal((1, 2, T, 32)).astype(np.float32)
    (lucid.scaled_dot_product_attention(*lt, is_causal=causal) * lucid.tensor(w)).sum().backward()
    (F.scaled_dot_product_attention(*tt, is_causal=causal) * torch.tensor(w)).sum().backward()
    for l, t in zip(lt, tt):
        np.testing.assert_allclose(l.grad.numpy(), t.grad.numpy(), atol=1e-5, rtol=1e-4)


def test_compiled_gpt2_block_matches_eager():
    lucid.manual_seed(0)
    block = GPT2Block(64, 4, 256, 1e-5, 0.0, 0.0)
    block.eval()
    x = lucid.tensor(rng.standard_normal((2, 150, 64)).astype(np.float32))
    eager = block(x).detach().numpy()
    cb = lucid.compile(block)
    cb(x)
    np.testing.assert_allclose(cb(x).detach().numpy(), eager, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_grads_with_masks_over_many_tiles(kind):
    a = qkv(2, 2, 150, 270, 16)
    shape = (2, 1, 150, 270)
    if kind == "bool":
        m = rng.random(shape) > 0.4
        m[0, 0, 5] = False  # a fully masked row: zero gradients, as torch
        lm, tm = lucid.tensor(m), torch.tensor(m)
    else:
        m = rng.standard_normal(shape).astype(np.float32)
        lm, tm = lucid.tensor(m).requires_grad_(True), torch.tensor(m, requires_grad=True)
    lt = [lucid.tensor(x).requires_grad_(True) for x in a]
    tt = [torch.tensor(x, requires_grad=True) for x in a]
    w = rng.standard_normal((2, 2, 150, 16)).astype(np.float32)
    (lucid.scaled_dot_product_attention(*lt, attn_mask=lm) * lucid.tensor(w)).sum().backward()
    (F.scaled_dot_product_attention(*tt, attn_mask=tm) * torch.tensor(w)).sum().backward()
    for l, t in zip(lt, tt):
        np.testing.assert_allclose(l.grad.numpy(), t.grad.numpy(), atol=1e-5, rtol=1e-4)
    if kind == "float":
        np.testing.assert_allclose(lm.grad.numpy(), tm.grad.numpy(), atol=1e-5, rtol=1e-4)


def test_dropout_grads_match_manual_torch_over_many_tiles():
    q, k, v = qkv(1, 2, 140, 260, 16)
    keep = rng.random((1, 2, 140, 260)) > 0.3
    lt = [lucid.tensor(x).requires_grad_(True) for x in (q, k, v)]
    tt = [torch.tensor(x, requires_grad=True) for x in (q, k, v)]
    lo = lucid._C._nn_sdpa(*lt, None, lucid.tensor(keep), 0.3, True, None)
    p = torch.softmax((tt[0] @ tt[1].transpose(-2, -1)) / 4.0 + torch.full((140, 260), float("-inf")).triu(1), -1)
    to = (p * torch.tensor(keep) / 0.7) @ tt[2]
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), atol=2e-6, rtol=1e-5)
    lo.sum().backward()
    to.sum().backward()
    for l, t in zip(lt, tt):
        np.testing.assert_allclose(l.grad.numpy(), t.grad.numpy(), atol=1e-5, rtol=1e-4)


def test_bfloat16_grads():
    a = qkv(1, 2, 130, 200, 32)
    lt = [lucid.tensor(x).to(lucid.bfloat16).requires_grad_(True) for x in a]
    tt = [torch.tensor(x).to(torch.bfloat16).requires_grad_(True) for x in a]
    lucid.scaled_dot_product_attention(*lt, is_causal=True).float().sum().backward()
    F.scaled_dot_product_attention(*tt, is_causal=True).float().sum().backward()
    for l, t in zip(lt, tt):
        np.testing.assert_allclose(l.grad.float().numpy(), t.grad.float().numpy(), atol=5e-2, rtol=5e-2)
