"""The nn modules added for torch-name breadth (padding, distances, shuffles, upsampling, fold,
instance/LRN/sync-batch norms, EmbeddingBag, losses incl. CTC and adaptive softmax, shrink,
threshold and randomized activations, containers, nn.grad, nn.parallel), each against its
torch.nn twin (module_twins): the same constructor arguments, torch's state_dict copied in,
state_dict keys and repr equal, forward outputs and the gradients of inputs and parameters
compared in float64 over a table of constructor arguments; and compiled == eager for a model of
them. 3-D convolution, pooling and lazy modules are in test_nn_spatial_extra.py."""
import copy
import warnings

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as lnn
import lucid.nn.functional as LF
from devices import DEVICES
from harness import assert_close
from module_twins import RNG, Int, check, ints, rand, signs, twins


# ---- padding ------------------------------------------------------------------------------
PAD_CASES = []
for _nd in (1, 2, 3):
    _spatial = (7, 6, 5)[:_nd]
    for _pad in (2, tuple(range(1, 2 * _nd + 1))):
        for _kind in ("Reflection", "Replication", "Circular", "Zero", "Constant"):
            PAD_CASES.append((f"{_kind}Pad{_nd}d", _pad, _spatial))
    PAD_CASES.append((f"ConstantPad{_nd}d", tuple([-1, 2] * _nd), _spatial))


@pytest.mark.parametrize("name,pad,spatial", PAD_CASES, ids=[f"{c[0]}-{c[1]}" for c in PAD_CASES])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("device", DEVICES)
def test_padding(name, pad, spatial, batched, device):
    args = (pad, 0.75) if name.startswith("Constant") else (pad,)
    shape = ((2, 3) if batched else (3,)) + spatial
    check(lambda lib: getattr(lib.nn, name)(*args), [rand(*shape)], device=device)


def test_padding_stores_torch_tuple_and_checks_rank():
    assert lnn.ReflectionPad2d(3).padding == torch.nn.ReflectionPad2d(3).padding
    assert lnn.ZeroPad1d([1, 2]).padding == (1, 2)
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        lnn.CircularPad2d(1)(lucid.randn(5))


# ---- activations --------------------------------------------------------------------------
ACT_CASES = [
    ("Hardshrink", (), {}), ("Hardshrink", (0.3,), {}), ("Softshrink", (), {}), ("Softshrink", (0.2,), {}),
    ("Tanhshrink", (), {}), ("Threshold", (0.1, -2.0), {}), ("Softmax2d", (), {}),
    ("RReLU", (), {}), ("RReLU", (0.05, 0.4), {}),
]


@pytest.mark.parametrize("name,args,kwargs", ACT_CASES, ids=[c[0] + str(c[1]) for c in ACT_CASES])
@pytest.mark.parametrize("device", DEVICES)
def test_activation(name, args, kwargs, device):
    check(lambda lib: getattr(lib.nn, name)(*args, **kwargs), [rand(2, 3, 4, 5)], device=device)


def test_softmax2d_unbatched_and_rank_error():
    check(lambda lib: lib.nn.Softmax2d(), [rand(3, 4, 5)])
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D"):
        lnn.Softmax2d()(lucid.randn(3, 4))


def test_threshold_inplace():
    x = lucid.tensor(rand(4, 5))
    ref = torch.nn.Threshold(0.2, 9.0)(torch.from_numpy(x.numpy()))
    out = lnn.Threshold(0.2, 9.0, inplace=True)(x)
    assert out is x
    assert_close(x, ref, 0, 0)
    assert repr(lnn.Threshold(0.2, 9.0, inplace=True)) == repr(torch.nn.Threshold(0.2, 9.0, inplace=True))


def test_rrelu_training_draws_slopes_from_lucids_generator():
    lower, upper = 0.1, 0.3
    m = lnn.RReLU(lower, upper).train()
    x = lucid.tensor(rand(200, 50)).requires_grad_(True)
    lucid.manual_seed(3)
    y = m(x)
    xn, yn = x.detach().numpy(), y.detach().numpy()
    neg = xn < 0
    np.testing.assert_array_equal(yn[~neg], xn[~neg])
    slope = yn[neg] / xn[neg]
    assert slope.min() >= lower and slope.max() <= upper
    assert slope.std() > 0.03  # drawn per element, not one slope (U(0.1, 0.3) has std 0.058)
    y.backward(lucid.ones_like(y))
    g = x.grad.numpy()
    np.testing.assert_allclose(g[neg], slope, rtol=1e-6)
    np.testing.assert_array_equal(g[~neg], 1.0)
    lucid.manual_seed(3)
    np.testing.assert_array_equal(m(x.detach()).numpy(), yn)  # reproducible under manual_seed
    lucid.manual_seed(4)
    assert not np.array_equal(m(x.detach()).numpy(), yn)


