"""ReLU and ReLU6 of bfloat16 on the CPU run on the 16-bit patterns (backends/cpu/elementwise_loops.h,
bf16_relu_row) instead of widening to float: every one of the 65,536 patterns, dense and strided
(the widened path), eager and compiled, against torch's bfloat16 relu / relu6: the same values,
the same signed zeros, NaN where torch has NaN."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F

PATTERNS = np.arange(65536, dtype=np.uint32).astype(np.uint16)


def _bf16_from_bits(bits):
    return lucid.tensor((bits.astype(np.uint32) << 16).view(np.float32)).to(lucid.bfloat16)


def _bits(t):
    return (t.float().numpy().view(np.uint32) >> 16).astype(np.uint16)


def _check(got_bits, want_bits, what):
    gf = (got_bits.astype(np.uint32) << 16).view(np.float32)
    wf = (want_bits.astype(np.uint32) << 16).view(np.float32)
    nan = np.isnan(wf)
    np.testing.assert_array_equal(np.isnan(gf), nan, err_msg=what)
    bad = np.nonzero((got_bits != want_bits) & ~nan)[0]
    assert bad.size == 0, f"{what}: {bad.size} patterns differ, e.g. {hex(PATTERNS[bad[0]])}: {hex(got_bits[bad[0]])} vs {hex(want_bits[bad[0]])}"


@pytest.mark.parametrize("name", ["relu", "relu6"])
@pytest.mark.parametrize("layout", ["dense", "strided"])
def test_every_bfloat16_pattern_matches_torch(name, layout):
    x = _bf16_from_bits(PATTERNS)
    tx = torch.from_numpy((PATTERNS.astype(np.uint32) << 16).view(np.float32)).to(torch.bfloat16)
    want = getattr(torch.nn.functional, name)(tx)
    want_bits = (want.float().numpy().view(np.uint32) >> 16).astype(np.uint16)
    f = getattr(F, name)
    if layout == "strided":  # every other element of a doubled row: the widened path
        x2 = lucid.stack([x, x], 1).reshape(-1)[::2]
        got = f(x2)
    else:
        got = f(x)
    _check(_bits(got), want_bits, f"{name} eager {layout}")
    if layout == "dense":
        g = lucid.compile(lambda t: f(t))
        _check(_bits(g(x)), want_bits, f"{name} compiled")


def test_in_place_matches_out_of_place():
    """ConvFused runs its ReLU6 in place on the finished output."""
    x = _bf16_from_bits(PATTERNS)
    want = _bits(F.relu6(x))
    y = x.clone()
    F.relu6(y, inplace=True)
    _check(_bits(y), want, "relu6 in place")
