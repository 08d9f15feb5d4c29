"""CUDA kernels of the DNN family: convolutions (cuDNN through cudnn-frontend), pooling (direct
kernels) and batch norm (cuDNN's batch-norm kernels in training, direct kernels otherwise),
checked against torch (on its CUDA device when it has one, else its CPU) and against lucid's own
CPU kernels on the same inputs; never against values taken from the CUDA output.

What the op-spec table cannot show: the ResNet-18 layer shapes, groups/depthwise, dilation, stride,
asymmetric ('same') padding, 1-D convolutions, transposed convolutions with output_padding,
backward input/weight, ConvFused's NaN-preserving ReLU, TF32 on/off (lucid.backends.cudnn),
benchmark and deterministic modes, pooling with ceil_mode/padding/dilation/NaN/ties and index
outputs, batch norm training/eval with the running-stat update, 16-bit and float64 inputs, strided
inputs, parameters of another dtype, empty batches and batches past cuDNN's bound. Skips without a
GPU ("no CUDA device")."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import lucid
import lucid.nn.functional as F
from lucid.backends import cudnn

pytestmark = pytest.mark.skipif(not lucid.cuda.is_available(), reason="no CUDA device")

RNG = np.random.default_rng(12)
TDEV = "cuda" if torch.cuda.is_available() else "cpu"
DT = {"float32": (np.float32, torch.float32, lucid.float32), "float64": (np.float64, torch.float64, lucid.float64),
      "float16": (np.float32, torch.float16, lucid.float16), "bfloat16": (np.float32, torch.bfloat16, lucid.bfloat16)}


@pytest.fixture(autouse=True)
def full_fp32():
    """Both sides in full FP32 (no TF32), restored after each test."""
    saved = (cudnn.allow_tf32, cudnn.benchmark, cudnn.deterministic, torch.backends.cudnn.allow_tf32)
    cudnn.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    yield
    cudnn.allow_tf32, cudnn.benchmark, cudnn.deterministic, torch.backends.cudnn.allow_tf32 = saved


def rand(shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float64)


def lc(a, dtype="float32", device="cuda", grad=False):
    t = lucid.tensor(np.asarray(a, dtype=DT[dtype][0])).to(dtype=DT[dtype][2]).to(device)
    return t.requires_grad_(True) if grad else t


def tc(a, dtype="float32", grad=False):
    t = torch.tensor(np.asarray(a, dtype=np.float64)).to(dtype=DT[dtype][1], device=TDEV)
    return t.requires_grad_(True) if grad else t


def host(t):
    if isinstance(t, torch.Tensor):
        return t.detach().to("cpu", torch.float64).numpy()
    return t.detach().cpu().to(dtype=lucid.float64).numpy()


def close(a, b, tol, exact_nan=True):
    np.testing.assert_allclose(host(a), host(b), rtol=tol, atol=tol, equal_nan=exact_nan)


TOL = {"float32": 2e-4, "float64": 1e-10, "float16": 1e-2, "bfloat16": 6e-2}

# ---- convolutions ---------------------------------------------------------------------------
# ResNet-18's convolution layers (batch 2, spatial sizes as in a 224 input scaled to 64).
RESNET18 = [
    # (C, K, H, kernel, stride, pad)
    (3, 64, 64, 7, 2, 3), (64, 64, 16, 3, 1, 1), (64, 128, 16, 3, 2, 1), (64, 128, 16, 1, 2, 0),
    (128, 128, 8, 3, 1, 1), (128, 256, 8, 3, 2, 1), (128, 256, 8, 1, 2, 0), (256, 256, 4, 3, 1, 1),
    (256, 512, 4, 3, 2, 1), (256, 512, 4, 1, 2, 0), (512, 512, 2, 3, 1, 1),
]


def conv_pair(xs, ws, kw, dtype="float32", bias=False, transposed=False, nsp=2):
    """Forward and backward (input, weight, bias) of one convolution on lucid CUDA and torch."""
    x, w, g = rand(xs), rand(ws, 0.1), None
    b = rand((ws[1] * kw.get("groups", 1) if transposed else ws[0],)) if bias else None
    lf = {(1, False): F.conv1d, (2, False): F.conv2d, (1, True): F.conv_transpose1d, (2, True): F.conv_transpose2d}
    tf = {(1, False): TF.conv1d, (2, False): TF.conv2d, (1, True): TF.conv_transpose1d, (2, True): TF.conv_transpose2d}
    lx, lw = lc(x, dtype, grad=True), lc(w, dtype, grad=True)
    tx, tw = tc(x, dtype, grad=True), tc(w, dtype, grad=True)
    lb = lc(b, dtype, grad=True) if bias else None
    tb = tc(b, dtype, grad=True) if bias else None
    ly = lf[nsp, transposed](lx, lw, lb, **kw)
    ty = tf[nsp, transposed](tx, tw, tb, **kw)
    assert ly.device.type == "cuda"
    close(ly, ty, TOL[dtype])
    g = rand(tuple(ty.shape))
    ly.backward(lc(g, dtype))
    ty.backward(tc(g, dtype))
    close(lx.grad, tx.grad, TOL[dtype])
    close(lw.grad, tw.grad, TOL[dtype] * (4 if dtype in ("float16", "bfloat16") else 1))
    if bias:
        close(lb.grad, tb.grad, TOL[dtype] * 4)
    return ly


@pytest.mark.parametrize("C,K,H,k,s,p", RESNET18)
def test_conv2d_resnet18_layers_forward_and_backward(C, K, H, k, s, p):
    conv_pair((2, C, H, H), (K, C, k, k), dict(stride=s, padding=p))


@pytest.mark.parametrize("kw", [
    dict(groups=4, padding=1), dict(groups=16, padding=1, stride=2),  # depthwise (C = groups)
    dict(dilation=2, padding=2), dict(dilation=(2, 3), padding=(1, 0), stride=(2, 1)),
    dict(padding=(0, 2), stride=(1, 3)), dict(padding="same"), dict(padding="valid"),
])
def test_conv2d_groups_dilation_stride_padding(kw):
    conv_pair((2, 16, 11, 9), (32 if kw.get("groups", 1) != 16 else 16, 16 // kw.get("groups", 1), 3, 3), kw, bias=True)


def test_conv2d_same_padding_even_kernel_is_asymmetric():
    # total padding 3 per dim: 1 before, 2 after (torch's split); explicit zero padding on CUDA
    conv_pair((2, 4, 9, 8), (6, 4, 4, 4), dict(padding="same"), bias=True)
    conv_pair((2, 4, 9, 8), (6, 4, 2, 3), dict(padding="same", dilation=(3, 2)))


def test_conv1d():
    conv_pair((3, 8, 20), (12, 8, 5), dict(stride=2, padding=2, dilation=1), bias=True, nsp=1)
    conv_pair((3, 8, 20), (8, 2, 3), dict(groups=4, padding="same", dilation=2), nsp=1)
    conv_pair((3, 8, 20), (6, 8, 4), dict(padding="same"), nsp=1)


@pytest.mark.parametrize("kw,ws", [
    (dict(stride=2, padding=1, output_padding=1), (8, 6, 3, 3)),
    (dict(stride=(3, 2), padding=(0, 1), output_padding=(2, 1), dilation=(1, 2)), (8, 6, 3, 3)),
    (dict(stride=2, groups=4, output_padding=1), (8, 3, 4, 4)),
])
def test_conv_transpose2d_output_padding(kw, ws):
    conv_pair((2, 8, 7, 6), ws, kw, bias=True, transposed=True)


def test_conv_transpose1d():
    conv_pair((2, 6, 9), (6, 4, 3), dict(stride=3, padding=1, output_padding=2), bias=True, transposed=True, nsp=1)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_conv_16bit(dtype):
    conv_pair((2, 16, 10, 10), (32, 16, 3, 3), dict(padding=1, stride=2), dtype=dtype, bias=True)
    conv_pair((2, 8, 7, 6), (8, 6, 3, 3), dict(stride=2, padding=1, output_padding=1), dtype=dtype, transposed=True)


def test_conv_float64_matches_cpu_or_says_why_not():
    x, w = rand((2, 4, 9, 9)), rand((6, 4, 3, 3))
    want = F.conv2d(lc(x, "float64", "cpu"), lc(w, "float64", "cpu"), padding=1)
    try:
        got = F.conv2d(lc(x, "float64"), lc(w, "float64"), padding=1)
    except NotImplementedError as e:  # cuDNN without a float64 engine for it: a clear error, not a crash
        assert "float64" in str(e) and "cuda" in str(e), str(e)
        return
    close(got, want, 1e-10)


def test_conv_matches_lucid_cpu():
    x, w, b = rand((2, 6, 12, 10)), rand((10, 3, 3, 2)), rand((10,))
    kw = dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
    got = F.conv2d(lc(x), lc(w), lc(b), **kw)
    want = F.conv2d(lc(x, device="cpu"), lc(w, device="cpu"), lc(b, device="cpu"), **kw)
    close(got, want, 2e-4)


def test_conv_strided_input_and_empty_batch():
    x, w = rand((2, 8, 10, 12)), rand((4, 8, 3, 3))
    lx = lc(x).permute(0, 1, 3, 2)[:, :, ::2]  # a non-contiguous view
    got = F.conv2d(lx, lc(w), padding=1)
    close(got, TF.conv2d(tc(x).permute(0, 1, 3, 2)[:, :, ::2], tc(w), padding=1), 2e-4)
    empty = F.conv2d(lc(np.zeros((0, 8, 10, 12))), lc(w), lc(rand((4,))), padding=1)
    assert tuple(empty.shape) == (0, 4, 10, 12)


@pytest.mark.parametrize("act,first", [("relu", False), ("relu", True), ("gelu", False), ("gelu_tanh", True),
                                       ("none", False)])
def test_conv_fused_epilogue_keeps_nan(act, first):
    x, w, b, r = rand((2, 8, 6, 6)), rand((8, 8, 3, 3), 0.2), rand((8,)), rand((2, 8, 6, 6))
    x[0, 1, 2, 3] = np.nan
    ly = lucid._C._conv_fused(lc(x), lc(w), lc(b), lc(r), padding=1, activation=act, residual_first=first)
    f = {"relu": torch.relu, "gelu": TF.gelu, "gelu_tanh": lambda v: TF.gelu(v, approximate="tanh"),
         "none": lambda v: v}[act]
    y = TF.conv2d(tc(x), tc(w), tc(b), padding=1)
    want = f(y + tc(r)) if first else f(y) + tc(r)
    assert np.isnan(host(ly)).sum() == np.isnan(host(want)).sum() > 0  # relu(NaN) stays NaN
    close(ly, want, 2e-4)
    cpu = lucid._C._conv_fused(lc(x, device="cpu"), lc(w, device="cpu"), lc(b, device="cpu"), lc(r, device="cpu"),
                               padding=1, activation=act, residual_first=first)
    close(ly, cpu, 2e-4)


def test_allow_tf32_flag():
    # A long reduction (C*k*k = 4608): TF32 products (10-bit mantissas) miss float64 by about 1e-3
    # relative, full FP32 by about 1e-6. With the flag off the CUDA result must be full FP32.
    x, w = rand((2, 512, 6, 6)), rand((8, 512, 3, 3))
    want = host(F.conv2d(lc(x, "float64", "cpu"), lc(w, "float64", "cpu"), padding=1))
    cudnn.allow_tf32 = False
    fp32 = host(F.conv2d(lc(x), lc(w), padding=1))
    scale = np.abs(want).max()
    assert np.abs(fp32 - want).max() / scale < 1e-5
    cudnn.allow_tf32 = True
    assert cudnn.allow_tf32 is True
    tf32 = host(F.conv2d(lc(x), lc(w), padding=1))
    assert np.abs(tf32 - want).max() / scale < 1e-2


def test_benchmark_and_deterministic_modes():
    x, w = rand((4, 16, 14, 14)), rand((32, 16, 3, 3))
    want = TF.conv2d(tc(x), tc(w), padding=1, stride=2)
    cudnn.benchmark = True
    close(F.conv2d(lc(x), lc(w), padding=1, stride=2), want, 2e-4)
    cudnn.benchmark = False
    cudnn.deterministic = True
    grads = []
    for _ in range(2):
        lw = lc(w, grad=True)
        F.conv2d(lc(x), lw, padding=1, stride=2).sum().backward()
        grads.append(host(lw.grad))
    assert np.array_equal(grads[0], grads[1])


def test_conv_bad_input_raises():
    with pytest.raises(ValueError):
        F.conv2d(lc(rand((1, 3, 5, 5))), lc(rand((4, 2, 3, 3))))  # channel mismatch
    with pytest.raises(RuntimeError):
        F.conv2d(lc(rand((1, 3, 5, 5))), lc(rand((4, 3, 3, 3)), device="cpu"))  # two devices


# ---- pooling --------------------------------------------------------------------------------
def both(fn, x, dtype="float32", **kw):
    """fn on CUDA and on lucid's CPU kernels, same input."""
    return fn(lc(x, dtype), **kw), fn(lc(x, dtype, "cpu"), **kw)


