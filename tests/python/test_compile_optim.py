"""compile_optimizer: opt.step() as one cached executable. Every run is compared with the same
optimizer run eagerly on a twin model (same weights, same batches): parameters within 1e-4
relative after 100 steps (float32; the compiled update evaluates the same formulas, but a
hyper-parameter is a float64 0-d tensor rather than a Python float, so roundings can differ by
an ulp per step). The 100-step comparison also runs on CUDA for a subset of the optimizers
(CUDA_OPTIMIZERS; model and eager twin on the GPU, parameters, gradients and state there, the step
counter and hyper-parameters host scalars as in eager)."""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim
from devices import requires_cuda, to_numpy

OPTIMIZERS = {
    "sgd": lambda p: optim.SGD(p, lr=0.05),
    "sgd_momentum": lambda p: optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-3),
    "sgd_nesterov_max": lambda p: optim.SGD(p, lr=1e-3, momentum=0.5, nesterov=True, maximize=True),
    "adam": lambda p: optim.Adam(p, lr=1e-2, weight_decay=1e-3),
    "adam_amsgrad": lambda p: optim.Adam(p, lr=1e-2, amsgrad=True),
    "adamw": lambda p: optim.AdamW(p, lr=1e-2),
    "rmsprop": lambda p: optim.RMSprop(p, lr=1e-3),
    "rmsprop_centered_momentum": lambda p: optim.RMSprop(p, lr=1e-3, centered=True, momentum=0.9),
    "adagrad": lambda p: optim.Adagrad(p, lr=1e-2, lr_decay=1e-3),
    "adadelta": lambda p: optim.Adadelta(p, lr=1.0),
    "adamax": lambda p: optim.Adamax(p, lr=1e-2),
    "nadam": lambda p: optim.NAdam(p, lr=1e-2),
    "radam": lambda p: optim.RAdam(p, lr=1e-2),
}


def mlp():
    return nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 5))


def cnn():
    # no conv bias before BatchNorm (it cancels out; its gradient is rounding noise that adaptive
    # optimizers amplify, so two eager runs would not agree on it either)
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 5))


MODELS = {"mlp": (mlp, (8, 10)), "cnn_bn": (cnn, (4, 2, 8, 8))}
CUDA_OPTIMIZERS = ["sgd_momentum", "adam", "adamw"]


def device_cases(names):
    """(name, device) parameters: every name on the CPU, those of CUDA_OPTIMIZERS on CUDA too."""
    return ([pytest.param(n, "cpu", id=f"{n}-cpu") for n in names]
            + [pytest.param(n, "cuda", id=f"{n}-cuda", marks=requires_cuda) for n in names if n in CUDA_OPTIMIZERS])


def twins(build, device="cpu"):
    lucid.manual_seed(0)
    a, b = build(), build()
    b.load_state_dict(a.state_dict())
    return a.to(device), b.to(device)


