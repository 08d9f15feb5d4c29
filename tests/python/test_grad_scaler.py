"""lucid.amp.GradScaler against torch.amp.GradScaler("cpu"): the same MLP (lucid's weights copied
from a torch twin) trained 50 steps with SGD and Adam under the scaler, with inf/NaN gradients
injected on chosen steps and a growth interval of 3, so the scale both grows and backs off;
parameters, scale, growth tracker and step's return value are compared at every step. Also
unscale_ + clip_grad_norm_ before step (torch's recipe), two optimizers sharing a scaler, the
autocast recipe (float16 and bfloat16) whose float16 gradients overflow until the scale backs off,
the two kernels (`_unscale_grads_`, `_update_scale_`) against torch's `_amp_*` ops case by case,
scale() of nested outputs, state_dict / load_state_dict / pickle, the disabled scaler, and every
error torch raises, raised by lucid with the same type and message."""
import pickle

import numpy as np
import pytest
import torch

import lucid
import lucid.optim as loptim
from lucid.amp.grad_scaler import OptState, _unscale_grads_, _update_scale_
from devices import DEVICES, HAS_CUDA, to_device, to_numpy

RNG = np.random.default_rng(16)
X = RNG.standard_normal((16, 6)).astype(np.float32)
Y = RNG.standard_normal((16, 3)).astype(np.float32)
STEPS = 50
# step -> how its gradients are made non-finite: the loss times inf (every gradient inf/NaN), one
# element of one gradient set to NaN, or to inf.
INJECT = {4: "inf_loss", 5: "nan_grad", 17: "inf_grad", 18: "inf_grad", 33: "nan_grad", 41: "inf_loss"}
OPTIMIZERS = [("SGD", dict(lr=0.05, momentum=0.9)), ("Adam", dict(lr=0.01))]
# (init_scale, growth_factor, backoff_factor): torch's defaults, and factors whose float64
# products round differently in float32, with a scale that is not a power of two.
FACTORS = [(2.0**16, 2.0, 0.5), (1000.0, 1.7, 0.3)]


def _mlp(T):
    nn = T.nn
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))


