"""Every torch.optim.lr_scheduler scheduler against torch: the lr of each param group (and the
momentum / beta1 the cyclic ones drive) over 60 steps equal torch's within 1e-12, a state_dict
taken mid-run and loaded into a freshly built optimizer + scheduler continues torch's trajectory,
and lucid offers every scheduler torch 2.13 exports."""
import math
import warnings

import pytest
import torch

import lucid
import lucid.optim as optim

STEPS = 60


def _params(T, P):
    return [P(T.ones(2)), P(T.ones(3))]


def _optimizer(T, O, P, kind):
    ps = _params(T, P)
    if kind == "adam":
        return O.Adam([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.003}], lr=0.01)
    return O.SGD([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.02}], lr=0.1, momentum=0.9)


def _metric(i):
    return [1.0, 0.8, 0.7, 0.69, 0.7, 0.71, 0.7, 0.72, 0.7, 0.69][i % 10] + (0.5 if i > 30 else 0.0)


def _mult(e):
    return 0.97 if e % 4 else 1.02


SCHEDULERS = {
    "MultiplicativeLR": lambda O, opt: O.lr_scheduler.MultiplicativeLR(opt, lr_lambda=_mult),
    "ConstantLR": lambda O, opt: O.lr_scheduler.ConstantLR(opt, factor=0.4, total_iters=7),
    "PolynomialLR": lambda O, opt: O.lr_scheduler.PolynomialLR(opt, total_iters=40, power=2.0),
    "PolynomialLR-linear": lambda O, opt: O.lr_scheduler.PolynomialLR(opt, total_iters=25),
    "CosineAnnealingWarmRestarts": lambda O, opt: O.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=7,
                                                                                               eta_min=1e-3),
    "CosineAnnealingWarmRestarts-mult": lambda O, opt: O.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3,
                                                                                                    T_mult=2),
    "CyclicLR-triangular": lambda O, opt: O.lr_scheduler.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=5),
    "CyclicLR-triangular2": lambda O, opt: O.lr_scheduler.CyclicLR(opt, base_lr=[0.01, 0.001], max_lr=[0.1, 0.05],
                                                                   step_size_up=4, step_size_down=7,
                                                                   mode="triangular2"),
    "CyclicLR-exp_range": lambda O, opt: O.lr_scheduler.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=6,
                                                                 mode="exp_range", gamma=0.97,
                                                                 base_momentum=0.7, max_momentum=0.95),
    "CyclicLR-scale_fn": lambda O, opt: O.lr_scheduler.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                                scale_fn=lambda x: 0.5 ** x, scale_mode="iterations",
                                                                cycle_momentum=False),
    "SequentialLR": lambda O, opt: O.lr_scheduler.SequentialLR(
        opt, [O.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5),
              O.lr_scheduler.ExponentialLR(opt, gamma=0.9),
              O.lr_scheduler.CosineAnnealingLR(opt, T_max=12)], milestones=[5, 20]),
    "SequentialLR-constant": lambda O, opt: O.lr_scheduler.SequentialLR(
        opt, [O.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=3),
              O.lr_scheduler.PolynomialLR(opt, total_iters=30, power=1.5)], milestones=[8]),
    "ChainedScheduler": lambda O, opt: O.lr_scheduler.ChainedScheduler(
        [O.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=6), O.lr_scheduler.ExponentialLR(opt, gamma=0.95),
         O.lr_scheduler.StepLR(opt, step_size=9, gamma=0.5)]),
    "ReduceLROnPlateau": lambda O, opt: O.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2, cooldown=1),
    "ReduceLROnPlateau-max-abs": lambda O, opt: O.lr_scheduler.ReduceLROnPlateau(
        opt, mode="max", factor=0.3, patience=1, threshold=0.05, threshold_mode="abs", min_lr=[0.0, 0.005]),
}
ADAM = {"CyclicLR-triangular", "CyclicLR-exp_range"}  # also run with Adam (beta1 cycles)


def _groups(opt):
    return [(g["lr"], g.get("momentum"), g["betas"][0] if "betas" in g else None) for g in opt.param_groups]


def _step(sched, i):
    if "Plateau" in type(sched).__name__:
        sched.step(_metric(i))
    else:
        sched.step()


def _trajectory(name, kind, T, O, P, resume_at=None):
    opt = _optimizer(T, O, P, kind)
    sched = SCHEDULERS[name](O, opt)
    out = [_groups(opt)]
    for i in range(STEPS):
        if i == resume_at:
            opt_sd, sched_sd = opt.state_dict(), sched.state_dict()
            opt = _optimizer(T, O, P, kind)
            sched = SCHEDULERS[name](O, opt)
            opt.load_state_dict(opt_sd)
            sched.load_state_dict(sched_sd)
        opt.step()
        _step(sched, i)
        out.append(_groups(opt))
    return out, sched