def test_rrelu_inplace_training_and_functional_eval():
    x = lucid.tensor(rand(30, 40))
    before = x.numpy().copy()
    out = LF.rrelu_(x, 0.2, 0.25, training=True)
    assert out is x
    neg = before < 0
    ratio = x.numpy()[neg] / before[neg]
    assert ratio.min() >= 0.2 and ratio.max() <= 0.25
    t = torch.from_numpy(before)
    assert_close(LF.rrelu(lucid.tensor(before), 0.2, 0.25, training=False),
                 torch.nn.functional.rrelu(t, 0.2, 0.25, training=False), 0, 1e-12)


def test_inplace_functional_names():
    x = rand(3, 4)
    for name, args in (("selu_", ()), ("celu_", (0.7,)), ("threshold_", (0.1, 5.0))):
        lx, tx = lucid.tensor(x), torch.from_numpy(x.copy())
        assert getattr(LF, name)(lx, *args) is lx
        getattr(torch.nn.functional, name)(tx, *args)
        assert_close(lx, tx, 1e-12, 1e-12, name)


# ---- distances, shuffles, upsampling, fold ------------------------------------------------
DIST_CASES = [
    ("PairwiseDistance", (), {}, (4, 6)), ("PairwiseDistance", (1.0,), {"keepdim": True}, (4, 6)),
    ("PairwiseDistance", (3.0, 1e-3), {}, (2, 4, 6)), ("CosineSimilarity", (), {}, (4, 6, 3)),
    ("CosineSimilarity", (-1, 1e-6), {}, (4, 6)), ("CosineSimilarity", (0,), {}, (4, 6)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", DIST_CASES)
@pytest.mark.parametrize("device", DEVICES)
def test_distance(name, args, kwargs, shape, device):
    check(lambda lib: getattr(lib.nn, name)(*args, **kwargs), [rand(*shape), rand(*shape)], device=device)


SHUFFLE_CASES = [
    ("PixelShuffle", 2, (2, 8, 3, 4)), ("PixelShuffle", 3, (9, 2, 3)), ("PixelShuffle", 2, (2, 3, 4, 2, 2)),
    ("PixelUnshuffle", 2, (2, 2, 4, 6)), ("PixelUnshuffle", 3, (1, 6, 3)),
    ("ChannelShuffle", 2, (2, 6, 3, 3)), ("ChannelShuffle", 3, (2, 6, 5)),
]


@pytest.mark.parametrize("name,factor,shape", SHUFFLE_CASES)
@pytest.mark.parametrize("device", DEVICES)
def test_shuffle(name, factor, shape, device):
    check(lambda lib: getattr(lib.nn, name)(factor), [rand(*shape)], device=device)


def test_shuffle_errors():
    with pytest.raises(ValueError, match="pixel_shuffle: the channel dim \\(6\\) must be divisible"):
        lnn.PixelShuffle(2)(lucid.randn(1, 6, 2, 2))
    with pytest.raises(ValueError, match="pixel_unshuffle: the height \\(3\\)"):
        lnn.PixelUnshuffle(2)(lucid.randn(1, 1, 3, 4))
    with pytest.raises(ValueError, match="channel_shuffle: the number of channels \\(5\\)"):
        lnn.ChannelShuffle(2)(lucid.randn(1, 5, 3))


UPSAMPLE_CASES = [
    ("Upsample", (), {"scale_factor": 2}), ("Upsample", (), {"size": (5, 7)}),
    ("Upsample", (), {"scale_factor": 1.5, "mode": "bilinear"}),
    ("Upsample", (), {"scale_factor": (2.0, 3.0), "mode": "bilinear", "align_corners": True}),
    ("Upsample", (), {"size": 6, "mode": "bicubic"}), ("UpsamplingNearest2d", (), {"scale_factor": 3}),
    ("UpsamplingBilinear2d", (), {"size": (6, 5)}), ("UpsamplingBilinear2d", (), {"scale_factor": 2}),
]


@pytest.mark.parametrize("name,args,kwargs", UPSAMPLE_CASES, ids=[f"{c[0]}-{c[2]}" for c in UPSAMPLE_CASES])
@pytest.mark.parametrize("device", DEVICES)
def test_upsample(name, args, kwargs, device):
    check(lambda lib: getattr(lib.nn, name)(*args, **kwargs), [rand(2, 3, 4, 3)], device=device)


def test_upsample_1d_linear():
    check(lambda lib: lib.nn.Upsample(scale_factor=2, mode="linear"), [rand(2, 3, 5)])


FOLD_CASES = [((2, 2), {}, (2, 3, 5, 4)), (3, {"padding": 1, "stride": 2}, (1, 2, 7, 6)),
              ((2, 3), {"dilation": (2, 1)}, (2, 2, 6, 6))]


@pytest.mark.parametrize("k,kwargs,shape", FOLD_CASES)
def test_unfold_then_fold(k, kwargs, shape):
    lm, tm = check(lambda lib: lib.nn.Unfold(k, **kwargs), [rand(*shape)])
    cols = tm(torch.from_numpy(rand(*shape))).detach().numpy()
    check(lambda lib: lib.nn.Fold(shape[2:], k, **kwargs), [RNG.standard_normal(cols.shape)])


# ---- normalisation ------------------------------------------------------------------------
INSTANCE_CASES = []
for _n, _shape in (("InstanceNorm1d", (3, 4, 7)), ("InstanceNorm2d", (3, 4, 5, 6)),
                   ("InstanceNorm3d", (2, 4, 3, 4, 5))):
    for _kw in ({}, {"affine": True}, {"track_running_stats": True}, {"affine": True, "track_running_stats": True,
                                                                      "momentum": 0.3, "eps": 1e-3}):
        INSTANCE_CASES.append((_n, _kw, _shape))


@pytest.mark.parametrize("name,kwargs,shape", INSTANCE_CASES, ids=[f"{c[0]}-{c[1]}" for c in INSTANCE_CASES])
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("device", DEVICES)
def test_instance_norm(name, kwargs, shape, train, device):
    lm, tm = check(lambda lib: getattr(lib.nn, name)(4, **kwargs), [rand(*shape, lo=-2, hi=3)], train=train,
                   device=device)
    ls, ts = lm.state_dict(), tm.state_dict()
    for k in ts:  # running statistics (updated in training) equal torch's
        assert_close(ls[k], ts[k], 1e-12, 1e-10, k)


def test_instance_norm_unbatched_and_channel_check():
    check(lambda lib: lib.nn.InstanceNorm1d(4, affine=True), [rand(4, 9)], train=True)
    check(lambda lib: lib.nn.InstanceNorm2d(3, track_running_stats=True), [rand(3, 4, 5)], train=True)
    with pytest.raises(ValueError, match="expected input's size at dim=1 to match num_features \\(4\\)"):
        lnn.InstanceNorm1d(4, affine=True)(lucid.randn(2, 3, 5))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        lnn.InstanceNorm1d(4)(lucid.randn(2, 4, 5, 5))


@pytest.mark.parametrize("size,kwargs,shape", [(3, {}, (2, 7, 5)), (2, {"alpha": 0.1, "beta": 0.5, "k": 2.0},
                                                                     (2, 6, 3, 4)),
                                               (5, {"alpha": 0.3}, (1, 4, 2, 3, 2))])
@pytest.mark.parametrize("device", DEVICES)
def test_local_response_norm(size, kwargs, shape, device):
    check(lambda lib: lib.nn.LocalResponseNorm(size, **kwargs), [rand(*shape)], device=device)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_cross_map_lrn2d(size):
    """Forward equals torch's; torch's hand-written backward is not the gradient of its forward
    (torch.autograd.gradcheck fails on it), so the gradient is checked against central differences
    of torch's forward instead."""
    x = rand(1, 7, 2, 3)
    lm, tm = lnn.CrossMapLRN2d(size, 0.05, 0.7, 1.5), torch.nn.CrossMapLRN2d(size, 0.05, 0.7, 1.5)
    assert repr(lm) == repr(tm)
    lx = lucid.tensor(x).requires_grad_(True)
    y = lm(lx)
    with torch.no_grad():
        assert_close(y, tm(torch.from_numpy(x)), 1e-12, 1e-10)
    g = RNG.standard_normal(x.shape)
    (y * lucid.tensor(g)).sum().backward()
    num = np.zeros_like(x)
    h = 1e-6
    with torch.no_grad():
        for i in np.ndindex(x.shape):
            xp, xm = x.copy(), x.copy()
            xp[i] += h
            xm[i] -= h
            num[i] = ((tm(torch.from_numpy(xp)) - tm(torch.from_numpy(xm))).numpy() * g).sum() / (2 * h)
    np.testing.assert_allclose(lx.grad.numpy(), num, rtol=1e-6, atol=1e-8)


def test_sync_batchnorm_is_batchnorm_in_one_process():
    check(lambda lib: lib.nn.SyncBatchNorm(3, momentum=0.2), [rand(4, 3, 5, 2)], train=True)
    check(lambda lib: lib.nn.SyncBatchNorm(3), [rand(4, 3)], train=False)
    seq = lnn.Sequential(lnn.Conv2d(2, 3, 3), lnn.BatchNorm2d(3), lnn.Sequential(lnn.BatchNorm1d(4)))
    conv = lnn.SyncBatchNorm.convert_sync_batchnorm(seq)
    assert isinstance(conv[1], lnn.SyncBatchNorm) and isinstance(conv[2][0], lnn.SyncBatchNorm)
    assert conv[1].weight is seq[1].weight and conv[1].running_mean is seq[1].running_mean
    assert list(conv.state_dict().keys()) == list(seq.state_dict().keys())
    with pytest.raises(ValueError, match="expected at least 2D input"):
        lnn.SyncBatchNorm(3)(lucid.randn(3))


# ---- EmbeddingBag -------------------------------------------------------------------------
BAG_CASES = [
    ({"mode": "sum"}, (ints(10, 4, 3),), {}),
    ({"mode": "mean"}, (ints(10, 4, 3),), {}),
    ({"mode": "max"}, (ints(10, 4, 3),), {}),
    ({"mode": "mean"}, (ints(10, 9),), {"offsets": np.array([0, 2, 2, 6], dtype=np.int64)}),  # an empty bag
    ({"mode": "max"}, (ints(10, 9),), {"offsets": np.array([0, 3, 5], dtype=np.int64)}),
    ({"mode": "sum", "include_last_offset": True}, (ints(10, 9),),
     {"offsets": np.array([0, 4, 4, 9], dtype=np.int64)}),
    ({"mode": "mean", "padding_idx": 2}, (np.array([[2, 1, 2], [2, 2, 2], [0, 3, 2]], dtype=np.int64),), {}),
    ({"mode": "sum", "padding_idx": -1}, (np.array([9, 1, 9, 3, 4], dtype=np.int64),),
     {"offsets": np.array([0, 2], dtype=np.int64)}),
]


@pytest.mark.parametrize("ctor,inputs,fwd", BAG_CASES, ids=[str(c[0]) + str(list(c[2])) for c in BAG_CASES])
@pytest.mark.parametrize("device", DEVICES)
def test_embedding_bag(ctor, inputs, fwd, device):
    kw = {k: Int(v) for k, v in fwd.items()}
    check(lambda lib: lib.nn.EmbeddingBag(10, 5, **ctor), [Int(a) for a in inputs], kwargs=kw, device=device)


def test_embedding_bag_per_sample_weights_and_from_pretrained():
    w = RNG.standard_normal((6, 3))
    idx = np.array([1, 2, 4, 5, 4, 3], dtype=np.int64)
    off = np.array([0, 1, 4], dtype=np.int64)
    psw = RNG.standard_normal(6)
    lb = lnn.EmbeddingBag.from_pretrained(lucid.tensor(w), freeze=False, mode="sum")
    tb = torch.nn.EmbeddingBag.from_pretrained(torch.from_numpy(w), freeze=False, mode="sum")
    lp, tp = lucid.tensor(psw).requires_grad_(True), torch.from_numpy(psw).requires_grad_(True)
    lo = lb(lucid.tensor(idx), lucid.tensor(off), per_sample_weights=lp)
    to = tb(torch.from_numpy(idx), torch.from_numpy(off), per_sample_weights=tp)
    assert_close(lo, to, 1e-12, 1e-10)
    lo.sum().backward()
    to.sum().backward()
    assert_close(lp.grad, tp.grad, 1e-12, 1e-10)
    assert_close(lb.weight.grad, tb.weight.grad, 1e-12, 1e-10)
    assert repr(lb) == repr(tb)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        LF.embedding_bag(lucid.tensor(idx), lucid.tensor(w), lucid.tensor(off), mode="mean",
                         per_sample_weights=lucid.tensor(psw))
    with pytest.raises(ValueError, match="if input is 2-D, then offsets has to be None"):
        LF.embedding_bag(lucid.tensor(idx.reshape(2, 3)), lucid.tensor(w), lucid.tensor(off))


# ---- losses -------------------------------------------------------------------------------
def _loss_cases():
    n, c = 5, 4
    cases = []
    for red in ("none", "mean", "sum"):
        cases += [
            ("PoissonNLLLoss", {"reduction": red}, [rand(n, c), rand(n, c, lo=0, hi=3)]),
            ("PoissonNLLLoss", {"reduction": red, "log_input": False, "full": True},
             [rand(n, c, lo=0.1, hi=2), Int(RNG.integers(0, 5, (n, c)).astype(np.float64))]),
            ("GaussianNLLLoss", {"reduction": red}, [rand(n, c), rand(n, c), rand(n, c, lo=0.1, hi=2)]),
            ("GaussianNLLLoss", {"reduction": red, "full": True, "eps": 1e-3},
             [rand(n, c), rand(n, c), rand(n, 1, lo=0.1, hi=2)]),
            ("HingeEmbeddingLoss", {"reduction": red, "margin": 0.5}, [rand(n, c), signs(n, c)]),
            ("SoftMarginLoss", {"reduction": red}, [rand(n, c), Int(signs(n, c))]),
            ("MultiLabelSoftMarginLoss", {"reduction": red}, [rand(n, c), (RNG.random((n, c)) < 0.5) * 1.0]),
            ("CosineEmbeddingLoss", {"reduction": red, "margin": 0.2}, [rand(n, c), rand(n, c), Int(signs(n))]),
            ("MarginRankingLoss", {"reduction": red, "margin": 0.1}, [rand(n), rand(n), signs(n)]),
            ("MultiMarginLoss", {"reduction": red}, [rand(n, c), Int(ints(c, n))]),
            ("MultiMarginLoss", {"reduction": red, "p": 2, "margin": 0.7}, [rand(n, c), Int(ints(c, n))]),
            ("MultiLabelMarginLoss", {"reduction": red},
             [rand(n, c), Int(np.array([[3, 0, -1, 1], [1, 2, 3, -1], [0, -1, 2, 2], [-1, 1, 0, 0], [2, 1, 0, 3]],
                                       dtype=np.int64))]),
            ("TripletMarginLoss", {"reduction": red}, [rand(n, c), rand(n, c), rand(n, c)]),
            ("TripletMarginLoss", {"reduction": red, "p": 1.0, "swap": True, "margin": 0.5},
             [rand(n, c), rand(n, c), rand(n, c)]),
            ("TripletMarginWithDistanceLoss", {"reduction": red}, [rand(n, c), rand(n, c), rand(n, c)]),
            ("TripletMarginWithDistanceLoss", {"reduction": red, "swap": True, "margin": 2.0},
             [rand(n, c), rand(n, c), rand(n, c)]),
            ("NLLLoss2d", {"reduction": red}, [rand(2, 3, 4, 5), Int(ints(3, 2, 4, 5))]),
        ]
    return cases


LOSS_CASES = _loss_cases()


@pytest.mark.parametrize("name,kwargs,inputs", LOSS_CASES, ids=[f"{c[0]}-{c[1]}" for c in LOSS_CASES])
@pytest.mark.parametrize("device", DEVICES)
def test_loss(name, kwargs, inputs, device):
    check(lambda lib: getattr(lib.nn, name)(**kwargs), inputs, check_repr=False, device=device)
    assert repr(getattr(lnn, name)(**kwargs)) == repr(getattr(torch.nn, name)(**kwargs))


def test_weighted_losses_hold_weight_as_buffer():
    w = rand(4, lo=0.1, hi=2)
    for name, inputs in (("MultiMarginLoss", [rand(5, 4), Int(ints(4, 5))]),
                         ("MultiLabelSoftMarginLoss", [rand(5, 4), (RNG.random((5, 4)) < 0.5) * 1.0])):
        check(lambda lib: getattr(lib.nn, name)(weight=(lucid if lib is lucid else torch).tensor(w)), inputs,
              check_repr=False)


def test_triplet_with_custom_distance_and_unbatched_multilabel_margin():
    def dist(lib):
        return lambda a, b: 1.0 - lib.nn.functional.cosine_similarity(a, b)
    check(lambda lib: lib.nn.TripletMarginWithDistanceLoss(distance_function=dist(lib)),
          [rand(5, 4), rand(5, 4), rand(5, 4)], check_repr=False)
    check(lambda lib: lib.nn.MultiLabelMarginLoss(), [rand(4), Int(np.array([2, 0, -1, 3], dtype=np.int64))])


def test_loss_argument_errors():
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        lnn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="margin to be greater than 0"):
        lnn.TripletMarginWithDistanceLoss(margin=0.0)
    with pytest.raises(ValueError, match="multilabel_margin_loss: argument 'target' expected the shape"):
        LF.multilabel_margin_loss(lucid.randn(3, 4), lucid.zeros(3, 3, dtype=lucid.int64))
    with pytest.raises(TypeError, match="multilabel_margin_loss: argument 'target' expected an int64"):
        LF.multilabel_margin_loss(lucid.randn(3, 4), lucid.zeros(3, 4))


# ---- containers and wrappers --------------------------------------------------------------
def test_container_rnncellbase_dataparallel():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        c = lnn.Container(fc=lnn.Linear(3, 2), act=lnn.ReLU())
    assert any("nn.Container is deprecated" in str(w.message) for w in rec)
    assert [n for n, _ in c.named_children()] == ["fc", "act"]
    assert issubclass(lnn.RNNCell, lnn.RNNCellBase) and issubclass(lnn.GRUCell, lnn.RNNCellBase)
    lm, tm = twins(lambda lib: lib.nn.DataParallel(lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh())))
    assert list(lm.state_dict().keys()) == ["module.0.weight", "module.0.bias"]
    x = rand(2, 3)
    assert_close(lm(lucid.tensor(x)), tm(torch.from_numpy(x)), 1e-12, 1e-10)


