"""lucid.optim vs torch.optim: 30 steps of each optimizer on the same parameters, data and loss
(parameters equal within 1e-5 relative in float32), param groups, schedulers changing lr mid-run,
state_dict round trips that resume identically, and argument / load errors. The trajectory tests
take a device (devices.py): on CUDA the parameters, data and optimizer state live on the GPU,
against torch.optim on the same GPU."""
import math

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.optim as optim
from devices import DEVICES, to_device, to_numpy

RNG = np.random.default_rng(1234)
X = RNG.standard_normal((8, 4)).astype(np.float32)
Y = RNG.standard_normal((8, 3)).astype(np.float32)
W0 = (RNG.standard_normal((4, 3)) * 0.5).astype(np.float32)
B0 = (RNG.standard_normal((3,)) * 0.1).astype(np.float32)
V0 = (RNG.standard_normal((3,)) * 0.5).astype(np.float32)


def make_params(T, P, device="cpu"):
    return [P(to_device(T.tensor(a.copy()), device)) for a in (W0, B0, V0)]


def loss_fn(params, x, y):
    """A small non-linear least-squares model written with broadcasting ops only."""
    w, b, v = params
    n = x.shape[0]
    pred = (x.reshape(n, 4, 1) * w.reshape(1, 4, 3)).sum(1) + b
    h = pred * v + pred * pred * 0.1
    r = h - y
    return (r * r).sum() / n


def run(opt_name, kwargs, steps=30, groups=False, sched=None, closure=False, device="cpu"):
    out = []
    for T, P, O in ((lucid, nn.Parameter, optim), (torch, torch.nn.Parameter, torch.optim)):
        params = make_params(T, P, device)
        x, y = to_device(T.tensor(X), device), to_device(T.tensor(Y), device)
        if groups:
            pg = [{"params": params[:2]}, {"params": params[2:], "lr": kwargs.get("lr", 1e-2) * 0.5}]
            opt = getattr(O, opt_name)(pg, **kwargs)
        else:
            opt = getattr(O, opt_name)(params, **kwargs)
        scheduler = sched(O, opt) if sched is not None else None
        lrs = []
        for _ in range(steps):
            def closure_fn():
                opt.zero_grad()
                loss = loss_fn(params, x, y)
                loss.backward()
                return loss
            if closure:
                opt.step(closure_fn)
            else:
                closure_fn()
                opt.step()
            if scheduler is not None:
                scheduler.step()
                lrs.append([g["lr"] for g in opt.param_groups])
        for p in params:  # the optimizer's state lives beside its parameter
            for v in opt.state[p].values() if p in opt.state else ():
                if isinstance(v, T.Tensor) and v.dim() > 0:
                    assert v.device.type == device, f"{opt_name} state on {v.device}"
        out.append(([to_numpy(p).copy() for p in params], lrs, opt))
    return out


def assert_params_close(lo, to, rtol=1e-5, atol=1e-6):
    for i, (a, b) in enumerate(zip(lo, to)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"param {i}")


OPT_CONFIGS = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.05)),
    ("Adagrad", dict(lr=0.05, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1)),
    ("Adadelta", dict(lr=1.0)),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.01)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, weight_decay=0.01)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True)),
]


@pytest.mark.parametrize("name,kwargs", OPT_CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPT_CONFIGS)])
@pytest.mark.parametrize("device", DEVICES)
def test_optimizer_matches_torch(name, kwargs, device):
    (lp, _, _), (tp, _, _) = run(name, kwargs, device=device)
    assert_params_close(lp, tp)


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.05, momentum=0.9)), ("Adam", dict(lr=0.01)),
                                         ("RMSprop", dict(lr=0.01, momentum=0.5))])
@pytest.mark.parametrize("device", DEVICES)
def test_param_groups_match_torch(name, kwargs, device):
    (lp, _, lo), (tp, _, to) = run(name, kwargs, groups=True, device=device)
    assert_params_close(lp, tp)
    assert len(lo.param_groups) == 2 and lo.param_groups[1]["lr"] == to.param_groups[1]["lr"]
    assert sorted(lo.param_groups[0].keys()) == sorted(to.param_groups[0].keys())


