"""lucid.autograd.gradcheck / gradgradcheck: they pass where torch's pass, and catch a wrong
gradient (a custom Function with a deliberately wrong backward) as torch's do."""
import numpy as np
import pytest
import torch

import lucid


def _wrong(lib):
    class Wrong(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x  # the true gradient is 2 * g * x

    return Wrong.apply


@pytest.mark.parametrize("fn", [lambda m, x, y: (x * y).sin().sum(-1), lambda m, x, y: m.matmul(x, y.mT).tanh(),
                                lambda m, x, y: (x.exp() / y.exp().sum(), x - y)])
def test_passes_on_correct_gradients_as_torch(fn):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for lib in (torch, lucid):
        x, y = (lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in (a, b))
        assert lib.autograd.gradcheck(lambda p, q: fn(lib, p, q), (x, y))
        assert lib.autograd.gradgradcheck(lambda p, q: fn(lib, p, q), (x, y))


def test_catches_a_wrong_backward_as_torch():
    for lib in (torch, lucid):
        x = lib.tensor(np.arange(1.0, 4.0), dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="Jacobian mismatch"):
            lib.autograd.gradcheck(_wrong(lib), (x,))
        assert lib.autograd.gradcheck(_wrong(lib), (x,), raise_exception=False) is False
    assert issubclass(lucid.autograd.GradcheckError, RuntimeError)


def test_needs_an_input_requiring_grad():
    for lib in (torch, lucid):
        with pytest.raises(ValueError):
            lib.autograd.gradcheck(lambda x: x * 2, (lib.ones(2, dtype=lib.float64),))
