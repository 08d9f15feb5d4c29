"""Generic op tests driven by op_specs: forward vs PyTorch per dtype, gradients vs PyTorch,
finite-difference gradient checks in float64."""
import numpy as np
import pytest
import torch

import lucid
from harness import as_numpy, assert_close, flat, to_lucid, to_torch
from op_specs import all_specs

SPECS = all_specs()
FLOATS = ("float16", "bfloat16", "float32", "float64")


def _cases():
    for s in SPECS:
        for dt in s.dtypes:
            yield pytest.param(s, dt, id=f"{s.name}-{dt}")


def _grad_cases():
    for s in SPECS:
        if s.grad:
            yield pytest.param(s, id=s.name)


def _grad_indices(sample):
    if sample.grad_args is not None:
        return list(sample.grad_args)
    return [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


@pytest.mark.parametrize("spec,dtype", list(_cases()))
def test_forward(spec, dtype):
    rng = np.random.default_rng(0)
    for sample in spec.samples(rng, dtype):
        la = [to_lucid(a, dtype) for a in sample.args]
        ta = [to_torch(a, dtype) for a in sample.args]
        lo = flat(spec.lucid_fn(lucid, *la, **sample.kwargs))
        to = flat(spec.torch_fn(torch, *ta, **sample.kwargs))
        assert len(lo) == len(to)
        low = dtype in ("float16", "bfloat16")
        tol = spec.low_precision_tol if low else spec.atol
        rtol = spec.low_precision_tol if low else spec.rtol
        for i, (l_out, t_out) in enumerate(zip(lo, to)):
            if isinstance(t_out, torch.Tensor):
                assert str(l_out.dtype).split(".")[-1] == str(t_out.dtype).split(".")[-1], \
                    f"{spec.name} output {i}: dtype {l_out.dtype} vs torch {t_out.dtype}"
                assert_close(l_out, t_out, tol, rtol, f"{spec.name} output {i}")
            else:
                assert l_out == t_out


def _weights(outs, rng):
    return [rng.standard_normal(tuple(o.shape)) for o in outs]


@pytest.mark.parametrize("spec", list(_grad_cases()))
def test_grad_vs_torch(spec):
    rng = np.random.default_rng(1)
    for sample in spec.samples(rng, "float64"):
        idx = _grad_indices(sample)
        if not idx:
            continue
        la = [to_lucid(a, "float64", i in idx) for i, a in enumerate(sample.args)]
        ta = [to_torch(a, "float64", i in idx) for i, a in enumerate(sample.args)]
        lo = [o for o in flat(spec.lucid_fn(lucid, *la, **sample.kwargs)) if o.dtype.is_floating_point]
        to = [o for o in flat(spec.torch_fn(torch, *ta, **sample.kwargs)) if o.dtype.is_floating_point]
        ws = _weights(to, rng)
        lloss = sum(((o * lucid.tensor(w)).sum() for o, w in zip(lo, ws)), lucid.tensor(0.0, dtype=lucid.float64))
        tloss = sum(((o * torch.from_numpy(w)).sum() for o, w in zip(to, ws)), torch.tensor(0.0, dtype=torch.float64))
        lg = lucid.autograd.grad([lloss], [la[i] for i in idx], allow_unused=True)
        tg = torch.autograd.grad([tloss], [ta[i] for i in idx], allow_unused=True)
        for k, (a, b) in enumerate(zip(lg, tg)):
            if b is None:
                assert a is None or np.allclose(as_numpy(a), 0)
                continue
            assert a is not None, f"{spec.name}: lucid gave no gradient for input {idx[k]}"
            assert_close(a, b, 1e-6, 1e-6, f"{spec.name} grad of input {idx[k]}")


@pytest.mark.parametrize("spec", [s for s in _grad_cases() if s.values[0].fd])
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
