"""The row kernels of CUDA layer_norm / rms_norm and their backward (backends/cuda/kernels/norm.cu)
against torch in float64 on the same (dtype-rounded) inputs: row widths on both sides of the
warp-per-row / block-per-row switch and of the rows held in registers / re-read switch, widths
that are not a multiple of the 16-byte pack (so the scalar path runs), width 1, wide rows, many
rows (the parameter gradients' column split), float16 / bfloat16 / float32 / float64, strided and misaligned inputs, weights
of another dtype than x, and run-to-run determinism. Skipped without a CUDA device."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F

pytestmark = pytest.mark.skipif(not lucid.cuda.is_available(), reason="no CUDA device")

LUCID_DT = {"float32": lucid.float32, "float64": lucid.float64, "float16": lucid.float16, "bfloat16": lucid.bfloat16}
# Tolerance of values of order 1, per dtype: the 16-bit ones round their outputs; float32 takes
# its statistics in float (as torch's CUDA kernels), not in double as lucid's CPU does.
TOL = {"float32": 3e-5, "float64": 1e-10, "float16": 4e-3, "bfloat16": 3e-2}
TORCH_DEV = "cuda" if torch.cuda.is_available() else "cpu"


def to_np(t):
    t = t.detach().cpu()
    return (t.to(lucid.float64) if t.dtype in (lucid.float16, lucid.bfloat16) else t).numpy().astype(np.float64)


def lucid_in(a, dtype, grad=True):
    """a as a lucid CUDA tensor of dtype (a leaf that takes gradients), and its rounded values."""
    t = lucid.tensor(a).to(LUCID_DT[dtype]).to("cuda")
    if grad:
        t.requires_grad_()
    return t, to_np(t)


def torch64(a, grad=True):
    t = torch.tensor(a, dtype=torch.float64, device=TORCH_DEV)
    return t.requires_grad_() if grad else t


def close(got, want, tol, scale=1.0):
    np.testing.assert_allclose(to_np(got), want.detach().cpu().numpy(), rtol=tol, atol=tol * scale)


def run_case(kind, rows, width, dtype, affine=True, wdtype=None, eps=1e-5, leaf=None, view=None):
    """lucid CUDA forward + backward of kind ('layer' / 'rms') on (rows, width) against torch
    float64. leaf / view: the input is view(x) for a leaf x of shape leaf (a strided input)."""
    rng = np.random.default_rng(width + rows)
    a = rng.standard_normal(leaf or (rows, width)) * 2 + 0.5
    view = view or (lambda t: t)
    x, xv = lucid_in(a, dtype)
    w = b = None
    if affine:
        w, wv = lucid_in(rng.standard_normal(width), wdtype or dtype)
        b, bv = lucid_in(rng.standard_normal(width), wdtype or dtype)
    gy, gv = lucid_in(np.cos(np.arange(rows * width)).reshape(rows, width), dtype, grad=False)
    if kind == "layer":
        y = F.layer_norm(view(x), (width,), w, b, eps=eps)
    else:
        y = F.rms_norm(view(x), (width,), w, eps=eps)
        b = None
    y.backward(gy)
    xt = torch64(xv)
    wt = torch64(wv) if affine else None
    bt = torch64(bv) if affine and kind == "layer" else None
    if kind == "layer":
        yt = torch.nn.functional.layer_norm(view(xt), (width,), wt, bt, eps=eps)
    else:
        yt = torch.nn.functional.rms_norm(view(xt), (width,), wt, eps=eps)
    yt.backward(torch64(gv, grad=False))
    tol = TOL[dtype]
    assert y.dtype == LUCID_DT[dtype] and str(y.device).startswith("cuda")
    close(y, yt, tol)
    close(x.grad, xt.grad, 2 * tol)
    if affine:
        # Sums over the rows: the absolute error grows with their number.
        pt = max(tol, TOL[wdtype or dtype])
        close(w.grad, wt.grad, pt, scale=np.sqrt(rows))
        if bt is not None:
            close(b.grad, bt.grad, pt, scale=np.sqrt(rows))


# Around the kernels' switches: warp rows up to 1024 elements (512 for float64 and widths that
# are not a multiple of the pack), block rows held in registers up to 8192 (4096), wider rows
# re-read.
WIDTHS = [1, 3, 7, 8, 31, 32, 127, 128, 255, 512, 513, 768, 1000, 1023, 1024, 1025, 1026, 2050, 4096, 4097, 8192,
          8196, 12289]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_layer_norm_widths(width, dtype):
    run_case("layer", 37 if width <= 4096 else 5, width, dtype)


@pytest.mark.parametrize("width", [1, 5, 128, 1000, 1024, 1030, 8192])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_rms_norm_widths(width, dtype):
    run_case("rms", 37 if width <= 4096 else 5, width, dtype)


@pytest.mark.parametrize("shape", [(4096, 768), (4100, 64), (65536, 8), (3, 5000)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_many_rows(shape, dtype):
    run_case("layer", *shape, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_no_affine(dtype):
    run_case("layer", 19, 768, dtype, affine=False)
    run_case("rms", 19, 2000, dtype, affine=False)


def test_weights_of_another_dtype():
    # bfloat16 x with float32 (and float64) weights: the parameters are read as float64 copies.
    run_case("layer", 17, 768, "bfloat16", wdtype="float32")
    run_case("layer", 17, 1500, "float32", wdtype="float64")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_strided_and_misaligned_inputs(dtype):
    run_case("layer", 64, 96, dtype, leaf=(64, 97), view=lambda t: t[:, 1:])     # a column slice
    run_case("layer", 40, 768, dtype, leaf=(768, 40), view=lambda t: t.t())      # a transpose
    # Contiguous rows whose data starts one element into the storage: no packed loads.
    run_case("layer", 24, 256, dtype, leaf=(1 + 24 * 256,), view=lambda t: t[1:].reshape(24, 256))
    run_case("rms", 24, 2048, dtype, leaf=(1 + 24 * 2048,), view=lambda t: t[1:].reshape(24, 2048))


def test_matches_the_cpu_in_float32_and_float64():
    rng = np.random.default_rng(5)
    a, w, b = rng.standard_normal((300, 1000)) + 3, rng.standard_normal(1000), rng.standard_normal(1000)
    for dtype, tol in (("float32", 2e-5), ("float64", 1e-12)):
        res = []
        for dev in ("cpu", "cuda"):
            x = lucid.tensor(a).to(LUCID_DT[dtype]).to(dev).requires_grad_()
            wt = lucid.tensor(w).to(LUCID_DT[dtype]).to(dev).requires_grad_()
            bt = lucid.tensor(b).to(LUCID_DT[dtype]).to(dev).requires_grad_()
            y = F.layer_norm(x, (1000,), wt, bt)
            y.backward(lucid.tensor(np.sin(np.arange(a.size)).reshape(a.shape)).to(LUCID_DT[dtype]).to(dev))
            res.append([to_np(t) for t in (y, x.grad, wt.grad, bt.grad)])
        for c, g, scale in zip(res[0], res[1], (1, 1, 20, 20)):
            np.testing.assert_allclose(g, c, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("shape", [(64, 768), (7, 8192), (4096, 128)])
def test_deterministic(shape):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(shape)
    outs = []
    for _ in range(2):
        x = lucid.tensor(a).to(lucid.float32).to("cuda").requires_grad_()
        w = lucid.ones((shape[1],), dtype=lucid.float32, device="cuda").requires_grad_()
        b = lucid.zeros((shape[1],), dtype=lucid.float32, device="cuda").requires_grad_()
        y = F.layer_norm(x, (shape[1],), w, b)
        y.backward(lucid.tensor(np.cos(np.arange(a.size)).reshape(shape)).to(lucid.float32).to("cuda"))
        outs.append([to_np(t) for t in (y, x.grad, w.grad, b.grad)])
    for u, v in zip(*outs):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("training", [False, True])
def test_batch_norm_of_one_channel_backward(training):
    # (N, 1): a per-element layout with P > 1, which the block kernels serve (in eval; training's
    # batch-statistics backward goes to cuDNN where it takes the case).
    rng = np.random.default_rng(9)
    a = rng.standard_normal((16, 1))
    x, xv = lucid_in(a, "float64")
    w, wv = lucid_in(np.array([1.5]), "float64")
    b, bv = lucid_in(np.array([0.25]), "float64")
    rm, rv = np.array([0.1]), np.array([2.0])
    dy = np.arange(16.0).reshape(16, 1)
    F.batch_norm(x, lucid_in(rm, "float64", grad=False)[0], lucid_in(rv, "float64", grad=False)[0], w, b,
                 training=training).backward(lucid_in(dy, "float64", grad=False)[0])
    xt, wt, bt = torch64(xv), torch64(wv), torch64(bv)
    torch.nn.functional.batch_norm(xt, torch64(rm, grad=False), torch64(rv, grad=False), wt, bt,
                                   training=training).backward(torch64(dy, grad=False))
    for g, t in ((x.grad, xt.grad), (w.grad, wt.grad), (b.grad, bt.grad)):
        close(g, t, 1e-10)
