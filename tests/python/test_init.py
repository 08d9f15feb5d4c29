"""lucid.nn.init vs torch.nn.init: gains, fans, bounds and the statistics of the random
initialisers (the generators differ, so random fills are checked by range / moments), and
torch's default initialisation of each layer."""
import math

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from lucid.nn import init


@pytest.mark.parametrize("nl,param", [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                                      ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None),
                                      ("conv_transpose2d", None), ("leaky_relu", math.sqrt(5))])
def test_calculate_gain(nl, param):
    assert init.calculate_gain(nl, param) == pytest.approx(torch.nn.init.calculate_gain(nl, param), rel=1e-15)


def test_calculate_gain_errors():
    with pytest.raises(ValueError):
        init.calculate_gain("nope")
    with pytest.raises(ValueError):
        init.calculate_gain("leaky_relu", "x")


@pytest.mark.parametrize("shape", [(5, 3), (8, 4, 3, 3), (2, 6, 5), (7, 1, 2, 2, 2)])
def test_fans(shape):
    t = lucid.full(shape, 0.0)
    assert init._calculate_fan_in_and_fan_out(t) == torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
    with pytest.raises(ValueError):
        init._calculate_fan_in_and_fan_out(lucid.full((3,), 0.0))
    with pytest.raises(ValueError):
        init._calculate_correct_fan(t, "fan_avg")


def test_constant_ones_zeros_under_no_grad():
    p = nn.Parameter(lucid.full((3, 2), 5.0))
    assert init.constant_(p, 0.25) is p
    np.testing.assert_array_equal(p.detach().numpy(), np.full((3, 2), 0.25, np.float32))
    init.ones_(p)
    np.testing.assert_array_equal(p.detach().numpy(), np.ones((3, 2), np.float32))
    init.zeros_(p)
    np.testing.assert_array_equal(p.detach().numpy(), np.zeros((3, 2), np.float32))
    assert p.requires_grad and p.is_leaf and p.grad_fn is None


def _bound_check(arr, bound):
    assert arr.min() >= -bound - 1e-7 and arr.max() <= bound + 1e-7
    # a uniform fill uses the range: the extremes come near the bounds
    assert arr.max() > 0.9 * bound and arr.min() < -0.9 * bound


def test_uniform_normal_statistics():
    t = lucid.full((200, 100), 0.0)
    init.uniform_(t, -2.0, 3.0)
    a = t.numpy()
    assert a.min() >= -2.0 and a.max() <= 3.0 and abs(a.mean() - 0.5) < 0.05
    init.normal_(t, 1.0, 0.5)
    a = t.numpy()
    assert abs(a.mean() - 1.0) < 0.01 and abs(a.std() - 0.5) < 0.01


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming_and_xavier_bounds(mode):
    shape = (64, 32, 3, 3)
    t = lucid.full(shape, 0.0)
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
    fan = fan_in if mode == "fan_in" else fan_out
    init.kaiming_uniform_(t, a=math.sqrt(5), mode=mode)
    _bound_check(t.numpy(), math.sqrt(3.0) * torch.nn.init.calculate_gain("leaky_relu", math.sqrt(5)) / math.sqrt(fan))
    init.kaiming_normal_(t, mode=mode, nonlinearity="relu")
    assert abs(t.numpy().std() - math.sqrt(2.0) / math.sqrt(fan)) < 0.02 * math.sqrt(2.0 / fan) * 5
    init.xavier_uniform_(t, gain=2.0)
    _bound_check(t.numpy(), 2.0 * math.sqrt(6.0 / (fan_in + fan_out)))
    init.xavier_normal_(t)
    assert abs(t.numpy().std() - math.sqrt(2.0 / (fan_in + fan_out))) < 0.05 * math.sqrt(2.0 / (fan_in + fan_out))


def test_trunc_normal():
    t = lucid.full((100, 100), 0.0)
    init.trunc_normal_(t, mean=0.5, std=1.0, a=-1.0, b=1.5)
    a = t.numpy()
    assert a.min() >= -1.0 and a.max() <= 1.5
    ref = torch.nn.init.trunc_normal_(torch.zeros(100, 100), mean=0.5, std=1.0, a=-1.0, b=1.5).numpy()
    assert abs(a.mean() - ref.mean()) < 0.03 and abs(a.std() - ref.std()) < 0.03


def test_init_on_parameter_keeps_leaf():
    p = nn.Parameter(lucid.full((4, 4), 0.0))
    init.kaiming_uniform_(p)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None


@pytest.mark.parametrize("name,args", [("Linear", (300, 200)), ("Conv2d", (4, 80, 3)), ("Conv1d", (3, 50, 4)),
                                       ("ConvTranspose2d", (40, 6, 3)), ("Bilinear", (5, 6, 70))])
def test_default_layer_init_bounds_match_torch(name, args):
    lm = getattr(nn, name)(*args)
    tm = getattr(torch.nn, name)(*args)
    if name == "Bilinear":
        bound = 1 / math.sqrt(args[0])
    else:
        bound = 1 / math.sqrt(torch.nn.init._calculate_fan_in_and_fan_out(tm.weight)[0])
    for (n, p), (tn, tp) in zip(lm.named_parameters(), tm.named_parameters()):
        assert n == tn and tuple(p.shape) == tuple(tp.shape)
        a, b = p.detach().numpy(), tp.detach().numpy()
        # torch's default: U(-bound, bound) for weight and bias
        assert np.abs(a).max() <= bound + 1e-7 and np.abs(b).max() <= bound + 1e-7, n
        if a.size >= 1000:
            assert np.abs(a).max() >= 0.95 * bound, n
            assert abs(a.std() - bound / math.sqrt(3)) < 0.05 * bound, n


def test_embedding_and_rnn_default_init():
    e = nn.Embedding(50, 8, padding_idx=3)
    w = e.weight.detach().numpy()
    assert np.all(w[3] == 0) and abs(w.std() - 1.0) < 0.15
    r = nn.LSTM(6, 10)
    for _, p in r.named_parameters():
        assert np.abs(p.detach().numpy()).max() <= 1 / math.sqrt(10) + 1e-6


def test_orthogonal_and_eye():
    for shape in ((6, 4), (3, 8), (4, 2, 3)):
        t = lucid.full(shape, 0.0)
        init.orthogonal_(t, gain=2.0)
        a = t.numpy().reshape(shape[0], -1)
        small = min(a.shape)
        gram = a @ a.T if a.shape[0] == small else a.T @ a
        np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-5)
    e = lucid.full((3, 5), 7.0)
    init.eye_(e)
    np.testing.assert_array_equal(e.numpy(), torch.nn.init.eye_(torch.empty(3, 5)).numpy())