def _assert_same(lo, to):
    assert len(lo) == len(to)
    for step, (lg, tg) in enumerate(zip(lo, to)):
        for (llr, lm, lb), (tlr, tm, tb) in zip(lg, tg):
            assert abs(llr - tlr) <= 1e-12, f"step {step}: lr {llr} vs torch {tlr}"
            assert (lm is None) == (tm is None) and (lm is None or abs(lm - tm) <= 1e-12), f"step {step} momentum"
            assert (lb is None) == (tb is None) and (lb is None or abs(lb - tb) <= 1e-12), f"step {step} beta1"


CASES = [(n, "sgd") for n in SCHEDULERS] + [(n, "adam") for n in sorted(ADAM)]


@pytest.mark.parametrize("name, kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
@pytest.mark.parametrize("resume_at", [None, 23], ids=["straight", "state_dict-at-23"])
def test_scheduler_trajectory_matches_torch(name, kind, resume_at):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo, ls = _trajectory(name, kind, lucid, optim, lucid.nn.Parameter, resume_at)
        to, ts = _trajectory(name, kind, torch, torch.optim, torch.nn.Parameter, resume_at)
    _assert_same(lo, to)
    assert len({g[0][0] for g in to}) > 1  # the lr really moves over the run
    assert ls.get_last_lr() == pytest.approx(ts.get_last_lr(), abs=1e-12)


@pytest.mark.parametrize("name", ["MultiplicativeLR", "ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts",
                                  "CyclicLR-triangular", "ReduceLROnPlateau", "SequentialLR", "ChainedScheduler"])
def test_state_dict_keys_match_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo = SCHEDULERS[name](optim, _optimizer(lucid, optim, lucid.nn.Parameter, "sgd"))
        to = SCHEDULERS[name](torch.optim, _optimizer(torch, torch.optim, torch.nn.Parameter, "sgd"))
    assert set(lo.state_dict()) <= set(to.state_dict())
    public = {k for k in to.state_dict() if not k.startswith("_") or k in ("_schedulers", "_milestones", "_last_lr")}
    assert public <= set(lo.state_dict())


def test_closed_form_step_epoch_matches_torch():
    for name in ("ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts-mult"):
        res = []
        for T, O, P in ((lucid, optim, lucid.nn.Parameter), (torch, torch.optim, torch.nn.Parameter)):
            opt = _optimizer(T, O, P, "sgd")
            sched = SCHEDULERS[name](O, opt)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lrs = []
                for e in (3, 10, 4, 17, 2.5 if "Warm" in name else 2):
                    opt.step()
                    sched.step(e)
                    lrs.append([g["lr"] for g in opt.param_groups])
            res.append(lrs)
        for la, ta in zip(*res):
            assert la == pytest.approx(ta, abs=1e-12), name


def test_every_torch_scheduler_exists():
    import torch.optim.lr_scheduler as tls
    missing = [n for n in tls.__all__ if not hasattr(optim.lr_scheduler, n)]
    assert missing == []
    assert sorted(optim.lr_scheduler.__all__) == sorted(tls.__all__)


@pytest.mark.parametrize("make", [
    lambda O, opt: O.lr_scheduler.ReduceLROnPlateau(opt, factor=1.5),
    lambda O, opt: O.lr_scheduler.ReduceLROnPlateau(opt, mode="median"),
    lambda O, opt: O.lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1]),
    lambda O, opt: O.lr_scheduler.ConstantLR(opt, factor=1.5),
    lambda O, opt: O.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=0),
    lambda O, opt: O.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=0),
    lambda O, opt: O.lr_scheduler.CyclicLR(opt, 0.01, 0.1, mode="zigzag"),
    lambda O, opt: O.lr_scheduler.CyclicLR(opt, [0.01], 0.1),
    lambda O, opt: O.lr_scheduler.SequentialLR(opt, [O.lr_scheduler.ConstantLR(opt)], milestones=[3]),
    lambda O, opt: O.lr_scheduler.SequentialLR(opt, [O.lr_scheduler.ReduceLROnPlateau(opt)], milestones=[]),
    lambda O, opt: O.lr_scheduler.ChainedScheduler([]),
    lambda O, opt: O.lr_scheduler.MultiplicativeLR(opt, lr_lambda=3),
])
def test_bad_arguments_raise_like_torch(make):
    with pytest.raises(Exception) as te:
        make(torch.optim, _optimizer(torch, torch.optim, torch.nn.Parameter, "sgd"))
    with pytest.raises(type(te.value)):
        make(optim, _optimizer(lucid, optim, lucid.nn.Parameter, "sgd"))


def test_sequential_rejects_a_foreign_optimizer():
    a = _optimizer(lucid, optim, lucid.nn.Parameter, "sgd")
    b = _optimizer(lucid, optim, lucid.nn.Parameter, "sgd")
    with pytest.raises(ValueError, match="same optimizer"):
        optim.lr_scheduler.SequentialLR(a, [optim.lr_scheduler.ConstantLR(b)], milestones=[])
    assert math.isfinite(a.param_groups[0]["lr"])
