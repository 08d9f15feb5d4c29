"""CUDA kernels of the reduction, scan, sort, softmax and norm families against torch and against
lucid's CPU result: several dim sets and keepdim on strided and transposed inputs, long rows
(2^20) and many short rows (the driver's split and group paths), NaN/inf and ties (max/argmax
take the first NaN or the first of equal values), integer promotion (sum of int -> int64), 16-bit
floats against a float64 reference, empty tensors, bad dims raising the CPU's error, and the
backward kernels (NormBackward, CumprodBackward, ProdOthers). Skipped without a CUDA device."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F

pytestmark = pytest.mark.skipif(not lucid.cuda.is_available(), reason="no CUDA device")

RNG = np.random.default_rng(0)

LUCID_DT = {"float32": lucid.float32, "float64": lucid.float64, "float16": lucid.float16, "bfloat16": lucid.bfloat16,
            "int64": lucid.int64, "int32": lucid.int32, "int8": lucid.int8, "uint8": lucid.uint8, "bool": lucid.bool}
TORCH_DT = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
            "int64": torch.int64, "int32": torch.int32, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}


def make(a, dtype=None):
    """(lucid cpu, lucid cuda, torch) tensors of the numpy array a, optionally cast to dtype."""
    xc, xt = lucid.tensor(a), torch.from_numpy(np.ascontiguousarray(a))
    if dtype is not None:
        xc, xt = xc.to(LUCID_DT[dtype]), xt.to(TORCH_DT[dtype])
    return xc, xc.to("cuda"), xt


def to_np(t):
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.double() if t.dtype in (torch.float16, torch.bfloat16) else t).numpy()
    assert t.device.type == "cpu" or str(t.device).startswith("cuda")
    t = t.detach().cpu()
    return (t.double() if t.dtype in (lucid.float16, lucid.bfloat16) else t).numpy()


def close(got, want, rtol=1e-6, atol=1e-6, exact=False):
    g, w = to_np(got), to_np(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if exact:
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def check(fn, a, dtype=None, rtol=1e-6, atol=1e-6, exact=False, prep=None):
    """fn(module, x) on CUDA == on the CPU == torch (dtype and values); prep makes x strided."""
    xc, xg, xt = make(a, dtype)
    if prep is not None:
        xc, xg, xt = prep(xc), prep(xg), prep(xt)
    rg, rc, rt = fn(lucid, xg), fn(lucid, xc), fn(torch, xt)
    rg = rg if isinstance(rg, tuple) else (rg,)
    rc = rc if isinstance(rc, tuple) else (rc,)
    rt = rt if isinstance(rt, tuple) else (rt,)
    for g, c, t in zip(rg, rc, rt):
        assert str(g.device).startswith("cuda")
        assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        close(g, c, rtol, atol, exact)
        close(g, t, rtol, atol, exact)


PREPS = {
    "contiguous": None,
    "transposed": lambda x: x.transpose(0, 2),
    "sliced": lambda x: x[:, ::2],
}
DIMS = [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2)]


def dim_kw(d):
    return {} if d is None else {"dim": d}


# ---- plain reductions over dim sets -----------------------------------------------------------------
@pytest.mark.parametrize("prep", list(PREPS))
@pytest.mark.parametrize("dims", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", ["sum", "mean", "prod", "amax", "amin", "logsumexp", "var", "std", "all", "any"])
def test_reduce_dims(op, dims, keepdim, prep):
    a = RNG.standard_normal((6, 5, 8))
    if op in ("amax", "amin", "logsumexp") and dims is None:
        dims = (0, 1, 2)
    if op in ("all", "any"):
        a = (RNG.random((6, 5, 8)) < 0.9).astype(np.float64)
    kw = dim_kw(dims)

    def fn(m, x):
        if op in ("var", "std"):
            return getattr(m, op)(x, **kw, keepdim=keepdim, correction=0 if dims == 0 else 1)
        if op == "prod":  # one dim only in torch
            d = dims if isinstance(dims, int) else None
            return m.prod(x, d, keepdim=keepdim) if d is not None else m.prod(x)
        if op == "mean" and dims is None:
            return m.mean(x)
        if op in ("all", "any") and dims is None:
            return getattr(m, op)(x)
        if op == "sum" and dims is None:
            return m.sum(x)
        return getattr(m, op)(x, **kw, keepdim=keepdim)

    check(fn, a, "float32", rtol=1e-5, atol=1e-5, prep=PREPS[prep])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std_correction(dtype, correction):
    a = RNG.standard_normal((7, 300))
    for op in ("var", "std"):
        check(lambda m, x: getattr(m, op)(x, dim=1, correction=correction), a, dtype, rtol=1e-5)
        check(lambda m, x: getattr(m, op)(x, dim=0, correction=correction), a, dtype, rtol=1e-5)


# ---- geometry: long rows, many short rows, long columns --------------------------------------------
@pytest.mark.parametrize("shape, dim", [((1, 1 << 20), 1), ((3, 1 << 20), 1), ((1 << 20, 3), 0), ((1 << 18, 33), 0),
                                        ((200000, 3), 1), ((50000, 40), 1), ((2, 70000, 5), 1)])
@pytest.mark.parametrize("op", ["sum", "mean", "var", "amax", "logsumexp", "argmax", "max"])
def test_reduce_geometry(shape, dim, op):
    a = RNG.standard_normal(shape)

    def fn(m, x):
        if op == "var":
            return m.var(x, dim=dim)
        if op == "max":
            r = m.max(x, dim=dim)
            return r.values, r.indices
        return getattr(m, op)(x, dim=dim)

    # float32 sums of N(0, 1) rows cancel: torch's float accumulation is off by ~1e-7 * sqrt(rows).
    atol = 3e-6 * np.sqrt(shape[dim])
    check(fn, a, "float32", rtol=1e-5, atol=atol, exact=op in ("amax", "argmax", "max"))


def test_sum_of_all_of_a_huge_tensor():
    a = RNG.standard_normal(1 << 22)
    check(lambda m, x: m.sum(x), a, "float32", rtol=1e-5, atol=1e-3)
    check(lambda m, x: m.argmin(x), a, "float32", exact=True)


# ---- dtypes ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "bool"])
def test_integer_promotion(dtype):
    a = RNG.integers(0, 5, (9, 70))
    check(lambda m, x: m.sum(x, dim=1), a, dtype, exact=True)
    check(lambda m, x: m.sum(x), a, dtype, exact=True)
    check(lambda m, x: m.cumsum(x, dim=1), a, dtype, exact=True)
    check(lambda m, x: m.amax(x, dim=0), a, dtype, exact=True)
    if dtype != "bool":  # torch has no argmin of bool
        check(lambda m, x: m.argmin(x, dim=1), a, dtype, exact=True)
    check(lambda m, x: m.any(x, dim=1), a, dtype, exact=True)
    check(lambda m, x: m.all(x, dim=0), a, dtype, exact=True)
    if dtype != "bool":
        check(lambda m, x: m.prod(x[:, :6], dim=1), a, dtype, exact=True)
        check(lambda m, x: m.sum(x, dim=1, dtype=m.float64), a, dtype, exact=True)


def test_int8_sum_wraps_like_the_cpu():
    a = np.full((4, 300), 100)
    check(lambda m, x: m.sum(x, dim=1, dtype=m.int8), a, "int8", exact=True)
    check(lambda m, x: m.cumsum(x, dim=1, dtype=m.int8), a, "int8", exact=True)


@pytest.mark.parametrize("dtype, tol", [("float16", 1e-3), ("bfloat16", 8e-3)])
def test_16bit_accumulate_in_wider_precision(dtype, tol):
    # 2^16 positive values: a float16 accumulator would saturate/round badly; the result must be
    # the float64 sum of the (rounded) inputs, rounded once.
    a = (RNG.random((4, 1 << 16)) + 0.5) * 0.5  # sums stay below float16's max
    xc, xg, xt = make(a, dtype)
    ref = torch.from_numpy(a).to(TORCH_DT[dtype]).double()
    for op in ("sum", "mean"):
        want = getattr(ref, op)(dim=1) if op == "mean" else ref.sum(dim=1)
        got = getattr(lucid, op)(xg, dim=1)
        assert got.dtype == LUCID_DT[dtype]
        np.testing.assert_allclose(to_np(got), want.numpy(), rtol=tol)
        close(got, getattr(lucid, op)(xc, dim=1), rtol=tol)
    for op in ("var", "std", "logsumexp"):
        want = getattr(ref, op)(dim=1)
        np.testing.assert_allclose(to_np(getattr(lucid, op)(xg, dim=1)), want.numpy(), rtol=tol * 4)
    close(lucid.softmax(xg, dim=1), torch.softmax(ref, dim=1), rtol=tol * 4, atol=1e-7)
    close(lucid.cumsum(xg[:, :2000], dim=1), lucid.cumsum(xc[:, :2000], dim=1), rtol=tol)


def test_mean_dtype_argument_casts_first():
    a = RNG.integers(0, 9, (5, 11))
    check(lambda m, x: m.mean(x, dim=1, dtype=m.float32), a, "int32", rtol=1e-6)


# ---- NaN, inf and ties -------------------------------------------------------------------------------
def nan_ties_array():
    a = RNG.integers(0, 4, (40, 257)).astype(np.float64)
    a[3, 10] = np.nan
    a[3, 200] = np.nan
    a[7, :] = np.nan
    a[9, 5] = np.inf
    a[11, :] = -np.inf
    return a


@pytest.mark.parametrize("dim", [0, 1])
def test_extrema_nan_and_ties(dim):
    a = nan_ties_array()
    for op in ("amax", "amin", "argmax", "argmin"):
        check(lambda m, x: getattr(m, op)(x, dim=dim), a, "float32", exact=True)
    for op in ("max", "min"):
        check(lambda m, x: tuple(getattr(m, op)(x, dim=dim)), a, "float32", exact=True)
    check(lambda m, x: m.argmax(x), a, "float32", exact=True)
    check(lambda m, x: m.logsumexp(x, dim=dim), a, "float32", rtol=1e-6)
    check(lambda m, x: m.sum(x, dim=dim), a, "float32", rtol=1e-6)


def test_ties_pick_the_first_index_in_long_rows():
    a = np.zeros((3, 1 << 20))
    a[0, 5000] = a[0, 900000] = 1.0
    a[1, 123456] = a[1, 123457] = np.nan
    check(lambda m, x: m.argmax(x, dim=1), a, "float32", exact=True)
    check(lambda m, x: m.argmin(x, dim=1), a, "float32", exact=True)
    check(lambda m, x: tuple(m.max(x.t(), dim=0)), a, "float32", exact=True)


# ---- empty tensors and errors ------------------------------------------------------------------------
def test_empty_reductions():
    a = np.zeros((0, 3))
    check(lambda m, x: m.sum(x, dim=0), a, "float32", exact=True)
    check(lambda m, x: m.prod(x, dim=0), a, "float32", exact=True)
    check(lambda m, x: m.mean(x, dim=0), a, "float32", exact=True)
    check(lambda m, x: m.all(x, dim=0), a, "float32", exact=True)
    check(lambda m, x: m.any(x, dim=0), a, "float32", exact=True)
    check(lambda m, x: m.sum(x, dim=1), a, "float32", exact=True)
    check(lambda m, x: m.cumsum(x, dim=0), a, "float32", exact=True)
    check(lambda m, x: m.softmax(x, dim=0), a, "float32", exact=True)
    check(lambda m, x: m.sort(x, dim=0).values, a, "float32", exact=True)
    xg = lucid.tensor(a).to("cuda")
    for fn in (lambda x: lucid.amax(x, dim=0), lambda x: lucid.argmax(x), lambda x: lucid.max(x, dim=0),
               lambda x: lucid.median(x, dim=0)):
        with pytest.raises(IndexError):
            fn(xg)
    assert np.isnan(lucid.median(xg).item())


def test_bad_dims_raise_the_cpu_error():
    xc, xg, _ = make(RNG.standard_normal((2, 3)), "float32")
    for fn in (lambda x: lucid.sum(x, dim=2), lambda x: lucid.amax(x, dim=-3), lambda x: lucid.sort(x, dim=5),
               lambda x: lucid.cumsum(x, dim=2), lambda x: lucid.softmax(x, dim=3), lambda x: lucid.sum(x, dim=(0, 0))):
        with pytest.raises(Exception) as ec:
            fn(xc)
        with pytest.raises(type(ec.value)):
            fn(xg)
    with pytest.raises(TypeError):
        lucid.var(xg.to(lucid.int32))
    with pytest.raises(Exception):
        lucid.topk(xg, 4, dim=1)


# ---- scans -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, dim", [((5, 7, 9), 0), ((5, 7, 9), 1), ((5, 7, 9), -1), ((3, 5000), 1), ((4000, 3), 0),
                                        ((2, 300000), 1)])
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans(shape, dim, op):
    a = RNG.standard_normal(shape) if op == "cumsum" else 1 + 1e-4 * RNG.standard_normal(shape)
    check(lambda m, x: getattr(m, op)(x, dim=dim), a, "float32", rtol=1e-5, atol=1e-4)
    check(lambda m, x: getattr(m, op)(x, dim=dim), a, "float64", rtol=1e-10, atol=1e-10)
    if len(shape) == 3:
        check(lambda m, x: getattr(m, op)(x, dim=dim), a, "float32", rtol=1e-5, atol=1e-5, prep=PREPS["transposed"])


def test_scan_gradients_match_the_cpu():
    # cumsum's VJP is a reversed cumsum; cumprod's is CumprodBackward (exact with zeros);
    # prod's is ProdOthers.
    a = RNG.standard_normal((4, 9, 6))
    a[1, 3, 2] = 0.0
    a[2, 4, :] = 0.0
    long = 1 + 1e-3 * RNG.standard_normal((3, 5000))
    long[1, 2500] = 0.0
    cases = [(a, lambda x: lucid.cumsum(x, dim=1)), (a, lambda x: lucid.cumprod(x, dim=1)),
             (a, lambda x: lucid.cumprod(x, dim=2)), (a, lambda x: lucid.prod(x, dim=1)), (a, lambda x: lucid.prod(x)),
             (a, lambda x: lucid.prod(x, dim=(0, 2))), (long, lambda x: lucid.prod(x, dim=1)),
             (long, lambda x: lucid.cumprod(x, dim=1))]
    for arr, fn in cases:
        grads = []
        for dev in ("cpu", "cuda"):
            x = lucid.tensor(arr).to(dev).requires_grad_()
            y = fn(x)
            y.backward(lucid.ones_like(y))
            grads.append(x.grad)
        close(grads[1], grads[0], rtol=1e-10, atol=1e-12)


# ---- sort, topk, median -------------------------------------------------------------------------------
def sort_array():
    a = RNG.integers(-3, 4, (6, 33, 5)).astype(np.float64)
    a[0, 3, 0] = a[0, 9, 0] = np.nan
    a[1, :, 1] = -0.0
    a[1, 4, 1] = 0.0
    a[2, 7, 2] = np.inf
    a[2, 8, 2] = -np.inf
    return a


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable(dtype, dim, descending):
    a = sort_array()
    if not dtype.startswith(("float", "bfloat")):
        a = np.nan_to_num(a, nan=1, posinf=3, neginf=-3)
        a = np.abs(a) if dtype in ("uint8", "bool") else a
    check(lambda m, x: tuple(m.sort(x, dim=dim, descending=descending, stable=True)), a, dtype, exact=True)


def test_sort_long_and_many_rows():
    check(lambda m, x: tuple(m.sort(x, dim=1, stable=True)), RNG.integers(0, 1000, (2, 1 << 20)), "float32", exact=True)
    check(lambda m, x: tuple(m.sort(x, dim=0, descending=True, stable=True)), RNG.standard_normal((100000, 3)), "float64",
          exact=True)
    check(lambda m, x: tuple(m.sort(x, dim=1, stable=True)), RNG.standard_normal((100000, 7)), "float32", exact=True,
          prep=lambda x: x[::2])


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 5, 33])
def test_topk(largest, k):
    a = RNG.standard_normal((6, 33, 5))  # no ties: indices are defined
    a[0, 3, 0] = np.nan
    check(lambda m, x: tuple(m.topk(x, k, dim=1, largest=largest)), a, "float32", exact=True)
    check(lambda m, x: tuple(m.topk(x, k, dim=1, largest=largest)), a, "float32", exact=True, prep=PREPS["transposed"])
    # Ties: values match, and the indices point at them (the CPU leaves the choice unspecified).
    t = RNG.integers(0, 3, (50, 40)).astype(np.float32)
    xc, xg, xt = make(t)
    kk = min(k, 40)
    rg, rt = lucid.topk(xg, kk, dim=1, largest=largest), torch.topk(xt, kk, dim=1, largest=largest)
    close(rg.values, rt.values, exact=True)
    close(lucid.gather(xg, 1, rg.indices), rt.values, exact=True)


@pytest.mark.parametrize("ignore_nan", [False, True])
@pytest.mark.parametrize("dim", [None, 0, 1, 2])
def test_median(ignore_nan, dim):
    a = RNG.standard_normal((5, 8, 7))
    a[0, :, 0] = np.nan
    a[1, 2, 1] = np.nan
    a[2, 3:5, 3] = np.nan
    name = "nanmedian" if ignore_nan else "median"
    if dim is None:
        check(lambda m, x: getattr(m, name)(x), a, "float32", exact=True)
    else:
        check(lambda m, x: getattr(m, name)(x, dim=dim).values, a, "float32", exact=True)
        # Indices against the CPU only (a NaN row's index is the first NaN, or 0 when all are NaN).
        xc, xg, _ = make(a, "float32")
        close(getattr(lucid, name)(xg, dim=dim).indices, getattr(lucid, name)(xc, dim=dim).indices, exact=True)
    ints = RNG.integers(0, 50, (9, 1001))
    check(lambda m, x: m.median(x, dim=1).values, ints, "int64", exact=True)


# ---- softmax ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, dim", [((5, 7, 9), 0), ((5, 7, 9), 1), ((5, 7, 9), -1), ((2, 1 << 20), 1),
                                        ((100000, 10), 1), ((3, 200), 1), ((4, 3000, 2), 1)])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax(shape, dim, op):
    a = 3 * RNG.standard_normal(shape)
    # float32 rows of 2^20: the CPU's float sum and torch's differ by ~1e-4 in log_softmax.
    check(lambda m, x: getattr(m, op)(x, dim=dim), a, "float32", rtol=1e-5, atol=1e-6 if a.size < 1e6 else 2e-4)
    check(lambda m, x: getattr(m, op)(x, dim=dim), a, "float64", rtol=1e-12, atol=1e-14)
    if len(shape) == 3:
        check(lambda m, x: getattr(m, op)(x, dim=dim), a, "float32", rtol=1e-5, atol=1e-6, prep=PREPS["transposed"])


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_special_values(op):
    a = RNG.standard_normal((6, 300))
    a[0, :] = -np.inf       # all -inf: NaN, as torch
    a[1, 5] = np.nan        # NaN row
    a[2, 7] = np.inf        # +inf: NaN row (exp(inf - inf))
    a[3, :100] = -np.inf    # some -inf: zeros there
    a[4, :] = 1e3
    check(lambda m, x: getattr(m, op)(x, dim=1), a, "float32", rtol=1e-5, atol=1e-6)
    check(lambda m, x: getattr(m, op)(x.t(), dim=0), a, "float32", rtol=1e-5, atol=1e-6)
    # Huge equal values: (x - max) - log(sum), as torch (x - (max + log(sum)) would give 0).
    check(lambda m, x: getattr(m, op)(x, dim=1), np.full((3, 300), 1e30), "float32", rtol=1e-6)
    check(lambda m, x: getattr(m, op)(x, dim=0), np.full((300, 3), 1e30), "float32", rtol=1e-6)


# ---- norms --------------------------------------------------------------------------------------------
def norm_cases():
    w8, b8 = RNG.standard_normal(8), RNG.standard_normal(8)
    w12 = RNG.standard_normal((3, 4))
    return [
        ("layer", (4, 6, 8), lambda m, x, p: m.nn.functional.layer_norm(x, (8,), p(w8), p(b8), eps=1e-5)),
        ("layer_noaffine", (300, 1000), lambda m, x, p: m.nn.functional.layer_norm(x, (1000,))),
        ("layer_2d", (5, 3, 4), lambda m, x, p: m.nn.functional.layer_norm(x, (3, 4), p(w12), None)),
        ("rms", (4, 6, 8), lambda m, x, p: m.nn.functional.rms_norm(x, (8,), p(w8), eps=1e-6)),
        ("rms_noaffine", (20000, 8), lambda m, x, p: m.nn.functional.rms_norm(x, (8,), eps=1e-6)),
        ("group", (3, 8, 5, 5), lambda m, x, p: m.nn.functional.group_norm(x, 4, p(w8), p(b8))),
        ("group_noaffine", (2, 8, 70, 70), lambda m, x, p: m.nn.functional.group_norm(x, 2)),
    ]


@pytest.mark.parametrize("case", norm_cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_norm_forward_and_backward(case, dtype):
    _, shape, fn = case
    a = RNG.standard_normal(shape) * 2 + 0.5
    results = []
    for dev in ("cpu", "cuda"):
        def p(arr, dev=dev):
            return None if arr is None else lucid.tensor(arr).to(LUCID_DT[dtype]).to(dev).requires_grad_()
        x = lucid.tensor(a).to(LUCID_DT[dtype]).to(dev).requires_grad_()
        y = fn(lucid, x, p)
        g = lucid.tensor(np.cos(np.arange(y.numel())).reshape(y.shape)).to(LUCID_DT[dtype]).to(dev)
        y.backward(g)
        results.append((y, x.grad))
    tol = 1e-5 if dtype == "float32" else 1e-11
    close(results[1][0], results[0][0], rtol=tol, atol=tol)
    close(results[1][1], results[0][1], rtol=tol * 10, atol=tol * 10)
    # And the forward against torch.
    xt = torch.from_numpy(a).to(TORCH_DT[dtype])
    close(results[1][0], fn(torch, xt, lambda arr: None if arr is None else torch.from_numpy(np.asarray(arr)).to(TORCH_DT[dtype])),
          rtol=tol * 10, atol=tol * 10)


def test_norm_parameter_gradients_match_the_cpu():
    a = RNG.standard_normal((6, 8, 3, 3))
    w, b = RNG.standard_normal(8), RNG.standard_normal(8)
    for fn in (lambda x, w, b: F.group_norm(x, 4, w, b), lambda x, w, b: F.layer_norm(x, (3,), w[:3], b[:3])):
        grads = []
        for dev in ("cpu", "cuda"):
            x = lucid.tensor(a).to(dev).requires_grad_()
            wt, bt = lucid.tensor(w).to(dev).requires_grad_(), lucid.tensor(b).to(dev).requires_grad_()
            fn(x, wt, bt).sum().backward()
            grads.append((x.grad, wt.grad, bt.grad))
        for g, c in zip(grads[1], grads[0]):
            close(g, c, rtol=1e-10, atol=1e-12)


def test_layer_norm_16bit_statistics_are_float32():
    a = RNG.standard_normal((64, 512)) + 3
    for dtype, tol in (("float16", 2e-3), ("bfloat16", 2e-2)):
        x = lucid.tensor(a).to(LUCID_DT[dtype]).to("cuda")
        ref = torch.nn.functional.layer_norm(torch.from_numpy(a).to(TORCH_DT[dtype]).double(), (512,))
        got = F.layer_norm(x, (512,))
        assert got.dtype == LUCID_DT[dtype]
        np.testing.assert_allclose(to_np(got), ref.numpy(), rtol=tol, atol=tol)


# ---- streams and int64 sizes --------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(lucid.cuda, "Stream") or not hasattr(lucid.cuda, "stream"), reason="no lucid.cuda.Stream")
def test_kernels_run_on_the_current_stream():
    a = RNG.standard_normal((64, 4096))
    xc, xg, _ = make(a, "float32")
    s = lucid.cuda.Stream()
    with lucid.cuda.stream(s):
        outs = [lucid.sum(xg, dim=1), lucid.amax(xg, dim=0), lucid.sort(xg, dim=1).values, lucid.softmax(xg, dim=0),
                lucid.cumsum(xg, dim=1), F.layer_norm(xg, (4096,))]
    s.synchronize()
    refs = [lucid.sum(xc, dim=1), lucid.amax(xc, dim=0), lucid.sort(xc, dim=1).values, lucid.softmax(xc, dim=0),
            lucid.cumsum(xc, dim=1), F.layer_norm(xc, (4096,))]
    for g, c in zip(outs, refs):
        close(g, c, rtol=1e-5, atol=1e-5)


def test_more_than_2_to_the_31_elements():
    if lucid.cuda.get_device_properties(0).total_memory < 64 * 2**30:
        pytest.skip("needs 64 GiB of device memory")
    n = 2**31 + 7
    x = lucid.ones((n,), dtype=lucid.int8).to("cuda")
    assert lucid.sum(x).item() == n          # int8 -> int64, split across blocks
    assert lucid.amax(x).item() == 1
    assert lucid.any(x == 0).item() is False
    y = lucid.ones((2, n // 2), dtype=lucid.int8).to("cuda")
    assert lucid.sum(y, dim=1).cpu().numpy().tolist() == [n // 2, n // 2]