def test_new_modules_deepcopy():
    m = lnn.Sequential(lnn.ReflectionPad2d(1), lnn.InstanceNorm2d(8, affine=True), lnn.PixelShuffle(2))
    m2 = copy.deepcopy(m)
    x = lucid.randn(1, 8, 3, 3)
    np.testing.assert_array_equal(m(x).detach().numpy(), m2(x).detach().numpy())


# ---- compiled == eager --------------------------------------------------------------------
class _ImageNet(lnn.Module):
    """A small model over a sample of the new modules: pads, instance norm, pixel (un)shuffle,
    3-d pooling, LRN, upsampling, a margin loss."""

    def __init__(self):
        super().__init__()
        self.pad = lnn.ReflectionPad2d((1, 2, 1, 0))
        self.conv = lnn.Conv2d(2, 8, 3)
        self.norm = lnn.InstanceNorm2d(8, affine=True, track_running_stats=True)
        self.act = lnn.Hardshrink(0.1)
        self.shuffle = lnn.PixelShuffle(2)
        self.lrn = lnn.LocalResponseNorm(2)
        self.unshuffle = lnn.PixelUnshuffle(2)
        self.zpad = lnn.ZeroPad2d(1)
        self.pool3 = lnn.MaxPool3d((1, 2, 2))
        self.apool = lnn.AdaptiveAvgPool2d(2)
        self.up = lnn.Upsample(scale_factor=2, mode="bilinear")
        self.head = lnn.Linear(8 * 4 * 4, 4)
        self.loss = lnn.MultiMarginLoss()

    def forward(self, x, y):
        h = self.act(self.norm(self.conv(self.pad(x))))
        h = self.unshuffle(self.lrn(self.shuffle(h)))
        h = self.pool3(self.zpad(h).unsqueeze(1)).squeeze(1)
        h = self.up(self.apool(h))
        logits = self.head(h.flatten(1))
        return self.loss(logits, y), logits


