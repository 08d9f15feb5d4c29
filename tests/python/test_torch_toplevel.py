"""torch.* top-level names that are nn.functional ops (lucid/_ops_torch_toplevel.py) and the
torch-level in-place log2_/log10_: the same objects as nn.functional's, and values as torch's."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F

SAME = ["bilinear", "channel_shuffle", "conv3d", "conv_tbc", "conv_transpose3d", "max_pool3d",
        "max_pool1d_with_indices", "pixel_shuffle", "pixel_unshuffle", "rrelu", "rrelu_"]


@pytest.mark.parametrize("name", SAME)
def test_same_object_as_functional(name):
    assert getattr(lucid, name) is getattr(F, name)
    assert hasattr(torch, name)


def test_values_match_torch():
    x = np.random.default_rng(0).standard_normal((2, 8, 4, 4))
    lt, tt = lucid.tensor(x), torch.tensor(x)
    np.testing.assert_allclose(lucid.pixel_shuffle(lt, 2).numpy(), torch.pixel_shuffle(tt, 2).numpy())
    np.testing.assert_allclose(lucid.channel_shuffle(lt, 2).numpy(), torch.channel_shuffle(tt, 2).numpy())
    lo, li = lucid.max_pool1d_with_indices(lt[0], 2)
    to, ti = torch.max_pool1d_with_indices(tt[0], 2)
    np.testing.assert_allclose(lo.numpy(), to.numpy())
    np.testing.assert_array_equal(li.numpy(), ti.numpy())


@pytest.mark.parametrize("name", ["log2_", "log10_"])
def test_torch_level_inplace_log(name):
    x = np.array([0.5, 2.0, 8.0])
    lt, tt = lucid.tensor(x), torch.tensor(x)
    assert getattr(lucid, name)(lt) is lt
    getattr(torch, name)(tt)
    np.testing.assert_allclose(lt.numpy(), tt.numpy(), rtol=1e-15)


@pytest.mark.parametrize("name", ["dropout_", "alpha_dropout_", "feature_dropout", "feature_dropout_",
                                  "feature_alpha_dropout", "feature_alpha_dropout_"])
def test_dropout_family_toplevel_form(name):
    x = np.random.default_rng(1).standard_normal((4, 6, 5)) + 3.0
    for lib in (torch, lucid):
        t = lib.tensor(x)
        out = getattr(lib, name)(t, 0.5, False)  # not training: the input itself, unchanged
        np.testing.assert_array_equal(out.numpy(), x)
    if name.startswith("feature_dropout"):  # whole channels: every (n, c) row all zero or all scaled by 2
        out = getattr(lucid, name)(lucid.tensor(x), 0.5, True).numpy()
        for n in range(4):
            for c in range(6):
                row = out[n, c]
                assert np.all(row == 0) or np.allclose(row, 2 * x[n, c])
    if name == "dropout_":
        t = lucid.tensor(x)
        assert lucid.dropout_(t, 1.0, True) is t and not t.numpy().any()