def rel_err(a, b):
    a, b = to_numpy(a).astype(np.float64), to_numpy(b).astype(np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def train(model, opt, shape, steps, sched=None, seed=1):
    device = next(model.parameters()).device
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = lucid.tensor(rng.standard_normal(shape).astype(np.float32)).to(device)
        y = lucid.tensor(rng.integers(0, 5, shape[0])).to(device)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        if sched is not None:
            sched.step()


def assert_params_close(m, ref, tol=1e-4):
    for (n, p), q in zip(m.named_parameters(), ref.parameters()):
        assert rel_err(p, q) <= tol, f"{n}: {rel_err(p, q):.3g}"


@pytest.mark.parametrize("cosine", [False, True], ids=["constant_lr", "cosine_lr"])
@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("name,device", device_cases(list(OPTIMIZERS)))
def test_compiled_optimizer_matches_eager_for_100_steps(name, device, model, cosine):
    # cosine: the learning rate changes every step, read at run time with no recompile.
    build, shape = MODELS[model]
    m, ref = twins(build, device)
    copt = lucid.compile.compile_optimizer(OPTIMIZERS[name](m.parameters()), strict=True)
    eopt = OPTIMIZERS[name](ref.parameters())
    sched = (lambda o: optim.lr_scheduler.CosineAnnealingLR(o, 100)) if cosine else (lambda o: None)
    train(m, copt, shape, 100, sched(copt.opt))
    train(ref, eopt, shape, 100, sched(eopt))
    assert_params_close(m, ref)
    assert copt.param_groups[0]["lr"] == eopt.param_groups[0]["lr"]
    info = copt.cache_info()
    assert info["eager_only"] == {} and info["entries"] == 1 and info["hits"] >= 90


@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "adamw", "rmsprop", "nadam"])
@pytest.mark.parametrize("sched", ["step", "cosine", "onecycle"])
def test_schedulers_take_effect_without_recompiling(name, sched):
    m, ref = twins(mlp)
    copt = lucid.compile.compile_optimizer(OPTIMIZERS[name](m.parameters()), strict=True)
    eopt = OPTIMIZERS[name](ref.parameters())

    def make(o):
        if sched == "step":
            return optim.lr_scheduler.StepLR(o, 10, 0.5)
        if sched == "cosine":
            return optim.lr_scheduler.CosineAnnealingLR(o, 40)
        return optim.lr_scheduler.OneCycleLR(o, max_lr=0.05, total_steps=60)  # also cycles momentum/betas

    train(m, copt, (8, 10), 50, make(copt.opt))
    train(ref, eopt, (8, 10), 50, make(eopt))
    assert_params_close(m, ref)
    assert copt.param_groups[0]["lr"] == eopt.param_groups[0]["lr"]
    assert copt.cache_info()["entries"] == 1


def test_manual_lr_change_and_param_groups_with_different_lrs():
    m, ref = twins(mlp)
    groups = lambda mm: [{"params": mm[0].parameters(), "lr": 1e-2}, {"params": mm[2].parameters(), "lr": 3e-3}]
    copt = lucid.compile.compile_optimizer(optim.Adam(groups(m)), strict=True)
    eopt = optim.Adam(groups(ref))
    train(m, copt, (8, 10), 10)
    train(ref, eopt, (8, 10), 10)
    for o in (copt, eopt):
        o.param_groups[1]["lr"] = 0.05
    train(m, copt, (8, 10), 10, seed=2)
    train(ref, eopt, (8, 10), 10, seed=2)
    assert_params_close(m, ref)
    assert copt.cache_info()["entries"] == 1


def test_frozen_parameters_and_missing_grads_are_skipped():
    m, ref = twins(mlp)
    for mm in (m, ref):
        mm[0].weight.requires_grad_(False)
    copt = lucid.compile.compile_optimizer(optim.SGD(m.parameters(), lr=0.1, momentum=0.9), strict=True)
    eopt = optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    w0 = m[0].weight.detach().clone()
    train(m, copt, (8, 10), 20)
    train(ref, eopt, (8, 10), 20)
    assert rel_err(m[0].weight, w0) == 0.0
    assert m[0].weight not in copt.state or not copt.state[m[0].weight]
    assert_params_close(m, ref)


def test_state_dict_resume_is_identical():
    m, ref = twins(mlp)
    copt = lucid.compile.compile_optimizer(optim.AdamW(m.parameters(), lr=1e-2), strict=True)
    eopt = optim.AdamW(ref.parameters(), lr=1e-2)
    train(m, copt, (8, 10), 15)
    train(ref, eopt, (8, 10), 15)
    sd = copt.state_dict()
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    fresh = lucid.compile.compile_optimizer(optim.AdamW(m.parameters(), lr=1e-2), strict=True)
    fresh.load_state_dict(sd)
    train(m, fresh, (8, 10), 15, seed=3)
    train(ref, eopt, (8, 10), 15, seed=3)
    assert_params_close(m, ref)


def test_lbfgs_is_not_supported():
    with pytest.raises(NotImplementedError, match="line search"):
        lucid.compile.compile_optimizer(optim.LBFGS(mlp().parameters()))