def _copy_params(dst, src):
    dst.load_state_dict({k: v.detach().clone() for k, v in src.state_dict().items()})


@pytest.mark.parametrize("train", [True, False])
def test_compiled_model_of_new_modules_equals_eager(train):
    lucid.manual_seed(0)
    eager, model = _ImageNet(), _ImageNet()
    _copy_params(model, eager)
    eager.train(train)
    model.train(train)
    compiled = lucid.compile(model, strict=True)
    for step in range(3):
        x = lucid.tensor(rand(3, 2, 6, 6).astype(np.float32))
        y = lucid.tensor(ints(4, 3))
        loss_e, out_e = eager(x, y)
        loss_c, out_c = compiled(x, y)
        assert_close(out_c, out_e, 1e-6, 1e-5, f"logits step {step}")
        assert_close(loss_c, loss_e, 1e-6, 1e-5, f"loss step {step}")
        loss_e.backward()
        loss_c.backward()
        for (n, p), q in zip(model.named_parameters(), eager.parameters()):
            assert_close(p.grad, q.grad, 1e-6, 1e-4, f"grad of {n} step {step}")
        for (n, b), c in zip(model.named_buffers(), eager.buffers()):
            assert_close(b, c, 1e-6, 1e-5, f"buffer {n} step {step}")  # instance-norm running stats
    assert compiled.cache_info()["eager_only"] == {}