SCHEDULERS = {
    "StepLR": lambda O, opt: O.lr_scheduler.StepLR(opt, step_size=7, gamma=0.5),
    "MultiStepLR": lambda O, opt: O.lr_scheduler.MultiStepLR(opt, milestones=[5, 12, 12, 20], gamma=0.3),
    "ExponentialLR": lambda O, opt: O.lr_scheduler.ExponentialLR(opt, gamma=0.9),
    "CosineAnnealingLR": lambda O, opt: O.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.001),
    "LambdaLR": lambda O, opt: O.lr_scheduler.LambdaLR(opt, lr_lambda=lambda e: 1.0 / (1 + e)),
    "LinearLR": lambda O, opt: O.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=12),
    "OneCycleLR": lambda O, opt: O.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=30),
    "OneCycleLR-3phase-linear": lambda O, opt: O.lr_scheduler.OneCycleLR(opt, max_lr=[0.1, 0.05], total_steps=30,
                                                                         three_phase=True, anneal_strategy="linear"),
}


@pytest.mark.parametrize("sched", list(SCHEDULERS))
@pytest.mark.parametrize("device", DEVICES)
def test_scheduler_matches_torch(sched, device):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (lp, llrs, lo), (tp, tlrs, to) = run("SGD", dict(lr=0.05, momentum=0.9), groups=True,
                                              sched=SCHEDULERS[sched], device=device)
    np.testing.assert_allclose(np.array(llrs), np.array(tlrs), rtol=1e-12)
    assert len(set(map(tuple, llrs))) > 1  # the lr really changed mid-run
    assert_params_close(lp, tp)
    if sched.startswith("OneCycle"):
        assert lo.param_groups[0]["momentum"] == pytest.approx(to.param_groups[0]["momentum"], rel=1e-12)


def test_onecycle_with_adam_cycles_beta1():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (lp, llrs, lo), (tp, tlrs, to) = run("Adam", dict(lr=0.01), sched=SCHEDULERS["OneCycleLR"])
    np.testing.assert_allclose(np.array(llrs), np.array(tlrs), rtol=1e-12)
    assert lo.param_groups[0]["betas"] == pytest.approx(to.param_groups[0]["betas"], rel=1e-12)
    assert_params_close(lp, tp)


def test_scheduler_state_dict_and_closed_form():
    import warnings
    p = [nn.Parameter(lucid.full((2,), 1.0))]
    tp = [torch.nn.Parameter(torch.full((2,), 1.0))]
    lo, to = optim.SGD(p, lr=0.1), torch.optim.SGD(tp, lr=0.1)
    ls = optim.lr_scheduler.StepLR(lo, step_size=3, gamma=0.5)
    ts = torch.optim.lr_scheduler.StepLR(to, step_size=3, gamma=0.5)
    for _ in range(5):
        lo.step()
        to.step()
        ls.step()
        ts.step()
    assert ls.get_last_lr() == ts.get_last_lr()
    sd = ls.state_dict()
    assert list(sd.keys()) == list(ts.state_dict().keys())
    ls2 = optim.lr_scheduler.StepLR(optim.SGD(p, lr=0.1), step_size=3, gamma=0.5)
    ls2.load_state_dict(sd)
    assert ls2.last_epoch == ls.last_epoch and ls2.get_last_lr() == ls.get_last_lr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ls.step(11)
        ts.step(11)
    assert ls.get_last_lr() == ts.get_last_lr()


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
                                         ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.01)),
                                         ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9)),
                                         ("Adagrad", dict(lr=0.05)), ("Adadelta", dict(lr=1.0)),
                                         ("Adamax", dict(lr=0.01)), ("NAdam", dict(lr=0.01)),
                                         ("RAdam", dict(lr=0.01))])
