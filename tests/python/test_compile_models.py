"""Issue 3's model set under lucid.compile: every model compiles to one cached executable and gives
eager's answer. Two independent references: lucid eager is first checked against a PyTorch twin with
the same weights (so "eager" is known to be right), then the compiled model is checked against lucid
eager on fresh inputs over three calls (the first traces, the next two run the cached executable).
BatchNorm models run in eval mode (running statistics used, foldable into the convs) and in train
mode (batch statistics used, running statistics updated in place: the compiled calls must leave the
same running statistics as the same eager calls). All under no_grad: this is the forward path.

The compiled-vs-eager checks (forward, and backward through the compiled forward) run on every
device of devices.DEVICES: on CUDA the models, inputs and eager reference are on the GPU, so the
compiled executable (the CUDA executor over the same kernels) is checked against CUDA eager.

Tolerances are max |out - ref| / max |ref| (compile_models.max_rel_err). Measured errors of lucid
eager vs torch on these models are 1e-8..6e-7 (float32, different GEMM/conv libraries), so 1e-5
leaves a wide margin while still catching any real mistake (a wrong mask, a missed bias, a stale
weight gives errors of order 1e-2..1).
"""
import numpy as np
import pytest
import torch

import lucid
from compile_models import MODELS, max_rel_err
from devices import DEVICES, to_device, to_numpy
from harness import assert_close

BATCH = 4
N_CALLS = 3

CASES = [pytest.param(name, train, id=f"{name}-{'train' if train else 'eval'}")
         for name, spec in MODELS.items() for train in ([False, True] if spec.has_batchnorm else [False])]


def _batchnorm_state(model):
    return {k: to_numpy(v).copy() for k, v in model.state_dict().items()
            if k.endswith(("running_mean", "running_var", "num_batches_tracked"))}


def _twins_on(device, spec, train):
    """(eager model, model to compile): the same weights, on device."""
    return tuple(spec.build(train=train)[0].to(device) for _ in range(2))


def _inputs_on(device, spec, seed):
    return tuple(to_device(a, device) for a in spec.make_inputs(BATCH, seed=seed)[0])


@pytest.mark.parametrize("name,train", CASES)
def test_lucid_eager_matches_torch(name, train):
    spec = MODELS[name]
    lm, tm = spec.build(train=train)
    with lucid.no_grad(), torch.no_grad():
        for batch, seed in ((1, 0), (BATCH, 1), (BATCH, 2)):
            largs, targs = spec.make_inputs(batch, seed)
            lo, to = lm(*largs), tm(*targs)
            err = max_rel_err(lo.numpy(), to.numpy())
            assert err <= spec.eager_tol, f"{name} batch {batch}: lucid vs torch max rel err {err:.3g}"
    lstate = _batchnorm_state(lm)
    tstate = {k: v.numpy() for k, v in tm.state_dict().items() if k in lstate}
    assert lstate.keys() == tstate.keys()
    for k in lstate:
        if k.endswith("num_batches_tracked"):
            assert lstate[k] == tstate[k] == (3 if train else 0), k
        else:
            assert max_rel_err(lstate[k], tstate[k]) <= spec.eager_tol, k


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,train", CASES)
def test_compiled_matches_eager(name, train, device):
    spec = MODELS[name]
    eager, model = _twins_on(device, spec, train)
    cm = lucid.compile(model)
    with lucid.no_grad():
        for i in range(N_CALLS):
            args = _inputs_on(device, spec, 10 + i)
            ref = to_numpy(eager(*args))
            out = cm(*args)
            assert isinstance(out, lucid.Tensor) and out.device.type == device
            err = max_rel_err(to_numpy(out), ref)
            assert err <= spec.compiled_tol, f"{name} call {i}: compiled vs eager max rel err {err:.3g}"
    info = cm.cache_info()
    assert not info["eager_only"], f"{name} fell back to eager: {info['eager_only']}"
    assert info["entries"] == 1, info
    assert (info["n_calls"], info["misses"], info["hits"]) == (N_CALLS, 1, N_CALLS - 1), info
    if train:
        got, want = _batchnorm_state(model), _batchnorm_state(eager)
        assert got.keys() == want.keys() and got
        for k in want:
            if k.endswith("num_batches_tracked"):
                assert got[k] == want[k] == N_CALLS, k
            else:
                assert max_rel_err(got[k], want[k]) <= spec.compiled_tol, f"{name}: {k} after {N_CALLS} calls"
    else:
        # eval mode: the compiled calls must leave bound state untouched
        for k, v in eager.state_dict().items():
            np.testing.assert_array_equal(to_numpy(model.state_dict()[k]), to_numpy(v), err_msg=k)


