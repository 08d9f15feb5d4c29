"""Each lucid.nn layer vs its torch.nn twin: same weights (copied through state_dict), same input;
forward outputs, input gradients and parameter gradients compared (float64 and float32)."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape)


def to_lucid_sd(sd):
    out = {}
    for k, v in sd.items():
        out[k] = lucid.tensor(v.detach().numpy())
    return out


def twin(name, args=(), kwargs=None, dtype="float64"):
    kwargs = kwargs or {}
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(*args, **kwargs)
    lm = getattr(nn, name)(*args, **kwargs)
    if dtype == "float64":
        tm, lm = tm.double(), lm.double()
    res = lm.load_state_dict(to_lucid_sd(tm.state_dict()))
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert [n for n, _ in lm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    return lm, tm


def compare(lm, tm, inputs, dtype="float64", int_inputs=(), train=True, rtol=None, atol=None, out_index=None,
            call_kwargs=None):
    call_kwargs = call_kwargs or {}
    rtol = rtol or (1e-7 if dtype == "float64" else 2e-5)
    atol = atol or (1e-9 if dtype == "float64" else 2e-6)
    lm.train(train)
    tm.train(train)
    np_dt = np.float64 if dtype == "float64" else np.float32
    lin, tin = [], []
    for i, a in enumerate(inputs):
        if i in int_inputs:
            lin.append(lucid.tensor(a))
            tin.append(torch.from_numpy(a))
        else:
            a = a.astype(np_dt)
            lin.append(lucid.tensor(a).requires_grad_(True))
            tin.append(torch.from_numpy(a.copy()).requires_grad_(True))
    lk = {k: (lucid.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in call_kwargs.items()}
    tk = {k: (torch.from_numpy(v) if isinstance(v, np.ndarray) else v) for k, v in call_kwargs.items()}
    lo, to = lm(*lin, **lk), tm(*tin, **tk)
    if out_index is not None:
        lo, to = lo[out_index], to[out_index]
    lo_list = lo if isinstance(lo, (tuple, list)) else [lo]
    to_list = to if isinstance(to, (tuple, list)) else [to]
    lflat, tflat = [], []

    def flatten(x, acc):
        if isinstance(x, (tuple, list)):
            for e in x:
                flatten(e, acc)
        elif x is not None:
            acc.append(x)
    flatten(lo_list, lflat)
    flatten(to_list, tflat)
    assert len(lflat) == len(tflat)
    lloss, tloss = None, None
    for a, b in zip(lflat, tflat):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)
        if b.requires_grad:
            g = RNG.standard_normal(tuple(b.shape)).astype(np_dt)
            ll = (a * lucid.tensor(g)).sum()
            tl = (b * torch.from_numpy(g)).sum()
            lloss = ll if lloss is None else lloss + ll
            tloss = tl if tloss is None else tloss + tl
    if tloss is None:
        return lo, to
    lloss.backward()
    tloss.backward()
    for i, (a, b) in enumerate(zip(lin, tin)):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol * 10, atol=atol * 10,
                                       err_msg=f"input {i} grad")
    lp = dict(lm.named_parameters())
    for n, p in tm.named_parameters():
        if p.grad is None:
            assert lp[n].grad is None or np.all(lp[n].grad.numpy() == 0), n
            continue
        np.testing.assert_allclose(lp[n].grad.numpy(), p.grad.numpy(), rtol=rtol * 10, atol=atol * 10, err_msg=n)
    return lo, to


LAYERS = [
    ("LayerNorm", (6,), {}, [(3, 4, 6)]),
    ("LayerNorm", ((4, 6),), {"elementwise_affine": False}, [(3, 4, 6)]),
    ("GroupNorm", (2, 4), {}, [(3, 4, 5)]),
    ("RMSNorm", (6,), {"eps": 1e-6}, [(3, 6)]),
    ("Flatten", (), {}, [(2, 3, 4)]),
    ("Unflatten", (1, (2, 6)), {}, [(3, 12)]),
    ("Identity", (), {}, [(3, 4)]),
    ("Softmax", (1,), {}, [(3, 4)]),
    ("LogSoftmax", (-1,), {}, [(3, 4)]),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,args,kwargs,shapes", LAYERS, ids=[f"{l[0]}-{i}" for i, l in enumerate(LAYERS)])
def test_layer_matches_torch(name, args, kwargs, shapes, dtype):
    lm, tm = twin(name, args, kwargs, dtype)
    compare(lm, tm, [randn(*s) for s in shapes], dtype)


@pytest.mark.parametrize("name", ["BatchNorm1d", "BatchNorm2d"])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_train_eval_and_running_stats(name, momentum):
    shape = (6, 3) if name == "BatchNorm1d" else (4, 3, 5, 5)
    lm, tm = twin(name, (3,), {"momentum": momentum})
    for _ in range(3):
        compare(lm, tm, [randn(*shape)], train=True)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(lm.state_dict()[k].numpy(), v.numpy(), rtol=1e-10, atol=1e-12, err_msg=k)
    assert int(lm.num_batches_tracked.item()) == 3
    compare(lm, tm, [randn(*shape)], train=False)


def test_batchnorm_no_running_stats():
    lm, tm = twin("BatchNorm2d", (3,), {"track_running_stats": False, "affine": False})
    compare(lm, tm, [randn(2, 3, 4, 4)], train=True)
    compare(lm, tm, [randn(2, 3, 4, 4)], train=False)


def test_embedding_padding_idx():
    lm, tm = twin("Embedding", (10, 4), {"padding_idx": 2})
    idx = np.array([[1, 2, 3], [2, 9, 1]], dtype=np.int64)
    compare(lm, tm, [idx], int_inputs=(0,))


def test_dropout_train_and_eval():
    d = nn.Dropout(0.5)
    x = lucid.full((200, 50), 1.0)
    y = d(x).numpy()
    assert set(np.unique(y)).issubset({0.0, 2.0}) and 0.4 < (y == 0).mean() < 0.6
    d.eval()
    np.testing.assert_array_equal(d(x).numpy(), x.numpy())


LOSSES = [
    ("MSELoss", {}, "float"),
    ("MSELoss", {"reduction": "sum"}, "float"),
    ("L1Loss", {}, "float"),
    ("SmoothL1Loss", {"beta": 0.5}, "float"),
    ("CrossEntropyLoss", {}, "class"),
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "ignore_index": 1}, "class"),
    ("NLLLoss", {"reduction": "sum"}, "logprob"),
    ("BCELoss", {}, "prob"),
    ("BCEWithLogitsLoss", {}, "float01"),
]


@pytest.mark.parametrize("name,kwargs,kind", LOSSES, ids=[f"{l[0]}-{i}" for i, l in enumerate(LOSSES)])
def test_loss_modules(name, kwargs, kind):
    lm, tm = twin(name, (), kwargs)
    x = randn(5, 4)
    if kind == "float":
        compare(lm, tm, [x, randn(5, 4)])
    elif kind == "class":
        compare(lm, tm, [x, RNG.integers(0, 4, (5,)).astype(np.int64)], int_inputs=(1,))
    elif kind == "logprob":
        lp = x - np.log(np.exp(x).sum(1, keepdims=True))
        compare(lm, tm, [lp, RNG.integers(0, 4, (5,)).astype(np.int64)], int_inputs=(1,))
    elif kind == "prob":
        compare(lm, tm, [1 / (1 + np.exp(-x)), RNG.uniform(0, 1, (5, 4))])
    else:
        compare(lm, tm, [x, RNG.uniform(0, 1, (5, 4))])


def test_cross_entropy_with_class_weights():
    w = RNG.uniform(0.5, 2.0, (4,))
    tm = torch.nn.CrossEntropyLoss(weight=torch.from_numpy(w))
    lm = nn.CrossEntropyLoss(weight=lucid.tensor(w))
    assert list(lm.state_dict().keys()) == list(tm.state_dict().keys()) == ["weight"]
    compare(lm, tm, [randn(6, 4), RNG.integers(0, 4, (6,)).astype(np.int64)], int_inputs=(1,))
