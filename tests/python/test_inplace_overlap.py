"""In-place ops whose destination and inputs are views of one base, against PyTorch.

Random geometries (as_strided views of one base: slices, steps, permuted dims, broadcast and
expanded dims) are used as the destination and the inputs of in-place binary and unary ops,
copy_, clamp_ and div_ with a rounding mode (lucid computes those two out of place, then
copies) and __setitem__. The rule checked: PyTorch raises <=> lucid raises (PyTorch's "some
elements of the input tensor and the written-to tensor refer to a single memory location" and
"more than one element of the written-to tensor refers to a single memory location"). When
neither raises, lucid's base equals PyTorch's base after the same op with the inputs cloned
first: where PyTorch's check is "too hard" (non-dense views) it reads values it has already
overwritten and its result depends on its iteration order; lucid copies such an input first
(docs/architecture.md, "In-place ops"). When there is no real overlap the two references agree.
"""
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import lucid

N = 512  # base elements: every geometry below fits (at most (4 * 2) ** 3)


def as_view(M, base, g):
    shape, strides, offset = g
    return M.as_strided(base, shape, strides, offset)


@st.composite
def geometry(draw, shape=None, allow_broadcast=False, near=None):
    """A view of the base: a slice with steps of a permuted box, optionally with stride-0 dims."""
    nd = len(shape) if shape is not None else draw(st.integers(1, 3))
    if shape is None:
        shape = [draw(st.integers(1, 4)) for _ in range(nd)]
    shape = list(shape)
    if allow_broadcast:  # a dim of size 1 broadcasts against the destination
        shape = [1 if draw(st.booleans()) and draw(st.booleans()) else s for s in shape]
    steps = [draw(st.integers(1, 2)) for _ in range(nd)]
    order = draw(st.permutations(range(nd)))
    strides = [0] * nd
    acc = 1
    for d in reversed(order):  # box dims of size shape*step, innermost last in `order`
        strides[d] = acc * steps[d]
        acc *= shape[d] * steps[d]
    for d in range(nd):
        if shape[d] > 1 and draw(st.integers(0, 5)) == 0:
            strides[d] = 0  # an expanded dim
    extent = 1 + sum((s - 1) * t for s, t in zip(shape, strides))
    if near is not None and draw(st.booleans()):  # close to another view: overlap is likely
        offset = min(max(near + draw(st.integers(-4, 4)), 0), N - extent)
    else:
        offset = draw(st.integers(0, N - extent))
    return tuple(shape), tuple(strides), offset


def run(M, fn, clone_inputs):
    base = M.arange(float(N), dtype=M.float64)
    try:
        fn(M, base, clone_inputs)
    except RuntimeError as e:
        assert "single memory location" in str(e), str(e)
        return None
    return np.asarray(base.tolist())


def check(fn):
    t = run(torch, fn, False)
    lu = run(lucid, fn, False)
    if t is None:
        event("torch raises")
        assert lu is None, "torch raises, lucid does not"
        return
    assert lu is not None, "lucid raises, torch does not"
    ref = run(torch, fn, True)
    if ref is None:  # only the aliased form is allowed (copy_ of the same data returns early)
        ref = t
    event("torch's in-place result differs from the cloned program" if (t != ref).any() else "no raise")
    np.testing.assert_allclose(lu, ref, rtol=1e-12, atol=0)  # exp_ may differ by an ulp (Sleef)


BINARY = ["add_", "sub_", "mul_", "div_", "lerp_", "copy_", "clamp_", "div_trunc"]
UNARY = ["neg_", "exp_", "abs_", "zero_", "fill_"]

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.data(), st.sampled_from(BINARY))
def test_binary_inplace_on_views_of_one_base(data, op):
    dg = data.draw(geometry(), label="dst")
    sg = data.draw(geometry(shape=dg[0], allow_broadcast=True, near=dg[2]), label="src")

    def fn(M, base, clone):
        dst, src = as_view(M, base, dg), as_view(M, base, sg)
        if clone:
            src = src.clone()
        if op == "lerp_":
            dst.lerp_(src, 0.5)
        elif op == "clamp_":  # lucid's tensor-bound clamp_ computes out of place, then copies
            dst.clamp_(min=src)
        elif op == "div_trunc":
            dst.div_(src, rounding_mode="trunc")
        elif op == "div_":
            dst.div_(src + 1.0)
        else:
            getattr(dst, op)(src)

    check(fn)