@pytest.mark.parametrize("kw", [
    dict(kernel_size=3, stride=2, padding=1),  # ResNet's stem
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1), ceil_mode=True),
    dict(kernel_size=2),
])
def test_max_pool2d_values_indices_and_grad(kw):
    x = rand((2, 3, 9, 11))
    x[0, 0, 1:4, 1:4] = np.nan  # several NaNs in one window: the last one's index, as the CPU
    x[1, 2, :, :4] = 1.0        # ties: the first maximum's index
    x[1, 1, :3, :3] = -np.inf
    (gv, gi), (cv, ci) = both(lambda t, **k: F.max_pool2d(t, return_indices=True, **k), x, **kw)
    close(gv, cv, 0)
    assert np.array_equal(gi.cpu().numpy(), ci.cpu().numpy())
    tv, ti = TF.max_pool2d(tc(x), return_indices=True, **kw)
    close(gv, tv, 0)
    assert np.array_equal(gi.cpu().numpy(), ti.cpu().numpy())
    y = rand((2, 3, 9, 11))
    lx, tx = lc(y, grad=True), tc(y, grad=True)
    g = rand(tuple(TF.max_pool2d(tx, **kw).shape))
    F.max_pool2d(lx, **kw).backward(lc(g))
    TF.max_pool2d(tx, **kw).backward(tc(g))
    close(lx.grad, tx.grad, 1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_pooling_other_dtypes_match_cpu(dtype):
    x = rand((2, 4, 10, 9))
    for fn in (lambda t: F.max_pool2d(t, 3, 2, 1), lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True),
               lambda t: F.adaptive_avg_pool2d(t, (3, 4)), lambda t: F.adaptive_max_pool2d(t, (4, 3))):
        close(fn(lc(x, dtype)), fn(lc(x, dtype, "cpu")), 1e-12 if dtype == "float64" else TOL[dtype])


