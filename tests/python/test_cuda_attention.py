"""CUDA scaled_dot_product_attention (backends/cuda/kernels/attention_flash.cu, the flash kernels for
float32/16-bit with head dims up to 128; attention.cu's GEMM path for float64 and larger head dims),
forward and backward, against torch on CUDA: torch.nn.functional.scaled_dot_product_attention in
float64 on the same (rounded) values, or, for dropout with a given keep-mask and for fully masked
rows (zeros in lucid), the math formula in float64 torch with the same keep-mask. Covers L != S,
sizes that are not multiples of the 64-row tiles (1, 17, 130), head dims 1, 64, 80, 128, 160 (and
E != Ev), causal with L > S and L < S, bool and float masks (with the float mask's gradient),
dropout, and float16/bfloat16/float64. Skips without a GPU."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F

pytestmark = pytest.mark.skipif(not lucid.cuda.is_available(), reason="no CUDA device")

TORCH_DT = {lucid.float32: torch.float32, lucid.float64: torch.float64, lucid.float16: torch.float16,
            lucid.bfloat16: torch.bfloat16}
# (forward, gradient) tolerances, absolute and relative, per dtype
TOL = {lucid.float32: (2e-4, 1e-3), lucid.float64: (1e-10, 1e-9), lucid.float16: (1e-2, 3e-2),
       lucid.bfloat16: (3e-2, 1e-1)}


def host(t):
    t = t.detach().cpu()
    if t.dtype in (lucid.float16, lucid.bfloat16):
        t = t.float()
    return t.numpy().astype(np.float64)


def rounded(a, dtype):
    """a's values as dtype would hold them (float64 numpy), so the float64 reference sees the same inputs."""
    return torch.tensor(a).to(TORCH_DT[dtype]).double().numpy()


def reference(q, k, v, mask=None, causal=False, keep=None, p=0.0, scale=None):
    """The math formula in float64 torch on CUDA: softmax(scale q k^T + mask) (a fully masked row
    gives zeros), times keep / (1 - p), times v. Arguments are float64 CUDA tensors (mask bool or float)."""
    L, S = q.shape[-2], k.shape[-2]
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale
    allowed = torch.ones(L, S, dtype=torch.bool, device=q.device)
    if causal:
        allowed = allowed.tril()
    if mask is not None and mask.dtype == torch.bool:
        allowed = allowed & mask
    elif mask is not None:
        s = s + mask
    allowed = allowed.expand(s.shape)
    s = s.masked_fill(~allowed, -1e300)
    P = torch.softmax(s, -1) * allowed.any(-1, keepdim=True)
    if keep is not None:
        P = P * keep / (1.0 - p)
    return P @ v