@SETTINGS
@given(st.data(), st.sampled_from(UNARY))
def test_unary_inplace_on_views(data, op):
    dg = data.draw(geometry(), label="dst")

    def fn(M, base, clone):
        dst = as_view(M, base, dg)
        if op == "exp_":
            dst.mul_(0.01).exp_()
        elif op == "fill_":
            dst.fill_(3.0)
        else:
            getattr(dst, op)()

    check(fn)


@SETTINGS
@given(st.data())
def test_setitem_with_aliasing_value(data):
    rows, cols = 6, 8  # x is the base's first 48 elements

    def idx_of(draw_data):
        s = []
        for n in (rows, cols):
            if draw_data.draw(st.booleans()):  # the whole dim
                s.append(slice(0, n, 1))
                continue
            a = draw_data.draw(st.integers(0, n - 1))
            b = draw_data.draw(st.integers(a + 1, n))
            s.append(slice(a, b, draw_data.draw(st.integers(1, 2))))
        return tuple(s)

    kind = data.draw(st.sampled_from(["shifted", "view", "scalar_view", "geometry"]))
    if kind == "shifted":  # whole rows (a dense region) and the same rows shifted by k
        n = data.draw(st.integers(1, rows - 1))
        a = data.draw(st.integers(0, rows - n))
        k = data.draw(st.integers(-a, rows - n - a))
        didx = (slice(a, a + n), slice(0, cols))
        vidx = (slice(a + k, a + k + n), slice(0, cols))
    else:
        didx = idx_of(data)
    region = torch.zeros(rows, cols)[didx].shape
    if kind == "view":
        vidx = idx_of(data)
        if torch.zeros(rows, cols)[vidx].shape != region:
            vidx = didx
    elif kind == "geometry":
        vg = data.draw(geometry(shape=region, allow_broadcast=True, near=data.draw(st.integers(0, rows * cols))))

    def fn(M, base, clone):
        x = base[: rows * cols].view(rows, cols)
        if kind in ("shifted", "view"):
            v = x[vidx]
        elif kind == "scalar_view":
            v = x[1, 2]
        else:
            v = as_view(M, base, vg)
        if clone:
            v = v.clone()
        x[didx] = v

    check(fn)


# ---- the cases named in the issue, spelled out ------------------------------------------------

def test_shifted_add_raises():
    x = lucid.arange(8.0)
    with pytest.raises(RuntimeError, match="single memory location"):
        x[1:].add_(x[:-1])
    assert x.tolist() == list(range(8))  # nothing was written


def test_full_overlap_is_fine():
    x = lucid.arange(8.0)
    x.add_(x)
    assert x.tolist() == [2.0 * i for i in range(8)]
    x[:].copy_(x)
    x[:] = x
    assert x.tolist() == [2.0 * i for i in range(8)]


def test_write_into_expanded_view_raises():
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        lucid.ones(1).expand(4).add_(1)
    with pytest.raises(RuntimeError, match="more than one element"):
        lucid.ones(1).expand(4).copy_(lucid.zeros(4))
    with pytest.raises(RuntimeError, match="more than one element"):
        lucid.ones(1).expand(4).uniform_()
    # PyTorch allows writes that store one value per location (fill_, zero_, masked_fill_, tril_).
    assert lucid.ones(1).expand(4).fill_(2.0).tolist() == [2.0] * 4
    x = lucid.ones(1).expand(4)
    x.masked_fill_(lucid.tensor([True, False, False, False]), 0.0)
    assert x.tolist() == [0.0] * 4


def test_partial_overlap_in_index_writes_raises():
    x = lucid.arange(8.0)
    with pytest.raises(RuntimeError, match="single memory location"):
        x[1:] = x[:-1]
    with pytest.raises(RuntimeError, match="single memory location"):
        x[lucid.tensor([1, 2, 3])] = x[:3]
    with pytest.raises(RuntimeError, match="single memory location"):
        x.scatter_(0, lucid.tensor([1, 2, 3]), x[:3])
    x[:4] = x[4:]  # disjoint halves: fine
    assert x.tolist() == [4.0, 5.0, 6.0, 7.0, 4.0, 5.0, 6.0, 7.0]


def test_too_hard_overlap_reads_the_old_values():
    """x[:, 1:] += x[:, :-1] on a 2-D tensor: PyTorch can't classify it (non-dense) and gives a
    running sum along rows; lucid gives the result of the cloned program."""
    x = lucid.arange(16.0).view(4, 4)
    x[:, 1:].add_(x[:, :-1])
    ref = torch.arange(16.0).view(4, 4)
    ref[:, 1:].add_(ref[:, :-1].clone())
    assert x.tolist() == ref.tolist()
