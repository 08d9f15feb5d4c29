"""The spatial nn modules added for torch-name breadth against their torch.nn twins
(module_twins): 3-D convolution and transposed convolution, 3-D / adaptive-max / LP / fractional
pooling, max unpooling, and the lazy modules (shape inference at the first call)."""
import copy

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as lnn
import lucid.nn.functional as LF
from devices import DEVICES
from harness import TORCH_IS_REFERENCE, assert_close
from module_twins import RNG, Int, check, flat_outputs, rand


# ---- pooling ------------------------------------------------------------------------------
POOL_CASES = [
    ("MaxPool3d", (2,), {}, (2, 3, 4, 6, 5)),
    ("MaxPool3d", ((2, 3, 2),), {"stride": (1, 2, 2), "padding": (1, 1, 0)}, (1, 2, 5, 7, 6)),
    ("MaxPool3d", (3,), {"stride": 2, "dilation": (1, 2, 1), "ceil_mode": True}, (2, 2, 7, 9, 6)),
    ("MaxPool3d", (2,), {"return_indices": True}, (2, 4, 5, 6)),
    ("AvgPool3d", (2,), {}, (2, 3, 4, 6, 5)),
    ("AvgPool3d", ((3, 2, 2),), {"stride": (2, 1, 2), "padding": (1, 1, 0)}, (1, 2, 5, 7, 6)),
    ("AvgPool3d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False, "ceil_mode": True},
     (2, 2, 6, 7, 8)),
    ("AvgPool3d", (2,), {"divisor_override": 3}, (2, 4, 5, 6)),
    ("AdaptiveAvgPool3d", ((2, 3, 2),), {}, (2, 3, 5, 7, 6)),
    ("AdaptiveAvgPool3d", (3,), {}, (2, 4, 5, 7)),
    ("AdaptiveAvgPool3d", ((None, 2, 1),), {}, (1, 2, 3, 5, 4)),
    ("AdaptiveMaxPool1d", (3,), {}, (2, 3, 8)),
    ("AdaptiveMaxPool1d", (4,), {"return_indices": True}, (3, 9)),
    ("AdaptiveMaxPool2d", ((2, 3),), {}, (2, 3, 7, 8)),
    ("AdaptiveMaxPool2d", (3,), {"return_indices": True}, (2, 3, 7, 8)),
    ("AdaptiveMaxPool3d", ((2, 3, 2),), {}, (2, 3, 5, 7, 6)),
    ("AdaptiveMaxPool3d", (2,), {"return_indices": True}, (2, 3, 5, 7, 6)),
    ("LPPool1d", (2, 3), {}, (2, 3, 9)), ("LPPool1d", (1.5, 2), {"stride": 1}, (2, 3, 7)),
    ("LPPool2d", (2, 2), {}, (2, 3, 6, 5)), ("LPPool2d", (3, (2, 3)), {"stride": (1, 2)}, (2, 3, 6, 7)),
    ("LPPool3d", (2, 2), {}, (2, 3, 4, 6, 5)), ("LPPool3d", (3, (2, 1, 2)), {"stride": 1}, (1, 2, 4, 3, 5)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", POOL_CASES, ids=[f"{c[0]}-{c[2]}" for c in POOL_CASES])
@pytest.mark.parametrize("device", DEVICES)
def test_pooling(name, args, kwargs, shape, device):
    lo = 0.1 if name.startswith("LPPool") else -1.0  # fractional powers of positive inputs, as LPPool is used
    check(lambda lib: getattr(lib.nn, name)(*args, **kwargs), [rand(*shape, lo=lo)], device=device)


@pytest.mark.parametrize("nd,kwargs,shape", [
    (1, {}, (2, 3, 8)), (1, {"stride": 3, "padding": 1}, (2, 3, 10)),
    (2, {}, (2, 3, 6, 8)), (2, {"stride": 1, "padding": 1}, (1, 2, 5, 6)), (2, {}, (3, 6, 4)),
    (3, {}, (2, 2, 4, 6, 4)), (3, {"stride": (1, 2, 2)}, (1, 2, 4, 6, 6)),
])
def test_max_unpool(nd, kwargs, shape):
    k = 2 if nd != 1 or "padding" not in kwargs else 3
    tpool = getattr(torch.nn, f"MaxPool{nd}d")(k, return_indices=True, **kwargs)
    x = torch.from_numpy(rand(*shape))
    values, idx = tpool(x)
    check(lambda lib: getattr(lib.nn, f"MaxUnpool{nd}d")(k, **kwargs), [values.numpy(), Int(idx.numpy())])
    # output_size: the input's own spatial size (with the batch and channel dims, as torch accepts)
    check(lambda lib: getattr(lib.nn, f"MaxUnpool{nd}d")(k, **kwargs), [values.numpy(), Int(idx.numpy())],
          kwargs={"output_size": list(shape) if len(shape) == nd + 2 else list(shape[-nd:])})


def test_max_pool3d_indices_feed_max_unpool3d():
    x = lucid.tensor(rand(2, 2, 4, 6, 4))
    out, idx = LF.max_pool3d(x, 2, return_indices=True)
    tout, tidx = torch.nn.functional.max_pool3d(torch.from_numpy(x.numpy()), 2, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    assert_close(LF.max_unpool3d(out, idx, 2), torch.nn.functional.max_unpool3d(tout, tidx, 2), 0, 0)
    with pytest.raises(ValueError, match="max_unpool2d: argument 'indices' expected the shape"):
        LF.max_unpool2d(lucid.randn(1, 1, 2, 2), lucid.zeros(1, 1, 2, 3, dtype=lucid.int64), 2)


# ---- 3-D convolution ----------------------------------------------------------------------
CONV3D_CASES = [
    ("Conv3d", (2, 4, 3), {}, (2, 2, 5, 6, 5)),
    ("Conv3d", (2, 4, (3, 2, 3)), {"stride": (2, 1, 2), "padding": (1, 0, 2), "dilation": (1, 2, 1)},
     (1, 2, 6, 7, 6)),
    ("Conv3d", (4, 6, 2), {"groups": 2, "bias": False}, (2, 4, 3, 4, 5)),
    ("Conv3d", (2, 3, (2, 3, 4)), {"padding": "same", "dilation": (2, 1, 1)}, (1, 2, 5, 5, 6)),
    ("Conv3d", (2, 3, 3), {"padding": "valid"}, (2, 4, 4, 4)),
    ("Conv3d", (2, 3, 3), {"padding": 1, "padding_mode": "reflect"}, (1, 2, 4, 5, 4)),
    ("Conv3d", (2, 3, 3), {"padding": (1, 2, 1), "padding_mode": "circular"}, (1, 2, 4, 5, 4)),
    ("ConvTranspose3d", (2, 4, 3), {}, (2, 2, 3, 4, 3)),
    ("ConvTranspose3d", (2, 4, (3, 2, 3)), {"stride": (2, 2, 1), "padding": (1, 0, 1), "output_padding": (1, 1, 0)},
     (1, 2, 3, 4, 3)),
    ("ConvTranspose3d", (4, 6, 2), {"stride": 3, "groups": 2, "dilation": (2, 1, 2), "bias": False},
     (2, 4, 2, 3, 2)),
    ("ConvTranspose3d", (3, 2, 2), {"stride": 2}, (3, 2, 3, 2)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", CONV3D_CASES, ids=[f"{c[0]}-{c[2]}" for c in CONV3D_CASES])
@pytest.mark.parametrize("device", DEVICES)
def test_conv3d(name, args, kwargs, shape, device):
    check(lambda lib: getattr(lib.nn, name)(*args, **kwargs), [rand(*shape)], device=device)


def test_conv_transpose3d_output_size_and_errors():
    check(lambda lib: lib.nn.ConvTranspose3d(2, 3, 3, stride=2), [rand(1, 2, 3, 3, 3)],
          kwargs={"output_size": (8, 7, 8)})
    with pytest.raises(ValueError, match="conv3d: argument 'weight' expected a 5-D tensor"):
        LF.conv3d(lucid.randn(1, 2, 3, 3, 3), lucid.randn(2, 2, 3, 3))
    with pytest.raises(ValueError, match="conv3d: input has 3 channels"):
        LF.conv3d(lucid.randn(1, 3, 3, 3, 3), lucid.randn(2, 2, 3, 3, 3))
    with pytest.raises(ValueError, match="conv3d: padded input depth 2 is smaller"):
        LF.conv3d(lucid.randn(1, 2, 2, 3, 3), lucid.randn(2, 2, 3, 1, 1))
    with pytest.raises(ValueError, match="conv_transpose3d: output padding must be smaller"):
        LF.conv_transpose3d(lucid.randn(1, 2, 2, 2, 2), lucid.randn(2, 2, 3, 3, 3), output_padding=1)


# ---- lazy modules -------------------------------------------------------------------------
LAZY_CASES = [
    ("LazyLinear", (4,), {}, (3, 5)), ("LazyLinear", (2,), {"bias": False}, (2, 3, 6)),
    ("LazyConv1d", (4, 3), {"padding": 1}, (2, 3, 7)), ("LazyConv2d", (6, 3), {"stride": 2, "groups": 3}, (2, 3, 7, 6)),
    ("LazyConv3d", (2, 2), {}, (1, 3, 3, 4, 3)), ("LazyConvTranspose1d", (2, 3), {"stride": 2}, (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 2), {"groups": 2, "bias": False}, (2, 4, 3, 3)),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 3, 2, 3, 2)),
    ("LazyBatchNorm1d", (), {}, (6, 3)), ("LazyBatchNorm2d", (), {"momentum": 0.3}, (4, 3, 2, 2)),
    ("LazyBatchNorm3d", (), {"affine": False}, (2, 3, 2, 2, 2)), ("LazyInstanceNorm1d", (), {}, (2, 3, 5)),
    ("LazyInstanceNorm2d", (), {"track_running_stats": False}, (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {"affine": False}, (2, 3, 2, 3, 2)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", LAZY_CASES, ids=[f"{c[0]}-{c[2]}" for c in LAZY_CASES])
def test_lazy_module(name, args, kwargs, shape):
    lm = getattr(lnn, name)(*args, **kwargs).double()
    tm = getattr(torch.nn, name)(*args, **kwargs).double()
    if TORCH_IS_REFERENCE:  # reprs are torch 2.13's (2.11's norms print no bias=)
        assert repr(lm) == repr(tm)
    assert list(lm.state_dict()) == list(tm.state_dict())
    assert lm.has_uninitialized_params()
    copied = copy.deepcopy(lm)
    assert copied.has_uninitialized_params()
    x = rand(*shape)
    lm(lucid.tensor(x))
    tm(torch.from_numpy(x))
    assert type(lm).__name__ == type(tm).__name__  # the eager class, as torch's cls_to_become
    if TORCH_IS_REFERENCE:
        assert repr(lm) == repr(tm)
    for k, v in tm.state_dict().items():  # shapes (and dtypes) inferred as torch's
        assert tuple(lm.state_dict()[k].shape) == tuple(v.shape), k
        assert lm.state_dict()[k].dtype.name == str(v.dtype).replace("torch.", ""), k
    # a checkpoint materialises the placeholders too; then both compute the same
    tm.train()
    check(lambda lib: copied if lib is lucid else tm, [x], train=True, check_repr=False)
    assert type(copied).__name__ == type(tm).__name__


def test_lazy_linear_first_call_initialises_like_linear():
    lucid.manual_seed(1)
    lazy = lnn.LazyLinear(50)
    lazy(lucid.randn(2, 200))
    w = lazy.weight.detach().numpy()
    bound = 1 / np.sqrt(200)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound  # kaiming_uniform_(a=sqrt(5)), as Linear
    assert isinstance(lazy, lnn.Linear) and lazy.in_features == 200
    assert isinstance(lnn.LazyLinear(3).weight, lnn.UninitializedParameter)
    assert isinstance(lnn.LazyBatchNorm1d().running_mean, lnn.UninitializedBuffer)


# ---- fractional max pooling ---------------------------------------------------------------
FRAC_CASES = [
    ("FractionalMaxPool2d", (3,), {"output_size": (5, 6)}, (2, 3, 9, 11)),
    ("FractionalMaxPool2d", ((2, 3),), {"output_size": 7, "return_indices": True}, (2, 2, 9, 9)),
    ("FractionalMaxPool2d", (2,), {"output_ratio": (0.5, 0.7)}, (2, 3, 10, 9)),
    ("FractionalMaxPool2d", (2,), {"output_size": 4}, (3, 9, 8)),
    ("FractionalMaxPool3d", (2,), {"output_size": (3, 4, 5)}, (2, 2, 7, 8, 9)),
    ("FractionalMaxPool3d", ((2, 3, 2),), {"output_size": (6, 5, 3), "return_indices": True}, (1, 2, 8, 8, 9)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", FRAC_CASES, ids=[f"{c[0]}-{c[2]}" for c in FRAC_CASES])
def test_fractional_max_pool(name, args, kwargs, shape):
    """The pseudo-random windows come from _random_samples: given the same samples, the pooling is
    torch's exactly (values, indices, gradients), in float64 and float32 (torch computes the window
    starts in the input's dtype)."""
    nd = 2 if "2d" in name else 3
    batch = shape[:2] if len(shape) == nd + 2 else (1, shape[0])
    u = RNG.random(batch + (nd,))
    for dt in (np.float64, np.float32):
        x = rand(*shape).astype(dt)
        lm = getattr(lnn, name)(*args, **kwargs, _random_samples=lucid.tensor(u.astype(dt)))
        tm = getattr(torch.nn, name)(*args, **kwargs, _random_samples=torch.from_numpy(u.astype(dt)))
        assert list(lm.state_dict()) == list(tm.state_dict()) == ["_random_samples"]
        lx, tx = lucid.tensor(x).requires_grad_(True), torch.from_numpy(x).requires_grad_(True)
        lo, to = flat_outputs(lm(lx)), flat_outputs(tm(tx))
        for a, b in zip(lo, to):
            assert_close(a, b, 0, 0)
        g = RNG.standard_normal(tuple(to[0].shape)).astype(dt)
        (lo[0] * lucid.tensor(g)).sum().backward()
        (to[0] * torch.from_numpy(g)).sum().backward()
        assert_close(lx.grad, tx.grad, 1e-6, 1e-6)


def test_fractional_max_pool_draws_samples_and_checks_arguments():
    x = lucid.randn(2, 3, 10, 10)
    lucid.manual_seed(5)
    a = LF.fractional_max_pool2d(x, 2, output_size=4)
    lucid.manual_seed(5)
    np.testing.assert_array_equal(a.numpy(), LF.fractional_max_pool2d(x, 2, output_size=4).numpy())
    with pytest.raises(ValueError, match="requires specifying either an output size"):
        lnn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        lnn.FractionalMaxPool3d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="fractional_max_pool3d: output_size \\(7, 7, 7\\) with kernel_size"):
        LF.fractional_max_pool3d(lucid.randn(1, 1, 8, 8, 8), 2, output_size=7)
