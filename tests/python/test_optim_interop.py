"""Optimizer interop with torch: add_param_group mid-run follows torch's trajectory, and a
torch optimizer's state_dict (tensors converted through NumPy) loads into the lucid optimizer and
continues torch's trajectory, and the reverse (a lucid state_dict loads into torch)."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.optim as optim
from test_optim import X, Y, make_params, loss_fn, assert_params_close

CONFIGS = [("SGD", dict(lr=0.05, momentum=0.9)), ("SGD", dict(lr=0.05)), ("Adam", dict(lr=0.01, amsgrad=True)),
           ("AdamW", dict(lr=0.01, weight_decay=0.1)), ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9)),
           ("Adagrad", dict(lr=0.05)), ("Adadelta", dict(lr=1.0)), ("Adamax", dict(lr=0.01)),
           ("NAdam", dict(lr=0.01)), ("RAdam", dict(lr=0.01))]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)]


def _train(T, params, opt, n):
    x, y = T.tensor(X), T.tensor(Y)
    for _ in range(n):
        opt.zero_grad()
        loss_fn(params, x, y).backward()
        opt.step()


def _numpy(p):
    return p.detach().numpy().copy()


def _convert(value, to_lucid):
    if isinstance(value, torch.Tensor):
        return lucid.tensor(value.detach().numpy().copy())
    if isinstance(value, lucid.Tensor):
        return torch.from_numpy(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: _convert(v, to_lucid) for k, v in value.items()}
    if isinstance(value, list):
        return [_convert(v, to_lucid) for v in value]
    return value


@pytest.mark.parametrize("name, kwargs", CONFIGS, ids=IDS)
def test_add_param_group_matches_torch(name, kwargs):
    out = []
    for T, P, O in ((lucid, nn.Parameter, optim), (torch, torch.nn.Parameter, torch.optim)):
        params = make_params(T, P)
        opt = getattr(O, name)(params[:2], **kwargs)
        _train(T, params, opt, 5)
        opt.add_param_group({"params": params[2:], "lr": kwargs["lr"] * 0.3})
        _train(T, params, opt, 15)
        out.append(([_numpy(p) for p in params], opt))
    (lp, lo), (tp, to) = out
    assert_params_close(lp, tp)
    assert len(lo.param_groups) == len(to.param_groups) == 2
    lg, tg = lo.param_groups[1], to.param_groups[1]
    assert sorted(lg) == sorted(tg)
    assert {k: v for k, v in lg.items() if k != "params"} == {k: v for k, v in tg.items() if k != "params"}
    assert lo.state_dict()["param_groups"][1]["params"] == to.state_dict()["param_groups"][1]["params"]


def test_add_param_group_errors_match_torch():
    for T, P, O in ((lucid, nn.Parameter, optim), (torch, torch.nn.Parameter, torch.optim)):
        params = make_params(T, P)
        opt = O.SGD(params[:2], lr=0.1)
        with pytest.raises(ValueError, match="more than one parameter group"):
            opt.add_param_group({"params": [params[0]]})
        with pytest.raises(TypeError):
            opt.add_param_group([params[2]])
        with pytest.raises(TypeError, match="ordered collections"):
            opt.add_param_group({"params": {params[2]}})
        with pytest.raises(ValueError, match="non-leaf"):
            opt.add_param_group({"params": [params[2] * 2]})


@pytest.mark.parametrize("name, kwargs", CONFIGS, ids=IDS)
def test_torch_state_dict_loads_into_lucid_and_continues(name, kwargs):
    tparams = make_params(torch, torch.nn.Parameter)
    topt = getattr(torch.optim, name)([{"params": tparams[:2]}, {"params": tparams[2:], "lr": kwargs["lr"] * 0.5}],
                                      **kwargs)
    _train(torch, tparams, topt, 10)
    tsd = topt.state_dict()

    lparams = [nn.Parameter(lucid.tensor(_numpy(p))) for p in tparams]
    lopt = getattr(optim, name)([{"params": lparams[:2]}, {"params": lparams[2:]}], **kwargs)
    lopt.load_state_dict(_convert(tsd, True))
    assert lopt.param_groups[1]["lr"] == kwargs["lr"] * 0.5
    _train(torch, tparams, topt, 10)
    _train(lucid, lparams, lopt, 10)
    assert_params_close([_numpy(p) for p in lparams], [_numpy(p) for p in tparams])


@pytest.mark.parametrize("name, kwargs", CONFIGS, ids=IDS)
def test_lucid_state_dict_loads_into_torch_and_continues(name, kwargs):
    lparams = make_params(lucid, nn.Parameter)
    lopt = getattr(optim, name)(lparams, **kwargs)
    _train(lucid, lparams, lopt, 10)
    tparams = [torch.nn.Parameter(torch.from_numpy(_numpy(p))) for p in lparams]
    topt = getattr(torch.optim, name)(tparams, **kwargs)
    topt.load_state_dict(_convert(lopt.state_dict(), False))
    _train(torch, tparams, topt, 10)
    _train(lucid, lparams, lopt, 10)
    assert_params_close([_numpy(p) for p in lparams], [_numpy(p) for p in tparams])


def test_state_dict_structure_is_torchs():
    for T, P, O in ((lucid, nn.Parameter, optim), (torch, torch.nn.Parameter, torch.optim)):
        params = make_params(T, P)
        opt = O.Adam([{"params": params[:2]}, {"params": params[2:], "lr": 0.1}], lr=0.01)
        _train(T, params, opt, 2)
        sd = opt.state_dict()
        assert set(sd) == {"state", "param_groups"}
        assert list(sd["state"]) == [0, 1, 2] and all(isinstance(k, int) for k in sd["state"])
        assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
        assert np.isclose(float(sd["state"][2]["step"]), 2.0)