@pytest.mark.parametrize("kw", [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=2, padding=(1, 1), ceil_mode=True),
    dict(kernel_size=(3, 2), stride=2, padding=(1, 1), ceil_mode=True, count_include_pad=False),
    dict(kernel_size=3, stride=1, padding=1, divisor_override=5),
    dict(kernel_size=4, stride=3, ceil_mode=True),
])
def test_avg_pool2d_forward_and_backward(kw):
    x = rand((2, 3, 10, 9))
    gy, cy = both(lambda t, **k: F.avg_pool2d(t, **k), x, **kw)
    close(gy, cy, 1e-6)
    close(gy, TF.avg_pool2d(tc(x), **kw), 1e-5)
    lx, tx = lc(x, grad=True), tc(x, grad=True)
    g = rand(tuple(cy.shape))
    F.avg_pool2d(lx, **kw).backward(lc(g))
    TF.avg_pool2d(tx, **kw).backward(tc(g))
    close(lx.grad, tx.grad, 1e-5)


@pytest.mark.parametrize("in_hw,out_hw", [((7, 7), (1, 1)), ((10, 7), (3, 5)), ((3, 3), (5, 4)), ((8, 8), (8, 8))])
def test_adaptive_pools_forward_and_backward(in_hw, out_hw):
    x = rand((2, 3) + in_hw)
    x[0, 0, 0, 0] = np.nan
    close(F.adaptive_avg_pool2d(lc(x), out_hw), TF.adaptive_avg_pool2d(tc(x), out_hw), 1e-5)
    (gv, gi), (cv, ci) = both(lambda t: F.adaptive_max_pool2d(t, out_hw, return_indices=True), x)
    close(gv, cv, 0)
    assert np.array_equal(gi.cpu().numpy(), ci.cpu().numpy())
    tv, ti = TF.adaptive_max_pool2d(tc(x), out_hw, return_indices=True)
    close(gv, tv, 0)
    assert np.array_equal(gi.cpu().numpy(), ti.cpu().numpy())
    y = rand((2, 3) + in_hw)
    for lf, tf in ((F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d), (F.adaptive_max_pool2d, TF.adaptive_max_pool2d)):
        lx, tx = lc(y, grad=True), tc(y, grad=True)
        g = rand((2, 3) + out_hw)
        lf(lx, out_hw).backward(lc(g))
        tf(tx, out_hw).backward(tc(g))
        close(lx.grad, tx.grad, 1e-5)