def test_compiled_losses_equal_eager():
    losses = [lnn.TripletMarginLoss(swap=True), lnn.CosineEmbeddingLoss(0.1), lnn.MultiLabelMarginLoss(),
              lnn.HingeEmbeddingLoss(), lnn.SoftMarginLoss(), lnn.PoissonNLLLoss()]

    def total(a, p, n, t, sign, mlm):
        return (losses[0](a, p, n) + losses[1](a, p, sign) + losses[2](a, mlm) + losses[3](a, t)
                + losses[4](p, t) + losses[5](n, t.abs()))

    compiled = lucid.compile(total, strict=True)
    for _ in range(2):
        args = [lucid.tensor(rand(4, 5)) for _ in range(3)] + [lucid.tensor(signs(4, 5)), lucid.tensor(signs(4)),
                                                                  lucid.tensor(np.array([[1, 3, -1, 0, 0]] * 4))]
        assert_close(compiled(*args), total(*args), 1e-12, 1e-12)
    assert compiled.cache_info()["eager_only"] == {}


# ---- CTC ----------------------------------------------------------------------------------
def _ctc_case(lib, logits, targets, il, tl, **kw):
    x = (lucid.tensor(logits) if lib is lucid else torch.from_numpy(logits.copy())).requires_grad_(True)
    conv = (lambda a: lucid.tensor(a)) if lib is lucid else (lambda a: torch.from_numpy(a.copy()))
    lens = [conv(v) if isinstance(v, np.ndarray) else v for v in (il, tl)]
    loss = lib.nn.CTCLoss(**kw)(lib.nn.functional.log_softmax(x, -1), conv(targets), *lens)
    loss.sum().backward()
    return loss, x.grad


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"blank": 5},
                                {"zero_infinity": True, "reduction": "none"}], ids=str)
