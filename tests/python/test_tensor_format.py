"""Tensor.__format__, __index__, __bool__, __float__ and __int__ against torch: f"{loss:.4f}" on a
0-d tensor, the empty spec on any tensor, TypeError for a spec on a multi-dimensional tensor,
integer tensors as indices (range(t), seq[t]), and torch's messages for multi-element tensors."""
import operator

import numpy as np
import pytest
import torch

import lucid


def _both(values, dtype):
    a = np.asarray(values)
    return lucid.tensor(a).to(getattr(lucid, dtype)), torch.from_numpy(a).to(getattr(torch, dtype))


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001  (the test compares exception types with torch's)
        return type(e).__name__, None


@pytest.mark.parametrize("spec", ["", ".4f", ">10.2f", "e", ".3g", "+", "d", "x", "08.3f"])
@pytest.mark.parametrize("values, dtype", [(1.2345678, "float32"), (-3.5, "float64"), (7, "int64"), (True, "bool"),
                                           ([1.5], "float32"), ([1.0, 2.0], "float32"), ([[3]], "int64")])
def test_format_matches_torch(values, dtype, spec):
    lo, to = _both(values, dtype)
    lr, tr = _outcome(lambda: format(lo, spec)), _outcome(lambda: format(to, spec))
    assert lr[0] == tr[0], (lr, tr)
    if tr[0] == "ok" and spec:
        assert lr[1] == tr[1]


def test_fstring_of_loss():
    loss = lucid.nn.functional.mse_loss(lucid.tensor([1.0, 2.0]), lucid.tensor([1.5, 2.5]))
    tloss = torch.nn.functional.mse_loss(torch.tensor([1.0, 2.0]), torch.tensor([1.5, 2.5]))
    assert f"{loss:.4f}" == f"{tloss:.4f}" == "0.2500"


@pytest.mark.parametrize("values, dtype", [(3, "int64"), ([3], "int32"), ([[2]], "uint8"), (True, "bool"),
                                           (3.0, "float32"), ([1, 2], "int64"), ([], "int64")])
def test_index_matches_torch(values, dtype):
    lo, to = _both(values, dtype)
    lr, tr = _outcome(lambda: operator.index(lo)), _outcome(lambda: operator.index(to))
    assert lr == tr
    if tr[0] == "ok":
        assert list(range(lo)) == list(range(to))
        assert [10, 20, 30, 40][lo] == [10, 20, 30, 40][to]


def test_index_error_message():
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        operator.index(lucid.tensor(2.0))


@pytest.mark.parametrize("conv", [bool, float, int])
@pytest.mark.parametrize("values, dtype", [([1.0, 2.0], "float32"), ([], "float32"), ([0.0], "float32"),
                                           (2.7, "float64"), ([[5]], "int64"), ([0, 1], "bool")])
def test_scalar_conversions_match_torch(conv, values, dtype):
    lo, to = _both(values, dtype)
    assert _outcome(lambda: conv(lo)) == _outcome(lambda: conv(to))


def test_conversion_messages_match_torch():
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(lucid.ones(2))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(lucid.ones(0))
    for conv in (float, int):
        with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
            conv(lucid.ones(3))