EMPTY_CASES = [pytest.param(name, train, dim, id=f"{name}-{'train' if train else 'eval'}-dim{dim}")
               for name, train in ((p.values[0], p.values[1]) for p in CASES)
               for dim in range(len(MODELS[name].make_numpy(1, 0)[0].shape))]


@pytest.mark.parametrize("name,train,dim", EMPTY_CASES)
def test_compiled_matches_eager_with_an_empty_dim(name, train, dim):
    """Input dim `dim` of size 0 (batch 0, no tokens, no channels, no pixels): wherever eager
    runs, the compiled model gives eager's (empty or NaN) outputs, BatchNorm statistics and
    gradients; where eager raises, the compiled call raises the same error type."""
    spec = MODELS[name]
    eager, _ = spec.build(train=train)
    model, _ = spec.build(train=train)
    cm = lucid.compile(model)
    for call in range(N_CALLS):
        arrays = spec.make_numpy(BATCH, 40 + call)
        args = [a[(slice(None),) * dim + (slice(0, 0),)] if k == 0 else a for k, a in enumerate(arrays)]
        with lucid.no_grad():
            try:
                want = eager(*(lucid.tensor(a) for a in args))
            except Exception as e:  # noqa: BLE001 - the compiled call must raise the same
                with pytest.raises(type(e)):
                    cm(*(lucid.tensor(a) for a in args))
                return
            got = cm(*(lucid.tensor(a) for a in args))
        assert_close(got, want, 1e-5, 1e-5, f"{name} call {call}")  # equal_nan: NaN where eager has NaN
        for (k, v), w in zip(model.state_dict().items(), eager.state_dict().values()):
            assert_close(v, w, 1e-5, 1e-5, f"{name} call {call}: {k}")
    # Under grad mode: the compiled backward's parameter gradients equal eager's.
    for m in (eager, model):
        for p in m.parameters():
            p.grad = None
    args = [lucid.tensor(a) for a in args]
    ye, yc = eager(*args), cm(*args)
    assert_close(yc, ye, 1e-5, 1e-5, f"{name} under grad mode")
    ye.sum().backward()
    yc.sum().backward()
    for (n, pe), pc in zip(eager.named_parameters(), model.parameters()):
        assert (pe.grad is None) == (pc.grad is None), n
        if pe.grad is not None:
            assert_close(pc.grad, pe.grad, 1e-5, 1e-5, f"{name}: grad of {n}")
    assert not cm.cache_info()["eager_only"], cm.cache_info()["eager_only"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,train", CASES)
def test_backward_through_compiled_forward_matches_eager(name, train, device):
    """Under grad mode the compiled call returns outputs whose backward runs the compiled
    backward graph: parameter gradients (and float input gradients) equal eager's."""
    spec = MODELS[name]
    eager, model = _twins_on(device, spec, train)
    cm = lucid.compile(model, strict=True)
    for i in range(N_CALLS):
        largs = _inputs_on(device, spec, 30 + i)
        ins_e = [a.detach().clone().requires_grad_(a.dtype.is_floating_point) for a in largs]
        ins_c = [a.detach().clone().requires_grad_(a.dtype.is_floating_point) for a in largs]
        for m in (eager, model):
            for p in m.parameters():
                p.grad = None
        ye, yc = eager(*ins_e), cm(*ins_c)
        assert max_rel_err(to_numpy(yc), to_numpy(ye)) <= spec.compiled_tol
        w = to_device(lucid.tensor(np.random.default_rng(i).standard_normal(tuple(ye.shape)).astype(np.float32)), device)
        (ye * w).sum().backward()
        (yc * w).sum().backward()
        for (n, pe), pc in zip(eager.named_parameters(), model.parameters()):
            assert (pe.grad is None) == (pc.grad is None), n
            if pe.grad is not None:
                err = max_rel_err(to_numpy(pc.grad), to_numpy(pe.grad))
                assert err <= 1e-4, f"{name} call {i}: grad of {n} max rel err {err:.3g}"
        for a, b in zip(ins_e, ins_c):
            if a.grad is not None:
                assert max_rel_err(to_numpy(b.grad), to_numpy(a.grad)) <= 1e-4
    info = cm.cache_info()
    assert info["entries"] == 1 and info["eager_only"] == {}