@pytest.mark.parametrize("layout", ["padded", "concatenated", "tuple_lengths"])
def test_ctc_loss(kw, layout):
    t, n, c = 9, 4, 6
    blank = kw.get("blank", 0)
    labels = [v for v in range(c) if v != blank]
    tl = np.array([3, 1, 0, 5], dtype=np.int64)  # the last one needs 5 + 3 repeats > 8 steps: infeasible
    il = np.array([9, 7, 6, 8], dtype=np.int64)
    padded = RNG.choice(labels, (n, 5)).astype(np.int64)
    padded[3] = labels[0]
    targets = padded if layout == "padded" else np.concatenate([padded[i, :tl[i]] for i in range(n)])
    if not kw.get("zero_infinity") and kw.get("reduction") != "none":
        tl, il = tl[:3], il[:3]  # a finite total: drop the infeasible sample
        padded, n = padded[:3], 3
        targets = padded if layout == "padded" else np.concatenate([padded[i, :tl[i]] for i in range(n)])
    if layout == "tuple_lengths":
        il, tl = tuple(int(v) for v in il), tuple(int(v) for v in tl)
    logits = RNG.standard_normal((t, n, c))
    lo, lg = _ctc_case(lucid, logits, targets, il, tl, **kw)
    to, tg = _ctc_case(torch, logits, targets, il, tl, **kw)
    assert_close(lo, to, 1e-10, 1e-10)
    if np.isfinite(to.detach().numpy()).all():
        assert_close(lg, tg, 1e-10, 1e-9)