@pytest.mark.parametrize("device", DEVICES)
def test_state_dict_round_trip_resumes_identically(name, kwargs, device, tmp_path):
    x, y = to_device(lucid.tensor(X), device), to_device(lucid.tensor(Y), device)

    def train(params, opt, n):
        for _ in range(n):
            opt.zero_grad()
            loss_fn(params, x, y).backward()
            opt.step()

    ref = make_params(lucid, nn.Parameter, device)
    ref_opt = getattr(optim, name)(ref, **kwargs)
    train(ref, ref_opt, 20)

    a = make_params(lucid, nn.Parameter, device)
    a_opt = getattr(optim, name)(a, **kwargs)
    train(a, a_opt, 10)
    sd = a_opt.state_dict()
    # torch's layout: integer ids, hyper-parameters in the groups
    tparams = make_params(torch, torch.nn.Parameter)
    t_opt = getattr(torch.optim, name)(tparams, **kwargs)
    for _ in range(2):
        t_opt.zero_grad()
        loss_fn(tparams, torch.tensor(X), torch.tensor(Y)).backward()
        t_opt.step()
    tsd = t_opt.state_dict()
    assert list(sd["state"].keys()) == list(tsd["state"].keys())
    assert sorted(sd["state"][0].keys()) == sorted(tsd["state"][0].keys())
    assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"]
    assert sorted(sd["param_groups"][0].keys()) == sorted(tsd["param_groups"][0].keys())
    for key, tv in tsd["state"][0].items():  # counters are 0-d float tensors, buffers match the param
        lv = sd["state"][0][key]
        assert isinstance(lv, lucid.Tensor) == isinstance(tv, torch.Tensor), key
        if isinstance(tv, torch.Tensor):
            assert tuple(lv.shape) == tuple(tv.shape) and lv.dtype.name == str(tv.dtype)[6:], key

    path = tmp_path / "opt.safetensors"
    lucid.save({"model": {str(i): p.detach() for i, p in enumerate(a)}, "optim": sd}, path)
    blob = lucid.load(path)
    b = make_params(lucid, nn.Parameter, device)
    with lucid.no_grad():
        for i, p in enumerate(b):
            p.zero_()
            p.add_(to_device(blob["model"][str(i)], device))
    b_opt = getattr(optim, name)(b, **kwargs)
    b_opt.load_state_dict(blob["optim"])
    train(b, b_opt, 10)
    for p, q in zip(ref, b):
        np.testing.assert_array_equal(to_numpy(p), to_numpy(q))


def test_optimizer_errors_match_torch():
    p = nn.Parameter(lucid.full((2,), 1.0))
    with pytest.raises(ValueError):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError):
        optim.SGD([p], lr=-1.0)
    with pytest.raises(ValueError):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError):
        optim.SGD([p, p], lr=0.1)
    with pytest.raises(ValueError):
        optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(ValueError):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError):
        optim.SGD([{"params": {p}}], lr=0.1)
    opt = optim.SGD([p], lr=0.1)
    q = nn.Parameter(lucid.full((3,), 1.0))
    opt.add_param_group({"params": q, "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([p], lr=0.1).load_state_dict(opt.state_dict())
    other = optim.SGD([{"params": [p]}, {"params": [q, nn.Parameter(lucid.full((1,), 0.0))]}], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size"):
        other.load_state_dict(opt.state_dict())


def test_zero_grad_set_to_none():
    p = nn.Parameter(lucid.full((2,), 1.0))
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and float(p.grad.sum().item()) == 0.0
    opt.zero_grad()
    assert p.grad is None


def test_hyperparameters_read_each_step():
    (lp, _, _), (tp, _, _) = [r for r in run("SGD", dict(lr=0.05, momentum=0.9), steps=3)]
    params = make_params(lucid, nn.Parameter)
    opt = optim.SGD(params, lr=0.05, momentum=0.9)
    x, y = lucid.tensor(X), lucid.tensor(Y)
    for i in range(6):
        opt.zero_grad()
        loss_fn(params, x, y).backward()
        opt.step()
        if i == 2:
            snapshot = [p.detach().numpy().copy() for p in params]
            opt.param_groups[0]["lr"] = 0.0
    assert_params_close(snapshot, lp)
    for a, b in zip(params, snapshot):  # lr=0 written into the group stops the updates
        np.testing.assert_array_equal(a.detach().numpy(), b)


def test_repr_matches_torch():
    p = nn.Parameter(lucid.full((2,), 1.0))
    tp = torch.nn.Parameter(torch.full((2,), 1.0))
    assert repr(optim.SGD([p], lr=0.1, momentum=0.9)) == repr(torch.optim.SGD([tp], lr=0.1, momentum=0.9))


@pytest.mark.parametrize("kwargs,steps", [(dict(lr=0.5, max_iter=5), 4),
                                          (dict(lr=1, max_iter=10, history_size=4, line_search_fn="strong_wolfe"), 2)])
@pytest.mark.parametrize("device", DEVICES)
def test_lbfgs_matches_torch(kwargs, steps, device):
    # 20-25 inner iterations; beyond that float32 rounding differences grow chaotically on this non-convex loss
    (lp, _, lo), (tp, _, to) = run("LBFGS", kwargs, steps=steps, closure=True, device=device)
    assert_params_close(lp, tp, rtol=1e-5, atol=1e-5)
    ls, ts = lo.state[lo._params[0]], to.state[to._params[0]]
    assert ls["func_evals"] == ts["func_evals"] and ls["n_iter"] == ts["n_iter"]


_ = math
