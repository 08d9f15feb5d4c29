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
