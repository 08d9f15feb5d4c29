"""Helpers shared by the tests: NumPy samples to lucid/torch tensors, comparison of outputs."""
import numpy as np
import torch

import lucid

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
                "float64": torch.float64, "int64": torch.int64, "int32": torch.int32, "int8": torch.int8,
                "uint8": torch.uint8, "bool": torch.bool}
LUCID_DTYPES = {n: getattr(lucid, n if n != "bool" else "bool") for n in TORCH_DTYPES}


def to_lucid(a, dtype=None, requires_grad=False):
    if isinstance(a, np.ndarray):
        t = lucid.tensor(a)
        if dtype is not None and a.dtype.kind == "f":
            t = t.to(LUCID_DTYPES[dtype])
        if requires_grad:
            t.requires_grad_(True)
        return t
    return a


def to_torch(a, dtype=None, requires_grad=False):
    if isinstance(a, np.ndarray):
        t = torch.from_numpy(a.copy())
        if dtype is not None and a.dtype.kind == "f":
            t = t.to(TORCH_DTYPES[dtype])
        if requires_grad:
            t.requires_grad_(True)
        return t
    return a


def flat(out):
    if isinstance(out, (tuple, list)):
        return [o for x in out for o in flat(x)]
    return [out]


def as_numpy(t):
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return t.numpy()
    t = t.detach()
    if t.dtype == lucid.bfloat16:
        t = t.float()
    return t.numpy()


def assert_close(lo, to, atol, rtol, what=""):
    a, b = as_numpy(lo), as_numpy(to)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    if b.dtype == np.bool_ or a.dtype == np.bool_:
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), atol=atol, rtol=rtol, err_msg=what,
                               equal_nan=True)


def assert_same_values(got, want, what=""):
    """Exactly eager's values: shape, dtype, NaN positions, every other value and the sign of
    every zero (compiled == eager bit for bit, up to NaN payloads)."""
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} vs {want.dtype}"
    a, b = as_numpy(got), as_numpy(want)
    if a.dtype.kind != "f":
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    nan = np.isnan(b)
    np.testing.assert_array_equal(np.isnan(a), nan, err_msg=f"{what}: NaN positions")
    np.testing.assert_array_equal(a[~nan], b[~nan], err_msg=what)
    np.testing.assert_array_equal(np.signbit(a[~nan]), np.signbit(b[~nan]), err_msg=f"{what}: signs of zeros")


def with_specials(a, rng, frac=0.1):
    """A copy of float array a with about frac of its elements replaced by NaN, +-inf and -0.0."""
    a = a.copy()
    flat = a.reshape(-1)
    n = max(1, int(frac * flat.size)) if flat.size else 0
    idx = rng.choice(flat.size, size=min(n, flat.size), replace=False)
    flat[idx] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0], dtype=a.dtype), size=idx.size)
    return a
