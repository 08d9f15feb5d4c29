"""Generic op tests driven by op_specs: forward vs PyTorch per dtype, gradients vs PyTorch,
finite-difference gradient checks in float64; each on every device (devices.py): the CUDA half
of a forward test compares with torch on the same GPU (torch's CPU where torch has no CUDA
kernel for the case), test_cuda_matches_cpu runs each row's samples on CUDA against lucid's
CPU result (ggml's test-backend-ops), and the CUDA gradients (float64 where the row checks it
on CUDA, else float32) are held to torch's float64 ones on the CPU. The finite-difference check
is the VJP's math, the same on every device: CPU only."""
import numpy as np
import pytest
import torch

import lucid
from devices import factory_scope, requires_cuda, to_device
from harness import TORCH_IS_REFERENCE, as_numpy, assert_close, assert_same_values, flat, to_lucid, to_torch
from op_specs import all_specs

SPECS = all_specs()
FLOATS = ("float16", "bfloat16", "float32", "float64")
LOW_PRECISION = ("float16", "bfloat16")
GRAD_TOL = {"float64": 1e-6, "float32": 1e-3}  # against torch's float64 gradients


def _cases():
    # The CPU half keeps its ids (name-dtype); the CUDA half's end in -cuda.
    for s in SPECS:
        for dt in s.dtypes:
            yield pytest.param(s, dt, "cpu", id=f"{s.name}-{dt}")
        for dt in s.cuda_dtypes:
            yield pytest.param(s, dt, "cuda", id=f"{s.name}-{dt}-cuda", marks=requires_cuda)


def _cuda_cases():
    for s in SPECS:
        for dt in s.cuda_dtypes:
            yield pytest.param(s, dt, "cuda", id=f"{s.name}-{dt}-cuda", marks=requires_cuda)


def _grad_cases():
    for s in SPECS:
        if s.grad:
            yield pytest.param(s, "cpu", id=s.name)
            if s.cuda_dtypes:  # a row with no CUDA dtypes is not a CUDA row (e.g. CPU-only drivers)
                yield pytest.param(s, "cuda", id=f"{s.name}-cuda", marks=requires_cuda)


def _grad_indices(sample):
    if sample.grad_args is not None:
        return list(sample.grad_args)
    return [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


def _tolerances(spec, dtype):
    low = dtype in LOW_PRECISION
    return (spec.low_precision_tol, spec.low_precision_tol) if low else (spec.atol, spec.rtol)


def _lucid_outputs(spec, sample, dtype, device):
    la = [to_lucid(a, dtype, device=device) for a in sample.args]
    with factory_scope(lucid, device):
        return flat(spec.lucid_fn(lucid, *la, **sample.kwargs))


def _torch_outputs(spec, sample, dtype, device):
    """torch's outputs on device; on CUDA, torch's CPU ones where torch cannot run the case there
    (no CUDA kernel for the dtype, or a CPU-only step inside torch_fn such as .numpy())."""
    def run(dev):
        ta = [to_torch(a, dtype, device=dev) for a in sample.args]
        with factory_scope(torch, dev):
            return flat(spec.torch_fn(torch, *ta, **sample.kwargs))
    if device == "cpu":
        return run(device)
    try:
        return run(device)
    except (RuntimeError, NotImplementedError, TypeError):
        return run("cpu")


def _same_scalar(a, b, device, atol, rtol, what):
    # A Python value (a shape, a dtype name, item()): the CPU's must equal torch's; on CUDA a float
    # may come from a reduction in another order.
    if device != "cpu" and isinstance(b, float) and not isinstance(a, bool):
        assert a == pytest.approx(b, rel=rtol, abs=atol, nan_ok=True), what
    else:
        assert a == b, what


@pytest.mark.parametrize("spec,dtype,device", list(_cases()))
def test_forward(spec, dtype, device):
    rng = np.random.default_rng(0)
    tol, rtol = _tolerances(spec, dtype)
    for sample in spec.samples(rng, dtype):
        lo = _lucid_outputs(spec, sample, dtype, device)
        to = _torch_outputs(spec, sample, dtype, device)
        assert len(lo) == len(to)
        for i, (l_out, t_out) in enumerate(zip(lo, to)):
            if isinstance(t_out, torch.Tensor):
                assert str(l_out.dtype).split(".")[-1] == str(t_out.dtype).split(".")[-1], \
                    f"{spec.name} output {i}: dtype {l_out.dtype} vs torch {t_out.dtype}"
                if t_out.device.type != "cpu":
                    assert l_out.device.type == t_out.device.type, \
                        f"{spec.name} output {i}: on {l_out.device}, torch's on {t_out.device}"
                assert_close(l_out, t_out, tol, rtol, f"{spec.name} output {i}")
            else:
                _same_scalar(l_out, t_out, device, tol, rtol, f"{spec.name} output {i}")


@pytest.mark.parametrize("spec,dtype,device", list(_cuda_cases()))
def test_cuda_matches_cpu(spec, dtype, device):
    """The row's samples on CUDA against lucid's own CPU result, with the same seed: bit for bit
    where the row is exact (spec.cuda_exact) and for integer and bool outputs, else within the
    row's tolerance."""
    rng = np.random.default_rng(0)
    tol, rtol = _tolerances(spec, dtype)
    for sample in spec.samples(rng, dtype):
        lucid.manual_seed(0)
        want = _lucid_outputs(spec, sample, dtype, "cpu")
        lucid.manual_seed(0)
        got = _lucid_outputs(spec, sample, dtype, device)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            what = f"{spec.name} output {i}, cuda vs cpu"
            if not isinstance(w, lucid.Tensor):
                _same_scalar(g, w, device, tol, rtol, what)
                continue
            assert g.device.type == device, f"{what}: on {g.device}"
            if spec.cuda_exact or not w.dtype.is_floating_point:
                assert_same_values(g, w, what + " (exact)")
            else:
                assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} vs {w.dtype}"
                assert_close(g, w, tol, rtol, what)


