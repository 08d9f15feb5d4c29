"""nn.init.dirac_ and the deprecated nn.utils.clip_grad_norm against torch."""
import numpy as np
import pytest
import torch

import lucid


@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 3, 3, 3), 1), ((8, 2, 3, 3), 2), ((4, 6, 1, 3, 3), 2),
                                          ((2, 4, 5, 5), 1)])
def test_dirac_matches_torch(shape, groups):
    l, t = lucid.nn.init.dirac_(lucid.ones(*shape), groups), torch.nn.init.dirac_(torch.ones(*shape), groups)
    np.testing.assert_array_equal(l.numpy(), t.numpy())
    if len(shape) == 4 and groups == 1:  # the identity convolution
        x = np.random.default_rng(0).standard_normal((1, shape[1], 6, 6))
        y = lucid.nn.functional.conv2d(lucid.tensor(x, dtype=lucid.float32), l, padding=shape[-1] // 2)
        n = min(shape[0], shape[1])
        np.testing.assert_allclose(y.numpy()[0, :n], x[0, :n].astype(np.float32), rtol=1e-6)


def test_dirac_bad_input():
    for lib in (torch, lucid):
        with pytest.raises(ValueError):
            lib.nn.init.dirac_(lib.ones(3, 3))
        with pytest.raises(ValueError):
            lib.nn.init.dirac_(lib.ones(3, 3, 3), groups=2)


def test_clip_grad_norm_deprecated_alias():
    for lib in (torch, lucid):
        p = lib.nn.Parameter(lib.ones(4))
        p.grad = lib.full((4,), 3.0)
        with pytest.warns(FutureWarning):
            n = lib.nn.utils.clip_grad_norm([p], 1.0)
        assert abs(float(n) - 6.0) < 1e-6
        np.testing.assert_allclose(p.grad.numpy(), np.full(4, 3.0 / 6.0), rtol=1e-5)