def run_case(dtype, B, H, L, S, E, Ev, mask_kind=None, causal=False, p=0.0, seed=0, full_rows=False, use_torch_sdpa=True):
    rng = np.random.default_rng(seed)
    q, k, v = (rounded(rng.standard_normal(sh), dtype) for sh in ((B, H, L, E), (B, H, S, E), (B, H, S, Ev)))
    g = rounded(rng.standard_normal((B, H, L, Ev)), dtype)
    mask = keep = None
    if mask_kind == "bool":
        mask = rng.random((B, 1, L, S)) > 0.3
        if full_rows:
            mask[:, :, :: max(L // 3, 1), :] = False
        else:
            mask[..., 0] = True
    elif mask_kind == "float":
        mask = rounded(rng.standard_normal((B, H, L, S)), dtype)
    if p > 0:
        keep = rng.random((B, H, L, S)) >= p
    lq, lk, lv = (lucid.tensor(a, dtype=dtype, device="cuda", requires_grad=True) for a in (q, k, v))
    lm = None
    if mask is not None:
        lm = lucid.tensor(mask, device="cuda") if mask.dtype == bool else lucid.tensor(mask, dtype=dtype, device="cuda",
                                                                                        requires_grad=True)
    if keep is not None:
        out = lucid._C._nn_sdpa(lq, lk, lv, lm, lucid.tensor(keep, device="cuda"), p, causal, None)
    else:
        out = F.scaled_dot_product_attention(lq, lk, lv, attn_mask=lm, is_causal=causal)
    out.backward(lucid.tensor(g, dtype=dtype, device="cuda"))

    tq, tk, tv = (torch.tensor(a, device="cuda", requires_grad=True) for a in (q, k, v))
    tm = None
    if mask is not None:
        tm = torch.tensor(mask, device="cuda", requires_grad=mask.dtype != bool)
    if keep is None and not full_rows and use_torch_sdpa:
        ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, is_causal=causal)
    else:
        ref = reference(tq, tk, tv, tm, causal, None if keep is None else torch.tensor(keep, device="cuda"), p)
    ref.backward(torch.tensor(g, device="cuda"))

    ftol, gtol = TOL[dtype]
    np.testing.assert_allclose(host(out), ref.detach().cpu().numpy(), rtol=ftol, atol=ftol, err_msg="out")
    names = ["q", "k", "v"]
    pairs = list(zip((lq, lk, lv), (tq, tk, tv)))
    if mask is not None and mask.dtype != bool:
        names.append("mask")
        pairs.append((lm, tm))
    for n, (a, b) in zip(names, pairs):
        ref_g = b.grad.cpu().numpy()
        scale = max(1.0, float(np.abs(ref_g).max()))
        np.testing.assert_allclose(host(a.grad), ref_g, rtol=gtol, atol=gtol * scale, err_msg=f"grad {n}")


SHAPES = [  # (L, S, E, Ev)
    (1, 1, 1, 1), (17, 17, 64, 64), (130, 130, 64, 64), (17, 130, 80, 80), (130, 17, 128, 128), (33, 65, 64, 32),
    (130, 70, 128, 64), (40, 40, 160, 160), (20, 30, 64, 160),
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_float32_shapes(shape, causal):
    L, S, E, Ev = shape
    run_case(lucid.float32, 2, 3, L, S, E, Ev, causal=causal)


@pytest.mark.parametrize("mask_kind", ["bool", "float"])
@pytest.mark.parametrize("shape", [(17, 130, 64, 64), (130, 17, 80, 80), (65, 65, 128, 128), (9, 9, 160, 160)],
                         ids=lambda s: "x".join(map(str, s)))
def test_sdpa_float32_masks(mask_kind, shape):
    L, S, E, Ev = shape
    run_case(lucid.float32, 2, 2, L, S, E, Ev, mask_kind=mask_kind)


@pytest.mark.parametrize("shape", [(17, 17, 64, 64), (130, 70, 80, 80), (8, 8, 160, 160)], ids=lambda s: "x".join(map(str, s)))
def test_sdpa_fully_masked_rows_are_zeros(shape):
    L, S, E, Ev = shape
    run_case(lucid.float32, 2, 2, L, S, E, Ev, mask_kind="bool", full_rows=True)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(130, 130, 64, 64), (17, 70, 128, 128), (20, 20, 160, 160)], ids=lambda s: "x".join(map(str, s)))
def test_sdpa_dropout_keep_mask(causal, shape):
    L, S, E, Ev = shape
    run_case(lucid.float32, 2, 2, L, S, E, Ev, causal=causal, p=0.3)


@pytest.mark.parametrize("dtype", [lucid.float16, lucid.bfloat16, lucid.float64])
@pytest.mark.parametrize("case", [dict(), dict(causal=True), dict(mask_kind="float"), dict(mask_kind="bool"), dict(p=0.2)],
                         ids=["plain", "causal", "float_mask", "bool_mask", "dropout"])
@pytest.mark.parametrize("shape", [(130, 70, 64, 64), (17, 17, 128, 80)], ids=lambda s: "x".join(map(str, s)))
def test_sdpa_other_dtypes(dtype, case, shape):
    L, S, E, Ev = shape
    run_case(dtype, 2, 2, L, S, E, Ev, **case)


def test_sdpa_causal_l_greater_and_less_than_s_long():
    run_case(lucid.float32, 1, 2, 300, 200, 64, 64, causal=True)
    run_case(lucid.float32, 1, 2, 200, 300, 64, 64, causal=True)


def test_sdpa_gpt2_shape_matches_cpu():
    """The benchmark shape (8 x 12 heads x 512 x 64, causal) against lucid's CPU kernel."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 12, 512, 64)).astype(np.float32) for _ in range(3))
    g = rng.standard_normal((2, 12, 512, 64)).astype(np.float32)
    res = {}
    for d in ("cpu", "cuda"):
        ts = [lucid.tensor(a, device=d, requires_grad=True) for a in (q, k, v)]
        out = F.scaled_dot_product_attention(*ts, is_causal=True)
        out.backward(lucid.tensor(g, device=d))
        res[d] = [host(out)] + [host(t.grad) for t in ts]
    for c, gpu in zip(res["cpu"], res["cuda"]):
        np.testing.assert_allclose(gpu, c, rtol=1e-3, atol=1e-4)


def test_sdpa_nan_input_row_is_nan():
    q = np.random.default_rng(4).standard_normal((1, 1, 5, 64)).astype(np.float32)
    q[0, 0, 2, 3] = np.nan
    outs = {d: host(F.scaled_dot_product_attention(*(lucid.tensor(q, device=d) for _ in range(3)))) for d in ("cpu", "cuda")}
    np.testing.assert_array_equal(np.isnan(outs["cuda"]), np.isnan(outs["cpu"]))
    np.testing.assert_allclose(outs["cuda"], outs["cpu"], rtol=1e-4, atol=1e-5)