def _weights(outs, rng):
    return [rng.standard_normal(tuple(o.shape)) for o in outs]


@pytest.mark.parametrize("spec,device", list(_grad_cases()))
def test_grad_vs_torch(spec, device):
    # lucid in float64 (float32 on CUDA for a row without float64 there) vs torch float64 on the CPU
    dt = "float64" if device == "cpu" or "float64" in spec.cuda_dtypes else "float32"
    ldt = getattr(lucid, dt)
    rng = np.random.default_rng(1)
    for sample in spec.samples(rng, "float64"):
        idx = _grad_indices(sample)
        if not idx:
            continue
        la = [to_lucid(a, dt, i in idx, device) for i, a in enumerate(sample.args)]
        ta = [to_torch(a, "float64", i in idx) for i, a in enumerate(sample.args)]
        with factory_scope(lucid, device):
            lo = [o for o in flat(spec.lucid_fn(lucid, *la, **sample.kwargs)) if o.dtype.is_floating_point]
        to = [o for o in flat(spec.torch_fn(torch, *ta, **sample.kwargs)) if o.dtype.is_floating_point]
        ws = _weights(to, rng)
        lloss = sum(((o * to_lucid(w, dt, device=device)).sum() for o, w in zip(lo, ws)),
                    to_device(lucid.tensor(0.0, dtype=ldt), device))
        tloss = sum(((o * torch.from_numpy(w)).sum() for o, w in zip(to, ws)), torch.tensor(0.0, dtype=torch.float64))
        lg = lucid.autograd.grad([lloss], [la[i] for i in idx], allow_unused=True)
        try:
            tg = torch.autograd.grad([tloss], [ta[i] for i in idx], allow_unused=True)
        except RuntimeError as e:
            # A torch older than the reference (the GPU machine's) may lack this derivative: then
            # lucid's CPU gradient stands in, itself checked against the reference torch in CI.
            if TORCH_IS_REFERENCE or device == "cpu" or "not implemented" not in str(e):
                raise
            tg = _lucid_cpu_grads(spec, sample, idx, ws)
        for k, (a, b) in enumerate(zip(lg, tg)):
            if b is None:
                assert a is None or np.allclose(as_numpy(a), 0)
                continue
            assert a is not None, f"{spec.name}: lucid gave no gradient for input {idx[k]}"
            assert a.device.type == device, f"{spec.name}: the gradient of input {idx[k]} is on {a.device}"
            assert_close(a, b, GRAD_TOL[dt], GRAD_TOL[dt], f"{spec.name} grad of input {idx[k]}")


def _lucid_cpu_grads(spec, sample, idx, ws):
    """test_grad_vs_torch's gradients computed by lucid on the CPU in float64, as numpy arrays."""
    la = [to_lucid(a, "float64", i in idx) for i, a in enumerate(sample.args)]
    lo = [o for o in flat(spec.lucid_fn(lucid, *la, **sample.kwargs)) if o.dtype.is_floating_point]
    loss = sum(((o * to_lucid(w, "float64")).sum() for o, w in zip(lo, ws)), lucid.tensor(0.0, dtype=lucid.float64))
    return [None if g is None else torch.from_numpy(as_numpy(g))
            for g in lucid.autograd.grad([loss], [la[i] for i in idx], allow_unused=True)]


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.name) for s in SPECS if s.grad and s.fd])
def test_finite_difference(spec):
    rng = np.random.default_rng(2)
    for sample in spec.samples(rng, "float64")[:1]:
        idx = _grad_indices(sample)
        if not idx:
            continue
        args = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in sample.args]

        def f(*xs):
            return [o for o in flat(spec.lucid_fn(lucid, *xs, **sample.kwargs)) if o.dtype.is_floating_point]

        la = [to_lucid(a, "float64", i in idx) for i, a in enumerate(args)]
        outs = f(*la)
        ws = [rng.standard_normal(tuple(o.shape)) for o in outs]
        loss = sum(((o * lucid.tensor(w)).sum() for o, w in zip(outs, ws)), lucid.tensor(0.0, dtype=lucid.float64))
        grads = lucid.autograd.grad([loss], [la[i] for i in idx], allow_unused=True)
        eps = 1e-6
        for gi, i in enumerate(idx):
            a = args[i]
            num = np.zeros_like(a)
            it = np.nditer(a, flags=["multi_index"])
            for _ in it:
                mi = it.multi_index
                vals = []
                for sgn in (1, -1):
                    b = a.copy()
                    b[mi] += sgn * eps
                    xs = [to_lucid(b if j == i else args[j], "float64") for j in range(len(args))]
                    with lucid.no_grad():
                        o = f(*xs)
                    vals.append(sum(float((as_numpy(x) * w).sum()) for x, w in zip(o, ws)))
                num[mi] = (vals[0] - vals[1]) / (2 * eps)
            g = np.zeros_like(a) if grads[gi] is None else as_numpy(grads[gi])
            np.testing.assert_allclose(g, num, atol=1e-5, rtol=1e-4, err_msg=f"{spec.name} finite differences, input {i}")