def test_ctc_loss_unbatched_and_errors():
    logits = RNG.standard_normal((6, 4))
    lo, lg = _ctc_case(lucid, logits, np.array([1, 2, 2], dtype=np.int64), (6,), (3,))
    to, tg = _ctc_case(torch, logits, np.array([1, 2, 2], dtype=np.int64), (6,), (3,))
    assert_close(lo, to, 1e-10, 1e-10)
    assert_close(lg, tg, 1e-10, 1e-9)
    with pytest.raises(ValueError, match="ctc_loss: argument 'blank' must be in"):
        LF.ctc_loss(lucid.randn(5, 2, 3), lucid.ones(2, 2, dtype=lucid.int64), (5, 5), (2, 2), blank=3)
    with pytest.raises(ValueError, match="ctc_loss: input_lengths and target_lengths must have 2 entries"):
        LF.ctc_loss(lucid.randn(5, 2, 3), lucid.ones(2, 2, dtype=lucid.int64), (5,), (2, 2))


# ---- nn.grad, nn.parallel -----------------------------------------------------------------
@pytest.mark.parametrize("nd,kw", [(1, {"stride": 2, "padding": 1}),
                                   (2, {"stride": (2, 1), "dilation": 2, "groups": 2}), (3, {"padding": 1, "groups": 2})])
def test_nn_grad_conv_input_and_weight(nd, kw):
    x = rand(2, 4, *(7, 6, 5)[:nd])
    w = rand(6, 2, *(3, 2, 2)[:nd])
    tconv = getattr(torch.nn.functional, f"conv{nd}d")
    kw = {"groups": 2} | kw
    go = RNG.standard_normal(tuple(tconv(torch.from_numpy(x), torch.from_numpy(w), **kw).shape))
    lw, tw = lucid.tensor(w).requires_grad_(True), torch.from_numpy(w).requires_grad_(True)
    li = getattr(lnn.grad, f"conv{nd}d_input")(x.shape, lw, lucid.tensor(go), **kw)
    ti = getattr(torch.nn.grad, f"conv{nd}d_input")(x.shape, tw, torch.from_numpy(go), **kw)
    assert_close(li, ti, 1e-12, 1e-10, "input gradient")
    li.square().sum().backward()  # differentiable in the weight, as torch's
    ti.square().sum().backward()
    assert_close(lw.grad, tw.grad, 1e-10, 1e-9, "second order")
    lwg = getattr(lnn.grad, f"conv{nd}d_weight")(lucid.tensor(x), w.shape, lucid.tensor(go), **kw)
    twg = getattr(torch.nn.grad, f"conv{nd}d_weight")(torch.from_numpy(x), w.shape, torch.from_numpy(go), **kw)
    assert_close(lwg, twg, 1e-12, 1e-10, "weight gradient")
    with pytest.raises(ValueError, match="argument 'grad_output' expected shape"):
        getattr(lnn.grad, f"conv{nd}d_weight")(lucid.tensor(x), w.shape, lucid.tensor(go[:1]), **kw)


def test_nn_parallel_namespace():
    m = lnn.Linear(3, 2)
    x = lucid.randn(4, 3)
    np.testing.assert_array_equal(lnn.parallel.data_parallel(m, x).detach().numpy(), m(x).detach().numpy())
    assert lnn.parallel.DataParallel is lnn.DataParallel


# ---- adaptive softmax ---------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{"cutoffs": [3, 7]}, {"cutoffs": [2], "div_value": 2.0, "head_bias": True},
                                {"cutoffs": [4, 6, 9]}], ids=str)
