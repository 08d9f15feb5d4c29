"""Helpers shared by the tests: NumPy samples to lucid/torch tensors, comparison of outputs."""
import math

import os
import re

import numpy as np
import pytest
import torch

import lucid
from devices import to_device
from devices import to_numpy as as_numpy  # noqa: F401  (the tests import it from here)

# scripts/sanitize.sh runs the suite against an ASan build, whose allocator quarantines freed
# memory (so RSS grows and addresses are not reused, by design): tests of allocator behaviour
# mean nothing there.
needs_plain_allocator = pytest.mark.skipif(os.environ.get("LUCID_SANITIZED") == "1",
                                           reason="ASan's quarantine delays the reuse of freed memory by design")

# The torch CI installs (scripts/setup.sh) and the expected outputs are taken from. The GPU
# machine has an older one (2.11): where it lacks a feature or prints differently, the tests
# say so and use another reference rather than failing on torch's version.
REFERENCE_TORCH = (2, 13)
TORCH_IS_REFERENCE = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) == REFERENCE_TORCH

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
                "float64": torch.float64, "int64": torch.int64, "int32": torch.int32, "int8": torch.int8,
                "uint8": torch.uint8, "bool": torch.bool}
LUCID_DTYPES = {n: getattr(lucid, n if n != "bool" else "bool") for n in TORCH_DTYPES}


def to_lucid(a, dtype=None, requires_grad=False, device="cpu"):
    if isinstance(a, np.ndarray):
        t = lucid.tensor(a)
        if dtype is not None and a.dtype.kind == "f":
            t = t.to(LUCID_DTYPES[dtype])
        t = to_device(t, device)
        if requires_grad:
            t.requires_grad_(True)
        return t
    return a


def to_torch(a, dtype=None, requires_grad=False, device="cpu"):
    if isinstance(a, np.ndarray):
        t = torch.from_numpy(a.copy())
        if dtype is not None and a.dtype.kind == "f":
            t = t.to(TORCH_DTYPES[dtype])
        t = to_device(t, device)
        if requires_grad:
            t.requires_grad_(True)
        return t
    return a


def flat(out):
    if isinstance(out, (tuple, list)):
        return [o for x in out for o in flat(x)]
    return [out]


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


def scaled_err(out, ref):
    """max |out - ref| / max |ref| over the finite elements of ref (as compile_models.max_rel_err: an
    elementwise relative error is meaningless for values that cross zero); inf when the non-finite
    values (NaN, +-inf) are not exactly ref's, at ref's positions."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    fin = np.isfinite(ref)
    if not np.array_equal(fin, np.isfinite(out)) or not np.array_equal(out[~fin], ref[~fin], equal_nan=True):
        return math.inf
    if not fin.any():
        return 0.0
    scale = max(float(np.max(np.abs(ref[fin]))), np.finfo(np.float32).tiny)
    return float(np.max(np.abs(out[fin] - ref[fin]))) / scale


def assert_close_to_eager(got, want, what, tol, ref=None):
    """got (compiled) == want (eager) within tol, relative to want's scale. Where they differ by
    more, and a float64 reference `ref` of the same computation is given, compiled must be no less
    accurate than eager against it (compiled float32 may round differently and better: oneDNN's
    GELU post-op is accurate in the negative tail where eager's 0.5*x*(1+erf(x/sqrt 2)) cancels)."""
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} vs eager {tuple(want.shape)}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} vs eager {want.dtype}"
    g, w = got.detach().numpy(), want.detach().numpy()
    if not want.dtype.is_floating_point:
        np.testing.assert_array_equal(g, w, err_msg=what)
        return
    err = scaled_err(g, w)
    if err <= tol:
        return
    assert ref is not None, f"{what}: max rel err {err:.3g} > {tol:g}\ncompiled {g}\neager {w}"
    r = ref.detach().numpy()
    err_c, err_e = scaled_err(g, r), scaled_err(w, r)
    assert err_c <= 2 * err_e + tol, (f"{what}: compiled vs eager max rel err {err:.3g} > {tol:g}; against float64: "
                                      f"compiled {err_c:.3g}, eager {err_e:.3g}\ncompiled {g}\neager {w}\nfloat64 {r}")


# ---- compiled IR text (compiled.ir()): a body's nodes are indented deeper than the graph's ----
def ir_top_level_ops(ir):
    """Op names of the nodes of the outermost graph, in order."""
    return re.findall(r"^  %\d+(?:, %\d+)* = (\w+)\(", ir, flags=re.M)


def ir_body_ops(ir):
    """Op names of the nodes inside FusedElementwise bodies."""
    return re.findall(r"^      %\d+ = (\w+)\(", ir, flags=re.M)


def ir_fused_results(ir):
    """(values of the outermost graph that FusedElementwise nodes compute, the returned values)."""
    fused = set()
    for outs in re.findall(r"^  (%\d+(?:, %\d+)*) = FusedElementwise\(", ir, flags=re.M):
        fused.update(outs.split(", "))
    return fused, re.findall(r"^  return \((.*)\)$", ir, flags=re.M)[-1].split(", ")