def test_pool_unbatched_and_strided_input():
    x = rand((3, 12, 10))
    view = lc(x).permute(0, 2, 1)  # non-contiguous [3, 10, 12]
    close(F.max_pool2d(view, 2), TF.max_pool2d(tc(x).permute(0, 2, 1), 2), 0)
    close(F.avg_pool2d(view, 3, 2), TF.avg_pool2d(tc(x).permute(0, 2, 1), 3, 2), 1e-5)


# ---- batch norm -----------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 8, 5, 5), (16, 6), (3, 5, 7)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_updates_running_stats_as_torch(shape, affine):
    C = shape[1]
    x, w, b = rand(shape, 2.0) + 1.5, rand((C,)), rand((C,))
    rm, rv = rand((C,)), np.abs(rand((C,))) + 0.5
    lrm, lrv, trm, trv = lc(rm), lc(rv), tc(rm), tc(rv)
    ly = F.batch_norm(lc(x), lrm, lrv, lc(w) if affine else None, lc(b) if affine else None, training=True,
                      momentum=0.2, eps=1e-4)
    ty = TF.batch_norm(tc(x), trm, trv, tc(w) if affine else None, tc(b) if affine else None, training=True,
                       momentum=0.2, eps=1e-4)
    close(ly, ty, 1e-5)
    close(lrm, trm, 1e-6)
    close(lrv, trv, 1e-6)  # the unbiased batch variance, as torch
    crm, crv = lc(rm, device="cpu"), lc(rv, device="cpu")
    cy = F.batch_norm(lc(x, device="cpu"), crm, crv, lc(w, device="cpu") if affine else None,
                      lc(b, device="cpu") if affine else None, training=True, momentum=0.2, eps=1e-4)
    # cuDNN takes the statistics in float32, lucid's CPU in double: a float32 model of cuDNN's sums
    # (rstd off by 2 ulps) puts the worst element of these shapes at 1.2e-6 of 1 + |y|; torch's own
    # CUDA result is held to 1e-5 above
    close(ly, cy, 5e-6)
    close(lrv, crv, 1e-6)