def _twins(device="cpu"):
    torch.manual_seed(0)
    tm = _mlp(torch)
    lm = _mlp(lucid)
    lm.load_state_dict({k: lucid.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    return to_device(lm, device), tm


def _loss(T, model, x, y):
    return ((model(x) - y) ** 2).mean()


def _inject(loss, kind):
    """The loss to backpropagate: times inf when this step's `kind` says so."""
    return loss * float("inf") if kind == "inf_loss" else loss


def _poison_grad(model, kind):
    value = {"nan_grad": float("nan"), "inf_grad": float("inf")}.get(kind)
    if value is not None:
        list(model.parameters())[2].grad[1, 3] = value


def _train(T, model, opt, scaler, device, steps=STEPS, clip=None):
    """Runs the training loop; per step: (parameters, scale, growth tracker, step's return value)."""
    x, y = to_device(T.tensor(X), device), to_device(T.tensor(Y), device)
    trace = []
    for i in range(steps):
        opt.zero_grad()
        loss = _inject(_loss(T, model, x, y), INJECT.get(i))
        scaler.scale(loss).backward()
        _poison_grad(model, INJECT.get(i))
        if clip is not None:
            scaler.unscale_(opt)
            T.nn.utils.clip_grad_norm_(model.parameters(), clip)
        ret = scaler.step(opt, lambda: i)  # a positional closure: step returns its value unless skipped
        scaler.update()
        trace.append(([to_numpy(p).copy() for p in model.parameters()], scaler.get_scale(),
                      scaler._get_growth_tracker(), ret))
    return trace


def _assert_traces_equal(lt, tt, rtol=2e-5, atol=1e-6):
    scales = {s for _, s, _, _ in tt}
    assert len(scales) > 3, "the run should both grow and back off the scale"
    for step, ((lp, ls, lg, lr), (tp, ts, tg, tr)) in enumerate(zip(lt, tt)):
        assert ls == pytest.approx(ts, rel=1e-7), f"scale at step {step}"
        assert lg == tg, f"growth tracker at step {step}"
        assert lr == tr, f"step's return value at step {step}"
        for a, b in zip(lp, tp):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"parameters at step {step}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("factors", FACTORS, ids=["default", "odd"])
@pytest.mark.parametrize("name, kwargs", OPTIMIZERS, ids=[n for n, _ in OPTIMIZERS])
@pytest.mark.parametrize("clip", [None, 0.5], ids=["noclip", "clip"])
def test_trajectory_matches_torch(name, kwargs, factors, clip, device):
    init_scale, growth, backoff = factors
    cfg = dict(init_scale=init_scale, growth_factor=growth, backoff_factor=backoff, growth_interval=3)
    lm, tm = _twins(device)
    lt = _train(lucid, lm, getattr(loptim, name)(lm.parameters(), **kwargs),
                lucid.amp.GradScaler(device, **cfg), device, clip=clip)
    tt = _train(torch, tm, getattr(torch.optim, name)(tm.parameters(), **kwargs),
                torch.amp.GradScaler("cpu", **cfg), "cpu", clip=clip)
    assert sum(r is None for *_, r in tt) == len(INJECT)
    _assert_traces_equal(lt, tt)


def _two_optimizer_run(T, model):
    """Two optimizers sharing one scaler; step 3 poisons only the second one's gradients."""
    params = list(model.parameters())
    opts = [T.optim.SGD(params[:2], lr=0.05), T.optim.Adam(params[2:], lr=0.01)]
    scaler = (lucid.amp.GradScaler("cpu", growth_interval=2) if T is lucid
              else torch.amp.GradScaler("cpu", growth_interval=2))
    x, y = T.tensor(X), T.tensor(Y)
    trace = []
    for i in range(8):
        for o in opts:
            o.zero_grad()
        scaler.scale(_loss(T, model, x, y)).backward()
        if i == 3:
            params[4].grad[0, 0] = float("nan")
        rets = [scaler.step(o, lambda: 1) for o in opts]
        stages = sorted(s["stage"].name for s in scaler._per_optimizer_states.values())
        scaler.update()
        trace.append(([to_numpy(p).copy() for p in params], scaler.get_scale(), scaler._get_growth_tracker(),
                      rets, stages))
    return trace


def test_two_optimizers_one_scaler_match_torch():
    lm, tm = _twins()
    lt, tt = _two_optimizer_run(lucid, lm), _two_optimizer_run(torch, tm)
    assert tt[3][3] == [1, None]  # only the poisoned optimizer skipped; the scale backs off for both
    for step, ((lp, ls, lg, lr, lst), (tp, ts, tg, tr, tst)) in enumerate(zip(lt, tt)):
        assert (ls, lg, lr, lst) == (ts, tg, tr, tst), f"step {step}"
        for a, b in zip(lp, tp):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def _autocast_run(T, model, dtype, steps=30):
    """torch's AMP recipe on the CPU: the forward under autocast, float32 master weights, a scale
    large enough (2**30) that float16 activation gradients overflow until it has backed off."""
    opt = T.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = (lucid.amp.GradScaler if T is lucid else torch.amp.GradScaler)("cpu", init_scale=2.0**30,
                                                                            growth_interval=4)
    x, y = T.tensor(X), T.tensor(Y)
    trace = []
    for i in range(steps):
        opt.zero_grad()
        with T.autocast("cpu", dtype=getattr(T, dtype)):
            loss = _loss(T, model, x, y)
        scaler.scale(loss).backward()
        assert all(p.grad.dtype == T.float32 for p in model.parameters())
        ret = scaler.step(opt, lambda: i)
        scaler.update()
        trace.append((scaler.get_scale(), scaler._get_growth_tracker(), ret))
    return trace, [to_numpy(p) for p in model.parameters()]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_autocast_recipe_backs_off_on_real_overflow_as_torch(dtype):
    lm, tm = _twins()
    (lt, lp), (tt, tp) = _autocast_run(lucid, lm, dtype), _autocast_run(torch, tm, dtype)
    assert lt == tt
    if dtype == "float16":  # the first steps overflow in float16 and are skipped; later ones grow again
        assert tt[0][2] is None and tt[-1][2] is not None
    for a, b in zip(lp, tp):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


UNSCALE_CASES = [
    ("float32", [[1.0, -2.5, 3e-5]], 0.0, 2.0**-16),
    ("float32", [[1.0, float("inf")], [2.0, 3.0]], 0.0, 2.0**-10),
    ("float32", [[1.0, 2.0], [float("nan"), 3.0]], 0.0, 1.0 / 3.0),
    ("float32", [[1.0, 2.0]], 1.0, 0.25),  # found_inf already set stays set
    ("float64", [[1.0, 1.0 / 3.0, -float("inf")]], 0.0, 1.0 / 3.0),
    ("bfloat16", [[1.0, 2.0, 5.0, 7.0, -3.0]], 0.0, 1.0 / 3.0),  # one rounding, from float32
    ("float16", [[1.0, 2.0, 5.0, 7.0, 60000.0]], 0.0, 1.0 / 3.0),
    ("float16", [[1.0, float("nan")]], 0.0, 0.5),
]


@pytest.mark.parametrize("dtype, values, found, inv", UNSCALE_CASES)
def test_unscale_grads_matches_torch_kernel(dtype, values, found, inv):
    tg = [torch.tensor(v, dtype=getattr(torch, dtype)) for v in values]
    tf, ti = torch.full((), found), torch.full((), inv)
    torch._amp_foreach_non_finite_check_and_unscale_(tg, tf, ti)
    lg = [lucid.tensor(v, dtype=getattr(lucid, dtype)) for v in values]
    lf, li = lucid.full((), found), lucid.full((), inv)
    _unscale_grads_(lg, li, lf)
    assert lf.item() == tf.item()
    for a, b in zip(lg, tg):
        assert a.dtype == getattr(lucid, dtype)
        np.testing.assert_array_equal(to_numpy(a), b.float().numpy() if dtype == "bfloat16" else b.numpy())


UPDATE_CASES = [  # (scale, tracker, found_inf, growth, backoff, interval)
    (65536.0, 0, 0.0, 2.0, 0.5, 3), (65536.0, 2, 0.0, 2.0, 0.5, 3), (65536.0, 2, 1.0, 2.0, 0.5, 3),
    (65536.0, 1, 2.0, 2.0, 0.5, 3), (1000.0, 4, 0.0, 1.7, 0.3, 5), (1000.0, 4, 1.0, 1.7, 0.3, 5),
    (3.0e38, 0, 0.0, 2.0, 0.5, 1),  # growing would overflow float32: the scale stays, the tracker resets
    (1.0, 0, 0.0, 2.0, 0.5, 1), (7.0, 6, 0.0, 1.1, 0.9, 2000),
]


@pytest.mark.parametrize("case", UPDATE_CASES)
def test_update_scale_matches_torch_kernel(case):
    scale, tracker, found, growth, backoff, interval = case
    ts, tt = torch.full((), scale), torch.full((), tracker, dtype=torch.int32)
    torch._amp_update_scale_(ts, tt, torch.full((), found), growth, backoff, interval)
    ls, lt = lucid.full((), scale), lucid.full((), tracker, dtype=lucid.int32)
    _update_scale_(ls, lt, lucid.full((), found), growth, backoff, interval)
    assert (ls.dtype, lt.dtype, ls.shape, lt.shape) == (lucid.float32, lucid.int32, (), ())
    assert ls.item() == ts.item() and lt.item() == tt.item()


def test_scale_nested_outputs_and_tensor_state_match_torch():
    vals = [[1.0, 2.0], [3.0], [4.0, -5.0]]
    res = {}
    for T, S in ((lucid, lucid.amp.GradScaler), (torch, torch.amp.GradScaler)):
        s = S("cpu", init_scale=8.0)
        a, b, c = (T.tensor(v) for v in vals)
        out = s.scale([a, (b, [c])])
        gen = s.scale(iter([a]))  # another iterable: a lazy map, as torch
        res[T.__name__] = (type(out), type(out[1]), type(out[1][1]), [to_numpy(t).tolist() for t in (
            out[0], out[1][0], out[1][1][0])], to_numpy(next(gen)).tolist(), s._scale.dtype is T.float32,
            s._growth_tracker.dtype is T.int32, tuple(s._scale.shape), tuple(s._growth_tracker.shape))
    assert res["lucid"] == res["torch"]
    assert res["torch"][3] == [[8.0, 16.0], [24.0], [32.0, -40.0]]


def test_bfloat16_loss_scaled_with_one_rounding_as_torch():
    t = torch.amp.GradScaler("cpu", init_scale=0.3).scale(torch.tensor([7.0, 5.0]).bfloat16())
    lt = lucid.amp.GradScaler("cpu", init_scale=0.3).scale(lucid.tensor([7.0, 5.0]).to(lucid.bfloat16))
    assert lt.dtype == lucid.bfloat16
    np.testing.assert_array_equal(to_numpy(lt), t.float().numpy())


def _stage_run(T, S):
    """Per-optimizer stages through one iteration (after scale, unscale_, step, update)."""
    model = _mlp(T)
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    s = S("cpu")
    s.scale(_loss(T, model, T.tensor(X), T.tensor(Y))).backward()
    stages = [dict(s._per_optimizer_states)]
    s.unscale_(opt)
    stages.append(s._per_optimizer_states[id(opt)]["stage"].name)
    s.step(opt)
    stages.append(s._per_optimizer_states[id(opt)]["stage"].name)
    stages.append(sorted(s._per_optimizer_states[id(opt)]["found_inf_per_device"]) == [T.device("cpu")])
    s.update()
    stages.append(dict(s._per_optimizer_states))
    return stages


def test_optimizer_states_follow_torch():
    assert _stage_run(lucid, lucid.amp.GradScaler) == _stage_run(torch, torch.amp.GradScaler)
    assert [m.name for m in OptState] == [m.name for m in torch.amp.grad_scaler.OptState]


def test_state_dict_round_trip_and_keys_match_torch():
    lm, tm = _twins()
    cfg = dict(init_scale=512.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=3)
    ls, ts = lucid.amp.GradScaler("cpu", **cfg), torch.amp.GradScaler("cpu", **cfg)
    assert ls.state_dict() == ts.state_dict()  # before the first scale(): the initial numbers
    _train(lucid, lm, loptim.SGD(lm.parameters(), lr=0.01), ls, "cpu", steps=8)
    _train(torch, tm, torch.optim.SGD(tm.parameters(), lr=0.01), ts, "cpu", steps=8)
    lsd, tsd = ls.state_dict(), ts.state_dict()
    assert lsd == tsd and list(lsd) == list(tsd)
    assert [type(v) for v in lsd.values()] == [type(v) for v in tsd.values()]
    for fresh in (lucid.amp.GradScaler("cpu"), lucid.amp.GradScaler("cpu")):
        fresh.load_state_dict(tsd)  # torch's state_dict loads into lucid
        assert fresh.state_dict() == tsd
    fresh.scale(lucid.tensor(1.0))  # the tensors are made from the loaded numbers
    assert (fresh._scale.item(), fresh._growth_tracker.item()) == (tsd["scale"], tsd["_growth_tracker"])
    ts2 = torch.amp.GradScaler("cpu")
    ts2.load_state_dict(lsd)  # and lucid's into torch
    assert ts2.state_dict() == lsd
    ls.load_state_dict({**lsd, "scale": 5.0, "_growth_tracker": 1})  # live tensors are filled in place
    assert (ls._scale.item(), ls._growth_tracker.item()) == (5.0, 1)


def test_pickle_round_trip_matches_torch():
    out = []
    for T, S in ((lucid, lucid.amp.GradScaler), (torch, torch.amp.GradScaler)):
        s = S("cpu", init_scale=64.0, growth_interval=5)
        s.scale(T.tensor(1.0))
        s2 = pickle.loads(pickle.dumps(s))
        out.append((s2.state_dict(), s2._scale))
    assert out[0] == out[1] and out[0][1] is None


def test_getters_setters_and_update_new_scale():
    s = lucid.amp.GradScaler("cpu")
    assert (s.get_scale(), s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval(), s.is_enabled()) == \
        (2.0**16, 2.0, 0.5, 2000, True)
    s.set_growth_factor(4.0)
    s.set_backoff_factor(0.125)
    s.set_growth_interval(7)
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (4.0, 0.125, 7)
    s.scale(lucid.tensor(1.0))
    s.update(new_scale=3.5)
    assert s.get_scale() == 3.5
    s.update(new_scale=lucid.tensor(9.0))
    assert s.get_scale() == 9.0


def test_disabled_scaler_is_a_pass_through():
    model = _mlp(lucid)
    opt = loptim.SGD(model.parameters(), lr=0.1)
    s = lucid.amp.GradScaler("cpu", enabled=False)
    loss = _loss(lucid, model, lucid.tensor(X), lucid.tensor(Y))
    assert s.scale(loss) is loss
    loss.backward()
    before = [to_numpy(p).copy() for p in model.parameters()]
    grads = [to_numpy(p.grad).copy() for p in model.parameters()]
    s.unscale_(opt)
    assert s.step(opt, lambda: 42) == 42
    s.update()
    for b, g, p in zip(before, grads, model.parameters()):
        np.testing.assert_allclose(to_numpy(p), b - 0.1 * g, rtol=1e-6, atol=1e-7)
    assert (s.get_scale(), s.state_dict(), s._get_growth_tracker(), s.is_enabled()) == (1.0, {}, 0, False)
    s.load_state_dict({})  # a no-op when disabled


@pytest.mark.skipif(HAS_CUDA, reason="checks the machine without CUDA")
def test_cuda_scaler_without_cuda_warns_and_disables_as_torch():
    with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available.  Disabling."):
        s = lucid.amp.GradScaler()
    with pytest.warns(UserWarning, match="CUDA is not available"):
        t = torch.amp.GradScaler()
    assert s.is_enabled() is t.is_enabled() is False
    with pytest.warns(FutureWarning, match="deprecated"), pytest.warns(UserWarning, match="Disabling"):
        c = lucid.cuda.amp.GradScaler(init_scale=4.0)
    assert isinstance(c, lucid.amp.GradScaler) and not c.is_enabled()
    assert lucid.GradScaler is lucid.amp.GradScaler and lucid.cuda.amp.OptState is OptState


def _fresh(T, S, **kw):
    model = _mlp(T)
    return model, T.optim.SGD(model.parameters(), lr=0.1), S("cpu", **kw)


def _backward(T, model, s):
    s.scale(_loss(T, model, T.tensor(X), T.tensor(Y))).backward()


def _err_scale_non_tensor(T, S):
    S("cpu").scale(3.0)


def _err_scale_nested_non_tensor(T, S):
    S("cpu").scale([T.tensor(1.0), 2.0])


def _err_step_without_scale(T, S):
    model, opt, s = _fresh(T, S)
    _loss(T, model, T.tensor(X), T.tensor(Y)).backward()
    s.step(opt)


def _err_unscale_without_scale(T, S):
    model, opt, s = _fresh(T, S)
    s.unscale_(opt)


def _err_update_without_scale(T, S):
    S("cpu").update()


def _err_unscale_twice(T, S):
    model, opt, s = _fresh(T, S)
    _backward(T, model, s)
    s.unscale_(opt)
    s.unscale_(opt)


def _err_unscale_after_step(T, S):
    model, opt, s = _fresh(T, S)
    _backward(T, model, s)
    s.step(opt)
    s.unscale_(opt)


def _err_step_twice(T, S):
    model, opt, s = _fresh(T, S)
    _backward(T, model, s)
    s.step(opt)
    s.step(opt)


def _err_step_no_grads(T, S):
    model, opt, s = _fresh(T, S)
    s.scale(T.tensor(1.0))  # scaled something, but this optimizer's parameters have no gradients
    s.step(opt)


def _err_update_before_step(T, S):
    model, opt, s = _fresh(T, S)
    _backward(T, model, s)
    s.update()


def _err_closure_kwarg(T, S):
    model, opt, s = _fresh(T, S)
    _backward(T, model, s)
    s.step(opt, closure=lambda: 0)


def _err_fp16_grads(T, S):
    p = T.nn.Parameter(T.ones(3, dtype=T.float16))
    opt = T.optim.SGD([p], lr=0.1)
    s = S("cpu")
    s.scale((p * 2).sum()).backward()
    s.step(opt)


def _err_growth_factor(T, S):
    S("cpu", growth_factor=1.0)


def _err_backoff_factor(T, S):
    S("cpu", backoff_factor=1.0)


def _err_load_empty(T, S):
    S("cpu").load_state_dict({})


def _err_new_scale_numel(T, S):
    s = S("cpu")
    s.scale(T.tensor(1.0))
    s.update(new_scale=T.tensor([1.0, 2.0]))


def _err_new_scale_requires_grad(T, S):
    s = S("cpu")
    s.scale(T.tensor(1.0))
    s.update(new_scale=T.tensor(2.0, requires_grad=True))


def _err_pickle_mid_iteration(T, S):
    model, opt, s = _fresh(T, S)
    _backward(T, model, s)
    s.unscale_(opt)
    pickle.dumps(s)


ERRORS = [_err_scale_non_tensor, _err_scale_nested_non_tensor, _err_step_without_scale, _err_unscale_without_scale,
          _err_update_without_scale, _err_unscale_twice, _err_unscale_after_step, _err_step_twice,
          _err_step_no_grads, _err_update_before_step, _err_closure_kwarg, _err_fp16_grads, _err_growth_factor,
          _err_backoff_factor, _err_load_empty, _err_new_scale_numel, _err_new_scale_requires_grad,
          _err_pickle_mid_iteration]


def _raised(fn, T, S):
    with pytest.raises(Exception) as info:
        fn(T, S)
    return info.type, str(info.value)


@pytest.mark.parametrize("fn", ERRORS, ids=[f.__name__[5:] for f in ERRORS])
def test_errors_match_torch(fn):
    ltype, lmsg = _raised(fn, lucid, lucid.amp.GradScaler)
    ttype, tmsg = _raised(fn, torch, torch.amp.GradScaler)
    assert ltype is ttype
    if "new_scale" not in fn.__name__:  # torch's reason names torch's tensor types
        assert lmsg == tmsg