def test_adaptive_log_softmax(kw):
    n_classes, feats = 12, 8

    target = Int(np.array([0, 2, 3, 6, 7, 11, 5, 1, 9, 10], dtype=np.int64))
    lm, tm = check(lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(feats, n_classes, **kw), [rand(10, feats), target])
    x = rand(6, feats)
    assert_close(lm.log_prob(lucid.tensor(x)), tm.log_prob(torch.from_numpy(x)), 1e-12, 1e-10)
    np.testing.assert_array_equal(lm.predict(lucid.tensor(x)).numpy(), tm.predict(torch.from_numpy(x)).numpy())
    out, loss = lm(lucid.tensor(x[0]), lucid.tensor(np.array(4)))
    tout, tloss = tm(torch.from_numpy(x[0]), torch.tensor(4))
    assert_close(out, tout, 1e-12, 1e-10)
    with pytest.raises(RuntimeError, match="Target values should be in \\[0, 11\\]"):
        lm(lucid.tensor(x[:2]), lucid.tensor(np.array([0, 12])))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        lnn.AdaptiveLogSoftmaxWithLoss(feats, n_classes, [5, 3])


def test_adaptive_log_softmax_compiles():
    m = lnn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7])
    compiled = lucid.compile(lambda x, t: m(x, t).loss, strict=True)
    for _ in range(2):
        x, t = lucid.tensor(rand(5, 8).astype(np.float32)), lucid.tensor(ints(12, 5))
        assert_close(compiled(x, t), m(x, t).loss, 1e-6, 1e-6)


def test_zero_width_linear_backward_and_modulelist_repr():
    # a zero-width hidden layer (AdaptiveLogSoftmaxWithLoss makes one for a small in_features)
    check(lambda lib: lib.nn.Sequential(lib.nn.Linear(5, 0), lib.nn.Linear(0, 3)), [rand(2, 4, 5)])
    for build in (lambda lib: lib.nn.ModuleList([lib.nn.ReLU(), lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.ReLU()]),
                  lambda lib: lib.nn.Transformer(8, 2, 2, 3, 16)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert repr(build(lucid)) == repr(build(torch))


def test_composite_bad_input_names_the_op():
    with pytest.raises(ValueError, match="max_pool3d: given input size \\(2, 2, 2\\), the calculated output size"):
        LF.max_pool3d(lucid.randn(1, 1, 2, 2, 2), 3)
    with pytest.raises(ValueError, match="avg_pool3d: pad should be at most half"):
        LF.avg_pool3d(lucid.randn(1, 1, 6, 6, 6), 2, padding=2)
    with pytest.raises(ValueError, match="rrelu: argument 'lower' \\(0.5\\) must be at most 'upper'"):
        LF.rrelu(lucid.randn(3), 0.5, 0.1, training=True)
    with pytest.raises(ValueError, match="pdist: argument 'input' expected a 2-D tensor"):
        LF.pdist(lucid.randn(2, 3, 4))
    with pytest.raises(ValueError, match="grid_sample: argument 'grid' expected shape"):
        LF.grid_sample(lucid.randn(1, 1, 4, 4), lucid.randn(1, 2, 2, 3))
    with pytest.raises(ValueError, match="affine_grid: expected a batch of 2D affine matrices"):
        LF.affine_grid(lucid.randn(1, 3, 3), (1, 1, 4, 4))
    with pytest.raises(TypeError, match="embedding_bag: argument 'input' expected an int64 or int32"):
        LF.embedding_bag(lucid.randn(2, 3), lucid.randn(5, 3))
    with pytest.raises(IndexError, match="index 9 is out of range"):
        LF.embedding_bag(lucid.tensor([[0, 9]]), lucid.randn(5, 3))
    with pytest.raises(ValueError, match="adaptive_max_pool3d: argument 'output_size' expected an int or 3"):
        LF.adaptive_max_pool3d(lucid.randn(1, 1, 4, 4, 4), (2, 2))


def test_random_modules_compiled_draw_eagers_numbers():
    """RReLU and FeatureAlphaDropout in training draw from lucid's generator: compiled, with the
    same seed, they give eager's values (the draws are ops of the trace)."""
    m = lnn.Sequential(lnn.RReLU(0.1, 0.4), lnn.FeatureAlphaDropout(0.3)).train()
    compiled = lucid.compile(m, strict=True)
    x = lucid.tensor(rand(4, 3, 5).astype(np.float32))
    for seed in range(3):
        lucid.manual_seed(seed)
        want = m(x).numpy()
        lucid.manual_seed(seed)
        np.testing.assert_array_equal(compiled(x).numpy(), want)
    assert compiled.cache_info()["eager_only"] == {}
    kept = (m[1](lucid.ones(200, 50, 1)).numpy()[:, :, 0])
    assert len(np.unique(np.round(kept, 6))) == 2  # one draw per (sample, channel): two values
