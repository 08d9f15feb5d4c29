"""lucid.nn.utils.clip_grad_norm_ / clip_grad_value_ vs torch."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from lucid.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters

RNG = np.random.default_rng(5)


def pair(shapes):
    arrs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [RNG.standard_normal(s).astype(np.float32) * 3 for s in shapes]
    lp = [nn.Parameter(lucid.tensor(a)) for a in arrs]
    tp = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in arrs]
    for p, g in zip(lp, grads):
        p.grad = lucid.tensor(g)
    for p, g in zip(tp, grads):
        p.grad = torch.from_numpy(g.copy())
    return lp, tp


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (2.0, float("inf")),
                                                (1.5, 3.0)])
def test_clip_grad_norm(max_norm, norm_type):
    lp, tp = pair([(3, 4), (5,), (2, 2, 2)])
    ln = clip_grad_norm_(lp, max_norm, norm_type)
    tn = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
    np.testing.assert_allclose(float(ln.item()), float(tn.item()), rtol=1e-6)
    for a, b in zip(lp, tp):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_nonfinite_error():
    lp, _ = pair([(3,)])
    lp[0].grad = lucid.tensor(np.array([1.0, float("inf"), 0.0], np.float32))
    with pytest.raises(RuntimeError):
        clip_grad_norm_(lp, 1.0, error_if_nonfinite=True)


def test_clip_grad_value():
    lp, tp = pair([(3, 4), (6,)])
    clip_grad_value_(lp, 0.7)
    torch.nn.utils.clip_grad_value_(tp, 0.7)
    for a, b in zip(lp, tp):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_parameters_vector_round_trip():
    lp, tp = pair([(3, 4), (5,)])
    v = parameters_to_vector(lp)
    np.testing.assert_array_equal(v.detach().numpy(), torch.nn.utils.parameters_to_vector(tp).detach().numpy())
    vector_to_parameters(v * 2, lp)
    np.testing.assert_allclose(lp[1].detach().numpy(), 2 * tp[1].detach().numpy())
