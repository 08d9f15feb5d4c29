"""Helpers for comparing a lucid.nn module with its torch.nn twin: build both with the same
constructor arguments, copy torch's state_dict into lucid's (the key lists must be equal), run
float64 inputs through both and compare outputs and the gradients of inputs and parameters.
On CUDA (`device="cuda"`) both twins move there (Module.to) with their inputs: lucid on the GPU
against torch on the same GPU.

Module reprs are compared only against the reference torch (harness.REFERENCE_TORCH, the version CI
installs): reprs change between torch releases (2.13 added `bias=` to InstanceNorm's), and the
GPU machine's torch (2.11) is older. Outputs and gradients are compared on every version."""
import numpy as np
import torch

import lucid
from devices import to_device, to_numpy
from harness import TORCH_IS_REFERENCE, assert_close

RNG = np.random.default_rng(11)


def rand(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape)


def ints(hi, *shape, lo=0):
    return RNG.integers(lo, hi, shape).astype(np.int64)


def signs(*shape):
    return np.where(RNG.random(shape) < 0.5, -1.0, 1.0)


class Int:
    """An integer (or bool) input: no gradient, passed as is."""

    def __init__(self, a):
        self.a = a


def _tensor(lib, a, device):
    return to_device(lucid.tensor(a) if lib is lucid else torch.from_numpy(a.copy()), device)


def _tensors(lib, arrays, device):
    return [_tensor(lib, a.a, device) if isinstance(a, Int) else _tensor(lib, a, device).requires_grad_(True)
            for a in arrays]


def flat_outputs(x):
    if isinstance(x, (tuple, list)):
        return [e for v in x for e in flat_outputs(v)]
    return [] if x is None else [x]


def twins(build, device="cpu"):
    """build(lib) -> (module of lib): the torch twin first, its state_dict copied into lucid's;
    both then on device."""
    torch.manual_seed(0)
    tm = build(torch).double()
    lm = build(lucid).double()
    assert list(lm.state_dict().keys()) == list(tm.state_dict().keys())
    res = lm.load_state_dict({k: lucid.tensor(to_numpy(v)) for k, v in tm.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []
    if device != "cpu":
        lm, tm = lm.to(device), tm.to(device)
    return lm, tm


def check(build, inputs, train=False, rtol=1e-7, atol=1e-9, kwargs=None, check_repr=True, device="cpu"):
    lm, tm = twins(build, device)
    if check_repr and TORCH_IS_REFERENCE:
        assert repr(lm) == repr(tm)
    lm.train(train)
    tm.train(train)
    lin, tin = _tensors(lucid, inputs, device), _tensors(torch, inputs, device)
    kwargs = kwargs or {}
    lk = {k: (_tensor(lucid, v.a, device) if isinstance(v, Int) else v) for k, v in kwargs.items()}
    tk = {k: (_tensor(torch, v.a, device) if isinstance(v, Int) else v) for k, v in kwargs.items()}
    lo, to = flat_outputs(lm(*lin, **lk)), flat_outputs(tm(*tin, **tk))
    assert len(lo) == len(to)
    lloss = tloss = None
    for i, (a, b) in enumerate(zip(lo, to)):
        assert_close(a, b, atol, rtol, f"output {i}")
        if b.requires_grad:
            g = RNG.standard_normal(tuple(b.shape))
            ll, tl = (a * _tensor(lucid, g, device)).sum(), (b * _tensor(torch, g, device)).sum()
            lloss = ll if lloss is None else lloss + ll
            tloss = tl if tloss is None else tloss + tl
    if tloss is not None:
        lloss.backward()
        tloss.backward()
        for i, (a, b) in enumerate(zip(lin, tin)):
            if isinstance(b, torch.Tensor) and b.grad is not None:
                assert_close(a.grad, b.grad, atol * 10, rtol * 10, f"grad of input {i}")
        lp = dict(lm.named_parameters())
        for n, p in tm.named_parameters():
            if p.grad is not None:
                assert_close(lp[n].grad, p.grad, atol * 10, rtol * 10, f"grad of {n}")
    return lm, tm
