"""max_pool2d's CPU kernel against torch over a table of geometries: padding, stride, dilation and
ceil_mode put windows partly (or, with ceil_mode, wholly) outside the plane, which the kernel
splits into whole-row vector selects for the interior columns and a per-window loop at the
borders. Values and indices must equal torch's exactly, including ties (small integers, so
windows hold equal maxima: the first one wins), NaN (propagates; the last NaN's index) and -inf."""
import itertools

import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F

GEOMETRIES = [  # (H, W, kernel, stride, padding, dilation, ceil_mode)
    (7, 7, 3, 2, 1, 1, False), (112, 112, 3, 2, 1, 1, False), (8, 9, 2, 2, 0, 1, False),
    (9, 8, 3, 1, 1, 1, False), (5, 17, (2, 3), (1, 2), (1, 1), 1, False), (10, 10, 3, 2, 1, 2, False),
    (11, 6, 3, 3, 1, 1, True), (6, 11, (3, 2), (2, 3), (1, 0), (1, 2), True), (4, 4, 4, 1, 2, 1, False),
    (3, 40, 3, 1, 1, 1, False), (13, 13, 5, 2, 2, 1, True), (2, 2, 2, 2, 1, 1, True), (1, 9, 1, 2, 0, 1, False),
]


def sample(kind, shape, rng):
    if kind == "ties":
        return rng.integers(-2, 3, size=shape).astype(np.float32)
    a = rng.standard_normal(shape).astype(np.float32)
    if kind == "specials":
        a[rng.random(shape) < 0.05] = np.nan
        a[rng.random(shape) < 0.05] = -np.inf
        a[rng.random(shape) < 0.05] = np.inf
    if kind == "all_neg_inf":
        a[:] = -np.inf
    return a


@pytest.mark.parametrize("geo,kind", list(itertools.product(GEOMETRIES, ["normal", "ties", "specials", "all_neg_inf"])))
def test_max_pool2d_matches_torch(geo, kind):
    H, W, k, s, p, d, ceil = geo
    a = sample(kind, (2, 3, H, W), np.random.default_rng(H * 131 + W))
    lv, li = F.max_pool2d(lucid.tensor(a), k, s, p, d, ceil_mode=ceil, return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(torch.from_numpy(a), k, s, p, d, ceil_mode=ceil, return_indices=True)
    np.testing.assert_array_equal(lv.numpy(), tv.numpy())
    np.testing.assert_array_equal(li.numpy(), ti.numpy())


@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_max_pool2d_other_dtypes(dtype):
    a = np.random.default_rng(1).standard_normal((1, 2, 12, 10))
    x = lucid.tensor(a).to(getattr(lucid, dtype))
    tx = torch.from_numpy(a).to(getattr(torch, dtype))
    lv, li = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(tx, 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(lv.float().numpy(), tv.float().numpy())
    np.testing.assert_array_equal(li.numpy(), ti.numpy())