def test_batch_norm_eval_uses_running_stats():
    x, w, b, rm, rv = rand((4, 8, 3, 3)), rand((8,)), rand((8,)), rand((8,)), np.abs(rand((8,))) + 0.1
    ly = F.batch_norm(lc(x), lc(rm), lc(rv), lc(w), lc(b), training=False)
    close(ly, TF.batch_norm(tc(x), tc(rm), tc(rv), tc(w), tc(b), training=False), 1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_batch_norm_dtypes_match_cpu(dtype):
    x, w, b = rand((4, 6, 5, 5)), rand((6,)), rand((6,))
    rm, rv = lucid.zeros(6, device="cuda"), lucid.ones(6, device="cuda")
    crm, crv = lucid.zeros(6), lucid.ones(6)
    # 16-bit input with float32 parameters and running stats (a module under autocast-style use)
    ly = F.batch_norm(lc(x, dtype), rm, rv, lc(w), lc(b), training=True)
    cy = F.batch_norm(lc(x, dtype, "cpu"), crm, crv, lc(w, device="cpu"), lc(b, device="cpu"), training=True)
    close(ly, cy, 1e-10 if dtype == "float64" else TOL[dtype])
    close(rm, crm, 1e-6)
    close(rv, crv, 1e-6)


def test_batch_norm_module_train_and_backward():
    x = rand((8, 4, 6, 6))
    lm, tm = lucid.nn.BatchNorm2d(4).to("cuda"), torch.nn.BatchNorm2d(4).to(TDEV).double()
    lx, tx = lc(x, grad=True), tc(x, "float64", grad=True)
    for _ in range(3):
        ly, ty = lm(lx), tm(tx)
    close(ly, ty, 1e-5)
    close(lm.running_mean, tm.running_mean, 1e-6)
    close(lm.running_var, tm.running_var, 1e-6)
    g = rand(x.shape)
    ly.backward(lc(g))
    ty.backward(tc(g, "float64"))
    close(lx.grad, tx.grad, 1e-4)
    lm.eval()
    tm.eval()
    close(lm(lx), tm(tx), 1e-5)


# name: (x shape, permutation making x a non-contiguous view or None, x dtype, weight/bias dtype or
# None for affine=False). cuDNN (batch_norm_cudnn.cpp) runs all but the last two, which are the
# cases it does not take and lucid's own kernels run: N past 880801, and an empty batch.
BN_STEPS = {
    "strided_5d": ((3, 4, 5, 3, 2), (0, 1, 4, 3, 2), "float32", "float32"),
    "float64_params": ((4, 6, 3, 5), None, "float32", "float64"),
    "no_affine_2d": ((16, 6), None, "float32", None),
    "float16_x_float32_params": ((4, 6, 5, 5), None, "float16", "float32"),
    "bfloat16": ((4, 6, 5, 5), None, "bfloat16", "bfloat16"),
    "float64": ((3, 5, 4, 4), None, "float64", "float64"),
    "batch_past_cudnn_bound": ((880802, 2), None, "float32", "float32"),
    "empty_batch": ((0, 3, 4), None, "float32", "float32"),
}


def _bn_step(device, case, x, w, b, g):
    """y and the gradients of x (and of weight and bias) of one training-mode batch_norm."""
    _, perm, xdt, pdt = BN_STEPS[case]
    lx = lc(x, xdt, device, grad=True)
    lw, lb = (lc(w, pdt, device, grad=True), lc(b, pdt, device, grad=True)) if pdt else (None, None)
    y = F.batch_norm(lx.permute(*perm) if perm else lx, None, None, lw, lb, training=True, eps=1e-5)
    y.backward(lc(g, xdt, device))
    return [y, lx.grad] + ([lw.grad, lb.grad] if pdt else [])


@pytest.mark.parametrize("case", list(BN_STEPS))
def test_batch_norm_training_step_matches_cpu(case):
    shape, perm, xdt, pdt = BN_STEPS[case]
    x, w, b = rand(shape, 2.0) + 0.5, rand((shape[1],)), rand((shape[1],))
    g = rand(np.empty(shape).transpose(perm).shape if perm else shape)
    got, want = _bn_step("cuda", case, x, w, b, g), _bn_step("cpu", case, x, w, b, g)
    assert [str(t.dtype) for t in got] == [str(t.dtype) for t in want]
    # float32: cuDNN sums in float, the CPU in double (gradients: sums of products over a channel)
    ytol, gtol = (1e-5, 1e-4) if xdt == "float32" else (TOL[xdt], TOL[xdt])
    close(got[0], want[0], ytol)
    for a, e in zip(got[1:], want[1:]):
        close(a, e, gtol)


def test_conv_batch_over_2_31_elements_runs_in_chunks():
    # x has 130 * 64 * 512 * 512 > 2^31 elements (8.7 GB of float32): cuDNN runs in chunks of whole
    # images. Image n holds the value n, so a chunk read at a wrong offset shows in y and in dw.
    N, C, H = 130, 64, 512
    x = lucid.arange(N, device="cuda").to(lucid.float32).reshape(N, 1, 1, 1).expand(N, C, H, H).contiguous()
    w = lucid.ones((2, C, 1, 1), device="cuda").requires_grad_(True)
    y = F.conv2d(x, w)
    for n in (0, 1, 64, 65, N - 1):
        assert np.all(y[n].detach().cpu().numpy() == n * C), n
    y.sum().backward()
    want = H * H * N * (N - 1) / 2  # dw[k, c] = sum over n, h, w of x
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.full((2, C, 1, 1), want), rtol=1e-3)  # 34M-term float32 sums
