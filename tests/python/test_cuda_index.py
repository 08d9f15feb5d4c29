"""CUDA kernels of the indexing, movement and spatial data-movement ops (backends/cuda/kernels/
movement.cu, index.cu, embedding.cu, fold.cu, interpolate.cu), against lucid's CPU kernels and torch.

What the op-spec table cannot show: strided, transposed, sliced and broadcast (stride-0) inputs,
negative and duplicate indices, out-of-range indices raising the CPU's IndexError with the process
still usable afterwards (no device-side assert), in-place forms leaving the destination untouched
when they raise, float16/bfloat16, int32 indices, many-input cat (the batched launch), and
accumulations whose CPU order the CUDA kernel reproduces bit for bit (embedding backward, fold,
pad backward) versus those that use atomics (scatter_add, index_put accumulate, interpolate
backward: compared with a tolerance). Skipped without a GPU."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F

pytestmark = pytest.mark.skipif(not lucid.cuda.is_available(), reason="no CUDA device")

RNG = np.random.default_rng(0)
FLOATS = [lucid.float32, lucid.float64, lucid.float16, lucid.bfloat16]
TORCH_DT = {lucid.float32: torch.float32, lucid.float64: torch.float64, lucid.float16: torch.float16,
            lucid.bfloat16: torch.bfloat16}


def arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def pair(a, dtype=None):
    """The same values as a lucid CPU tensor and a lucid CUDA tensor."""
    c = lucid.tensor(a)
    if dtype is not None:
        c = c.to(dtype)
    return c, c.to("cuda")


def host(t):
    t = t.detach().cpu()
    if t.dtype in (lucid.float16, lucid.bfloat16):
        t = t.float()
    return t.numpy()


def same(cuda_result, cpu_result):
    """CUDA equals CPU to the bit (NaNs in the same places)."""
    assert cuda_result.device.type == "cuda"
    assert cuda_result.dtype == cpu_result.dtype
    assert tuple(cuda_result.shape) == tuple(cpu_result.shape)
    np.testing.assert_array_equal(host(cuda_result), host(cpu_result))


def close(cuda_result, cpu_result, rtol=1e-5, atol=1e-6):
    assert cuda_result.device.type == "cuda"
    assert cuda_result.dtype == cpu_result.dtype
    np.testing.assert_allclose(host(cuda_result), host(cpu_result), rtol=rtol, atol=atol)


def still_usable():
    """After an error the CUDA context is fine: a fresh op runs and reads back."""
    x = lucid.tensor(np.arange(6, dtype=np.float32)).to("cuda")
    np.testing.assert_array_equal(host(lucid.flip(x, [0]) + 1), np.arange(6, dtype=np.float32)[::-1] + 1)


# ---- movement -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + [lucid.int64, lucid.int32, lucid.uint8, lucid.bool])
def test_cat_dtypes_dims_and_strided_inputs(dtype):
    a, b, c = arr(3, 4, 5), arr(3, 2, 5), arr(5, 3, 4)
    ca, ga = pair(a, dtype)
    cb, gb = pair(b, dtype)
    cc, gc = pair(c, dtype)
    cct, gct = cc.permute(1, 2, 0)[:, :, ::2], gc.permute(1, 2, 0)[:, :, ::2]  # [3, 4, 3], strided
    same(lucid.cat([ga, gb], 1), lucid.cat([ca, cb], 1))
    same(lucid.cat([ga, gct, ga], 2), lucid.cat([ca, cct, ca], 2))
    same(lucid.cat([ga, ga], 0), lucid.cat([ca, ca], 0))
    same(lucid.cat([ga, ga], -1), lucid.cat([ca, ca], -1))


def test_cat_many_inputs_and_empty_ones():
    xs = [arr(2, int(RNG.integers(0, 4)), 3) for _ in range(75)]  # more than one batch of 32
    empty = np.zeros((0,), np.float32)  # 1-D empty tensors are skipped, as torch
    cpu = [lucid.tensor(x) for x in xs] + [lucid.tensor(empty)]
    gpu = [t.to("cuda") for t in cpu]
    same(lucid.cat(gpu, 1), lucid.cat(cpu, 1))
    np.testing.assert_array_equal(host(lucid.cat(gpu, 1)), torch.cat([torch.from_numpy(x) for x in xs], 1).numpy())


def test_cat_mixed_dtypes_promotes_as_cpu():
    ca, ga = pair(arr(2, 3))
    cb, gb = pair(np.arange(6).reshape(2, 3))
    same(lucid.cat([gb, ga], 0), lucid.cat([cb, ca], 0))


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.bfloat16, lucid.int64])
def test_flip_roll_repeat_tril_triu(dtype):
    c, g = pair(arr(4, 5, 6), dtype)
    ct, gt = c.transpose(0, 2), g.transpose(0, 2)
    same(lucid.flip(gt, [0, 2]), lucid.flip(ct, [0, 2]))
    same(lucid.roll(gt, [2, -7], [0, 1]), lucid.roll(ct, [2, -7], [0, 1]))
    same(gt.repeat(2, 1, 3), ct.repeat(2, 1, 3))
    same(gt.repeat(2, 1, 1, 2), ct.repeat(2, 1, 1, 2))
    for k in (-2, 0, 1, 7):
        same(lucid.tril(gt, k), lucid.tril(ct, k))
        same(lucid.triu(gt, k), lucid.triu(ct, k))
    x = g.clone()
    x.tril_(1)
    same(x, lucid.tril(c, 1))
    np.testing.assert_array_equal(host(lucid.triu(g, 1)), torch.triu(torch.from_numpy(host(g)), 1).numpy())


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float16, lucid.float64])
def test_pad_and_its_backward(mode, dtype):
    a = arr(2, 3, 6, 7)
    c, g = pair(a, dtype)
    pad = [2, 1, 3, 2]
    kw = {"value": 1.5} if mode == "constant" else {}
    same(F.pad(g.transpose(2, 3), pad, mode=mode, **kw), F.pad(c.transpose(2, 3), pad, mode=mode, **kw))
    cr = lucid.tensor(a).to(dtype).requires_grad_(True)
    gr = lucid.tensor(a).to(dtype).to("cuda").requires_grad_(True)
    w = arr(2, 3, 11, 10)
    F.pad(cr, pad, mode=mode, **kw).backward(lucid.tensor(w).to(dtype))
    F.pad(gr, pad, mode=mode, **kw).backward(lucid.tensor(w).to(dtype).to("cuda"))
    same(gr.grad, cr.grad)  # the CPU's order of additions, so the CPU's bits


def test_slice_scatter_diagonal_and_unfold_backward():
    a = arr(5, 6)
    cr = lucid.tensor(a).requires_grad_(True)
    gr = lucid.tensor(a).to("cuda").requires_grad_(True)
    for x in (cr, gr):
        y = x.diagonal(1).sum() * 2 + x.unfold(1, 3, 2).pow(2).sum() + x[1:4, ::2].sum()
        y.backward()
    same(gr.grad, cr.grad)
    c, g = pair(a)
    cv, gv = pair(arr(2, 6))
    same(lucid.slice_scatter(g, gv, 0, 1, 5, 2), lucid.slice_scatter(c, cv, 0, 1, 5, 2))
    cs, gs = pair(arr(3))
    same(lucid.as_strided_scatter(g, gs, (3,), (7,), 1), lucid.as_strided_scatter(c, cs, (3,), (7,), 1))
    same(lucid.slice_scatter(g, g[3:5], 0, 0, 2), lucid.slice_scatter(c, c[3:5], 0, 0, 2))


# ---- gather / scatter -----------------------------------------------------------------------
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_gather_scatter_strided(index_dtype):
    a = arr(6, 5)
    c, g = pair(a)
    idx = RNG.integers(0, 6, size=(4, 5)).astype(index_dtype)
    ci, gi = pair(idx)
    ct, gt = c.t(), g.t()  # [5, 6] strided
    same(lucid.gather(gt, 1, gi.t()), lucid.gather(ct, 1, ci.t()))
    same(lucid.gather(g, 0, gi), lucid.gather(c, 0, ci))
    src = arr(4, 5)
    cs, gs = pair(src)
    # scatter_add: duplicates add up (atomics: order unspecified, so compare with a tolerance)
    close(lucid.scatter_add(g, 0, gi, gs), lucid.scatter_add(c, 0, ci, cs))
    want = torch.from_numpy(a).scatter_add(0, torch.from_numpy(idx.astype(np.int64)), torch.from_numpy(src))
    np.testing.assert_allclose(host(lucid.scatter_add(g, 0, gi, gs)), want.numpy(), rtol=1e-5, atol=1e-6)


def test_scatter_without_duplicates_matches_and_broadcast_input():
    a = arr(4, 6)
    perm = np.stack([RNG.permutation(4) for _ in range(6)], 1)  # no duplicate per column
    ci, gi = pair(perm)
    cs, gs = pair(arr(4, 6))
    c, g = pair(a)
    same(lucid.scatter(g, 0, gi, gs), lucid.scatter(c, 0, ci, cs))
    x = g.clone()
    x.scatter_(0, gi, gs)
    same(x, lucid.scatter(c, 0, ci, cs))
    # the gather VJP scatters into an expanded zero (stride 0)
    cr = lucid.tensor(a).requires_grad_(True)
    gr = lucid.tensor(a).to("cuda").requires_grad_(True)
    lucid.gather(cr, 0, ci).sum().backward()
    lucid.gather(gr, 0, gi).sum().backward()
    same(gr.grad, cr.grad)  # small integers in float: exact in any order


@pytest.mark.parametrize("dtype", [lucid.float16, lucid.bfloat16, lucid.int64, lucid.int32, lucid.uint8, lucid.int8,
                                   lucid.bool, lucid.float64])
def test_scatter_add_every_dtype(dtype):
    # Small integers: exact in every dtype and every order, so the atomics must equal the CPU.
    a = RNG.integers(0, 3, size=(5, 7)).astype(np.float32)
    src = RNG.integers(0, 3, size=(9, 7)).astype(np.float32)
    idx = RNG.integers(0, 5, size=(9, 7))
    c, g = pair(a, dtype)
    cs, gs = pair(src, dtype)
    ci, gi = pair(idx)
    same(lucid.scatter_add(g, 0, gi, gs), lucid.scatter_add(c, 0, ci, cs))


@pytest.mark.parametrize("op", ["gather", "scatter", "scatter_add", "scatter_"])
@pytest.mark.parametrize("bad", [6, -1, 2**40])
def test_gather_scatter_out_of_range_raises_and_leaves_the_process_usable(op, bad):
    c, g = pair(arr(6, 5))
    idx = np.zeros((2, 5), np.int64)
    idx[1, 3] = bad
    ci, gi = pair(idx)
    cs, gs = pair(arr(2, 5))
    before = host(g)
    for x, i, s in ((c, ci, cs), (g, gi, gs)):
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for dimension 0 with size 6"):
            if op == "gather":
                lucid.gather(x, 0, i)
            elif op == "scatter_":
                x.scatter_(0, i, s)
            else:
                getattr(lucid, op)(x, 0, i, s)
    np.testing.assert_array_equal(host(g), before)  # nothing written
    still_usable()


# ---- advanced indexing ----------------------------------------------------------------------
def test_index_gather_negative_broadcast_and_strided():
    a = arr(5, 6, 7)
    c, g = pair(a)
    i0 = np.array([[0, -1], [4, 2]])
    i1 = np.array([3, -6])
    ci0, gi0 = pair(i0)
    ci1, gi1 = pair(i1.astype(np.int32))
    same(g[gi0, :, gi1], c[ci0, :, ci1])  # non-adjacent: the index dims go first
    same(g[:, gi0, gi1], c[:, ci0, ci1])
    ct, gt = c.permute(2, 0, 1)[::2], g.permute(2, 0, 1)[::2]
    same(gt[:, gi0], ct[:, ci0])  # [4, 5, 6] strided
    np.testing.assert_array_equal(host(g[gi0, :, gi1]), torch.from_numpy(a)[torch.from_numpy(i0), :, torch.from_numpy(i1)].numpy())


def test_boolean_mask_indexing():
    # The mask's nonzero positions are counted on the host (ops/index_ops.cpp's nonzero_indices),
    # then gathered / written on the device by IndexGather / IndexPut.
    c, g = pair(arr(5, 6))
    same(g[g > 0], c[c > 0])
    x, y = g.clone(), c.clone()
    x[x < 0] = 0.0
    y[y < 0] = 0.0
    same(x, y)


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float16, lucid.bfloat16, lucid.int64, lucid.bool])
def test_index_put_accumulate_with_duplicates(dtype):
    a = RNG.integers(0, 3, size=(6, 4)).astype(np.float32)
    idx = np.array([1, 3, 1, -1, 1])
    v = RNG.integers(0, 3, size=(5, 4)).astype(np.float32)
    c, g = pair(a, dtype)
    ci, gi = pair(idx)
    cv, gv = pair(v, dtype)
    same(lucid.index_put(g, (gi,), gv, True), lucid.index_put(c, (ci,), cv, True))  # small integers: exact
    x = g.clone()
    x.index_put_((gi,), gv, accumulate=True)
    same(x, lucid.index_put(c, (ci,), cv, True))


def test_index_put_without_duplicates_scalar_value_and_float_sums():
    a = arr(6, 4)
    c, g = pair(a)
    ci, gi = pair(np.array([0, -2, 5]))
    cv, gv = pair(arr(3, 4))
    same(lucid.index_put(g, (gi,), gv, False), lucid.index_put(c, (ci,), cv, False))
    x, y = g.clone(), c.clone()
    x[gi] = 2.5
    y[ci] = 2.5
    same(x, y)
    x[:, 1:3] = gv[:, :2].sum()  # a 0-d CUDA value
    y[:, 1:3] = cv[:, :2].sum()
    close(x, y)
    dup = np.array([2, 2, 2, 0])
    cd, gd = pair(dup)
    cv2, gv2 = pair(arr(4, 4))
    close(lucid.index_put(g, (gd,), gv2, True), lucid.index_put(c, (cd,), cv2, True))
    # duplicates without accumulate: one of the values is stored (unspecified which, as torch)
    r = host(lucid.index_put(g, (gd,), gv2, False))[2]
    assert any(np.array_equal(r, row) for row in host(gv2)[:3])


@pytest.mark.parametrize("bad", [6, -7])
def test_index_out_of_range_raises_and_leaves_the_destination_untouched(bad):
    c, g = pair(arr(6, 4))
    idx = np.array([0, bad, 1])
    ci, gi = pair(idx)
    for x, i in ((c, ci), (g, gi)):
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for dimension 0 with size 6"):
            x[i]
    before = host(g)
    for x, i in ((c, ci), (g, gi)):
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for dimension 0 with size 6"):
            x[i] = 1.0
    np.testing.assert_array_equal(host(g), before)
    with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 4"):
        g[:, lucid.tensor(np.array([4])).to("cuda")]
    still_usable()


def test_max_dim_backward_index_mask():
    a = arr(4, 5, 3)
    for dim in (0, 1, 2):
        cr = lucid.tensor(a).requires_grad_(True)
        gr = lucid.tensor(a).to("cuda").requires_grad_(True)
        cr.max(dim)[0].sum().backward()
        gr.max(dim)[0].sum().backward()
        same(gr.grad, cr.grad)


# ---- embedding ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float16, lucid.bfloat16, lucid.float64])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_forward_and_backward_give_the_cpu_bits(dtype, padding_idx):
    w = arr(10, 17)
    idx = RNG.integers(0, 10, size=(6, 40))
    idx[0, :5] = 3  # many repeats, the padding index among them
    ci, gi = pair(idx)
    cw = lucid.tensor(w).to(dtype).requires_grad_(True)
    gw = lucid.tensor(w).to(dtype).to("cuda").requires_grad_(True)
    cy = F.embedding(ci, cw, padding_idx=padding_idx)
    gy = F.embedding(gi, gw, padding_idx=padding_idx)
    same(gy, cy)
    gout = arr(6, 40, 17)
    cy.backward(lucid.tensor(gout).to(dtype))
    gy.backward(lucid.tensor(gout).to(dtype).to("cuda"))
    same(gw.grad, cw.grad)  # sorted runs summed in position order: the CPU's bits
    tw = torch.tensor(w, dtype=TORCH_DT[dtype], requires_grad=True)
    torch.nn.functional.embedding(torch.from_numpy(idx), tw, padding_idx=padding_idx).backward(
        torch.tensor(gout, dtype=TORCH_DT[dtype]))
    # torch's CPU sums 16-bit gradients in their own type (lucid in float): a loose bound
    tol = {lucid.float32: 1e-5, lucid.float64: 1e-5, lucid.float16: 5e-2, lucid.bfloat16: 2e-1}[dtype]
    np.testing.assert_allclose(host(gw.grad), tw.grad.float().numpy(), rtol=tol, atol=tol)


def test_embedding_strided_int32_indices_and_out_of_range():
    w = arr(8, 4)
    cw, gw = pair(w)
    idx = RNG.integers(0, 8, size=(5, 6)).astype(np.int32)
    ci, gi = pair(idx)
    same(F.embedding(gi.t(), gw.t().t()), F.embedding(ci.t(), cw))
    for x, i in ((cw, lucid.tensor(np.array([1, 8]))), (gw, lucid.tensor(np.array([1, 8])).to("cuda"))):
        with pytest.raises(IndexError, match=r"index 8 is out of range for 8 embeddings \(valid indices are 0..7\)"):
            F.embedding(i, x)
    for x, i in ((cw, lucid.tensor(np.array([-1]))), (gw, lucid.tensor(np.array([-1])).to("cuda"))):
        with pytest.raises(IndexError, match="index -1 is out of range"):
            F.embedding(i, x)
    still_usable()


# ---- fold / unfold --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float16, lucid.float64])
def test_unfold_fold(dtype):
    kw = dict(kernel_size=(3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1))
    a = arr(2, 3, 7, 8)
    c, g = pair(a, dtype)
    cu = F.unfold(c.transpose(2, 3).transpose(2, 3), **kw)
    gu = F.unfold(g[:, :, :, :], **kw)
    same(gu, cu)
    same(F.fold(gu, (7, 8), **kw), F.fold(cu, (7, 8), **kw))  # gathered in the CPU's order: same bits
    same(F.fold(gu[0], (7, 8), **kw), F.fold(cu[0], (7, 8), **kw))  # unbatched
    t = torch.nn.functional.fold(torch.from_numpy(host(cu)).to(TORCH_DT[dtype]), (7, 8), **kw)
    tol = 1e-5 if dtype != lucid.float16 else 1e-2
    np.testing.assert_allclose(host(F.fold(gu, (7, 8), **kw)), t.float().numpy(), rtol=tol, atol=tol)


# ---- interpolate ----------------------------------------------------------------------------
INTERP = [("nearest", None, (2, 2)), ("nearest", None, (0.6, 1.7)), ("nearest-exact", None, (1.5, 0.5)),
          ("bilinear", False, (2, 2)), ("bilinear", True, (1.3, 2.1)), ("bicubic", False, (1.7, 0.8)),
          ("bicubic", True, (2, 3))]


@pytest.mark.parametrize("mode,align,scale", INTERP)
@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float16, lucid.float64])
def test_interpolate_forward_and_backward(mode, align, scale, dtype):
    a = arr(2, 3, 5, 6)
    kw = dict(scale_factor=scale, mode=mode)
    if align is not None:
        kw["align_corners"] = align
    cr = lucid.tensor(a).to(dtype).requires_grad_(True)
    gr = lucid.tensor(a).to(dtype).to("cuda").requires_grad_(True)
    cy = F.interpolate(cr, **kw)
    gy = F.interpolate(gr.transpose(2, 3).transpose(2, 3), **kw)
    if mode.startswith("nearest"):
        same(gy, cy)
    else:  # same taps and order; contraction into FMA may differ between g++ and nvcc
        close(gy, cy, *((1e-6, 1e-6) if dtype != lucid.float16 else (2e-3, 2e-3)))
    w = arr(*cy.shape)
    cy.backward(lucid.tensor(w).to(dtype))
    gy.backward(lucid.tensor(w).to(dtype).to("cuda"))
    close(gr.grad, cr.grad, *((1e-5, 1e-5) if dtype != lucid.float16 else (1e-2, 1e-2)))  # atomics
    t = torch.nn.functional.interpolate(torch.tensor(a, dtype=TORCH_DT[dtype]), **kw)
    tol = 1e-5 if dtype != lucid.float16 else 1e-2
    np.testing.assert_allclose(host(gy), t.float().numpy(), rtol=tol, atol=tol)


def test_empty_inputs_launch_nothing():
    c, g = pair(np.zeros((0, 4), np.float32))
    same(lucid.cat([g, g], 0), lucid.cat([c, c], 0))
    same(lucid.flip(g, [0]), lucid.flip(c, [0]))
    ci, gi = pair(np.zeros((0,), np.int64))
    same(g[:, gi], c[:, ci])
    cw, gw = pair(arr(5, 3))
    same(F.embedding(gi, gw), F.embedding(ci, cw))


def _device_memory():
    p = lucid.cuda.get_device_properties(0)
    return p["total_memory"] if isinstance(p, dict) else p.total_memory


@pytest.mark.skipif(not lucid.cuda.is_available() or _device_memory() < 16 * 2**30, reason="needs 16 GiB on the device")
def test_int64_positions_and_offsets():
    n = 2**31 + 64  # more elements than int32 positions cover
    x = lucid.zeros(n, dtype=lucid.uint8, device="cuda")
    far = lucid.tensor(np.array([n - 1, 2**31 + 3, 5])).to("cuda")
    x[far] = lucid.tensor(np.array([7, 9, 11], np.uint8)).to("cuda")  # index_put at offsets past 2^31
    np.testing.assert_array_equal(host(x[far]), [7, 9, 11])
    np.testing.assert_array_equal(host(lucid.gather(x, 0, far)), [7, 9, 11])
    v = x[2**31 + 3 - 2 * 2**30::2**30]  # 3 elements 2^30 apart: an int64 strided view
    np.testing.assert_array_equal(host(lucid.flip(v, [0])), [9, 0, 0])
    f = lucid.flip(x, [0])  # int64 positions
    np.testing.assert_array_equal(host(f[:1]), [7])
    np.testing.assert_array_equal(host(f[60:61]), [9])
    np.testing.assert_array_equal(host(f[n - 6:n - 5]), [11])
    del f
    y = lucid.cat([x, x[:2]])
    np.testing.assert_array_equal(host(y[n - 1:n + 2]), [7, 0, 0])
