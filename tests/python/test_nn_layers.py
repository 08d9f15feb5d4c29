"""Each lucid.nn layer vs its torch.nn twin: same weights (copied through state_dict), same input;
forward outputs, input gradients and parameter gradients compared (float64 and float32). The
twin tests take a device (devices.py): on CUDA both twins and their inputs move to the GPU."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from devices import DEVICES, to_device, to_numpy

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape)


def to_lucid_sd(sd):
    out = {}
    for k, v in sd.items():
        out[k] = lucid.tensor(v.detach().numpy())
    return out


def twin(name, args=(), kwargs=None, dtype="float64", device="cpu"):
    kwargs = kwargs or {}
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(*args, **kwargs)
    lm = getattr(nn, name)(*args, **kwargs)
    if dtype == "float64":
        tm, lm = tm.double(), lm.double()
    res = lm.load_state_dict(to_lucid_sd(tm.state_dict()))
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert [n for n, _ in lm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    if device != "cpu":
        lm, tm = lm.to(device), tm.to(device)
    return lm, tm


def compare(lm, tm, inputs, dtype="float64", int_inputs=(), train=True, rtol=None, atol=None, out_index=None,
            call_kwargs=None, device="cpu"):
    call_kwargs = call_kwargs or {}
    rtol = rtol or (1e-7 if dtype == "float64" else 2e-5)
    atol = atol or (1e-9 if dtype == "float64" else 2e-6)
    lm.train(train)
    tm.train(train)
    np_dt = np.float64 if dtype == "float64" else np.float32
    lin, tin = [], []
    for i, a in enumerate(inputs):
        if i in int_inputs:
            lin.append(to_device(lucid.tensor(a), device))
            tin.append(to_device(torch.from_numpy(a), device))
        else:
            a = a.astype(np_dt)
            lin.append(to_device(lucid.tensor(a), device).requires_grad_(True))
            tin.append(to_device(torch.from_numpy(a.copy()), device).requires_grad_(True))
    lk = {k: (to_device(lucid.tensor(v), device) if isinstance(v, np.ndarray) else v) for k, v in call_kwargs.items()}
    tk = {k: (to_device(torch.from_numpy(v), device) if isinstance(v, np.ndarray) else v)
          for k, v in call_kwargs.items()}
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
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=rtol, atol=atol)
        if b.requires_grad:
            g = RNG.standard_normal(tuple(b.shape)).astype(np_dt)
            ll = (a * to_device(lucid.tensor(g), device)).sum()
            tl = (b * to_device(torch.from_numpy(g), device)).sum()
            lloss = ll if lloss is None else lloss + ll
            tloss = tl if tloss is None else tloss + tl
    if tloss is None:
        return lo, to
    lloss.backward()
    tloss.backward()
    for i, (a, b) in enumerate(zip(lin, tin)):
        if b.grad is not None:
            np.testing.assert_allclose(to_numpy(a.grad), to_numpy(b.grad), rtol=rtol * 10, atol=atol * 10,
                                       err_msg=f"input {i} grad")
    lp = dict(lm.named_parameters())
    for n, p in tm.named_parameters():
        if p.grad is None:
            assert lp[n].grad is None or np.all(to_numpy(lp[n].grad) == 0), n
            continue
        np.testing.assert_allclose(to_numpy(lp[n].grad), to_numpy(p.grad), rtol=rtol * 10, atol=atol * 10, err_msg=n)
    return lo, to


LAYERS = [
    ("Linear", (5, 4), {}, [(3, 5)]),
    ("Linear", (5, 4), {"bias": False}, [(2, 3, 5)]),
    ("Bilinear", (3, 4, 2), {}, [(5, 3), (5, 4)]),
    ("Conv1d", (3, 4, 3), {"stride": 2, "padding": 1}, [(2, 3, 9)]),
    ("Conv2d", (3, 4, 3), {"padding": 1}, [(2, 3, 6, 5)]),
    ("Conv2d", (4, 6, (3, 2)), {"stride": (2, 1), "dilation": (1, 2), "groups": 2, "bias": False}, [(2, 4, 7, 8)]),
    ("Conv2d", (2, 3, 3), {"padding": "same"}, [(1, 2, 5, 5)]),
    ("ConvTranspose2d", (4, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}, [(2, 4, 4, 5)]),
    ("MaxPool2d", (2,), {}, [(2, 3, 6, 6)]),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1}, [(2, 3, 7, 7)]),
    ("AvgPool2d", (2,), {}, [(2, 3, 6, 6)]),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, [(2, 3, 7, 8)]),
    ("LayerNorm", (6,), {}, [(3, 4, 6)]),
    ("LayerNorm", ((4, 6),), {"elementwise_affine": False}, [(3, 4, 6)]),
    ("GroupNorm", (2, 4), {}, [(3, 4, 5)]),
    ("RMSNorm", (6,), {"eps": 1e-6}, [(3, 6)]),
    ("Flatten", (), {}, [(2, 3, 4)]),
    ("Unflatten", (1, (2, 6)), {}, [(3, 12)]),
    ("Identity", (), {}, [(3, 4)]),
    ("ReLU", (), {}, [(3, 4)]),
    ("ReLU6", (), {}, [(3, 4)]),
    ("LeakyReLU", (0.1,), {}, [(3, 4)]),
    ("ELU", (0.7,), {}, [(3, 4)]),
    ("GELU", (), {}, [(3, 4)]),
    ("GELU", ("tanh",), {}, [(3, 4)]),
    ("SiLU", (), {}, [(3, 4)]),
    ("Hardswish", (), {}, [(3, 4)]),
    ("Hardsigmoid", (), {}, [(3, 4)]),
    ("Softplus", (), {"beta": 2.0, "threshold": 5.0}, [(3, 4)]),
    ("Sigmoid", (), {}, [(3, 4)]),
    ("Tanh", (), {}, [(3, 4)]),
    ("Softmax", (1,), {}, [(3, 4)]),
    ("LogSoftmax", (-1,), {}, [(3, 4)]),
    ("Softmin", (1,), {}, [(3, 4)]),
    ("SELU", (), {}, [(3, 4)]),
    ("CELU", (0.5,), {}, [(3, 4)]),
    ("Mish", (), {}, [(3, 4)]),
    ("Softsign", (), {}, [(3, 4)]),
    ("LogSigmoid", (), {}, [(3, 4)]),
    ("Hardtanh", (-0.5, 0.8), {}, [(3, 4)]),
    ("GLU", (1,), {}, [(3, 6)]),
    ("PReLU", (3,), {"init": 0.1}, [(2, 3, 5)]),
    ("PReLU", (), {}, [(4, 5)]),
    ("Conv1d", (2, 3, 3), {"padding": 2, "padding_mode": "reflect"}, [(2, 2, 7)]),
    ("Conv2d", (2, 3, 3), {"padding": 1, "padding_mode": "circular"}, [(1, 2, 5, 6)]),
    ("ConvTranspose1d", (3, 2, 4), {"stride": 2}, [(2, 3, 5)]),
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1}, [(2, 3, 9)]),
    ("AvgPool1d", (2,), {}, [(2, 3, 8)]),
    ("AdaptiveAvgPool1d", (3,), {}, [(2, 3, 8)]),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,args,kwargs,shapes", LAYERS, ids=[f"{l[0]}-{i}" for i, l in enumerate(LAYERS)])
@pytest.mark.parametrize("device", DEVICES)
def test_layer_matches_torch(name, args, kwargs, shapes, dtype, device):
    lm, tm = twin(name, args, kwargs, dtype, device)
    compare(lm, tm, [randn(*s) for s in shapes], dtype, device=device)


@pytest.mark.parametrize("name", ["BatchNorm1d", "BatchNorm2d"])
@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("device", DEVICES)
def test_batchnorm_train_eval_and_running_stats(name, momentum, device):
    shape = (6, 3) if name == "BatchNorm1d" else (4, 3, 5, 5)
    lm, tm = twin(name, (3,), {"momentum": momentum}, device=device)
    for _ in range(3):
        compare(lm, tm, [randn(*shape)], train=True, device=device)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(to_numpy(lm.state_dict()[k]), to_numpy(v), rtol=1e-10, atol=1e-12, err_msg=k)
    assert int(lm.num_batches_tracked.item()) == 3
    compare(lm, tm, [randn(*shape)], train=False, device=device)


def test_batchnorm_no_running_stats():
    lm, tm = twin("BatchNorm2d", (3,), {"track_running_stats": False, "affine": False})
    compare(lm, tm, [randn(2, 3, 4, 4)], train=True)
    compare(lm, tm, [randn(2, 3, 4, 4)], train=False)


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_padding_idx(device):
    lm, tm = twin("Embedding", (10, 4), {"padding_idx": 2}, device=device)
    idx = np.array([[1, 2, 3], [2, 9, 1]], dtype=np.int64)
    compare(lm, tm, [idx], int_inputs=(0,), device=device)


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
    ("HuberLoss", {"delta": 0.7}, "float"),
    ("KLDivLoss", {"reduction": "batchmean"}, "logprob_prob"),
    ("KLDivLoss", {"reduction": "sum", "log_target": True}, "logprob_logprob"),
]


@pytest.mark.parametrize("name,kwargs,kind", LOSSES, ids=[f"{l[0]}-{i}" for i, l in enumerate(LOSSES)])
@pytest.mark.parametrize("device", DEVICES)
def test_loss_modules(name, kwargs, kind, device):
    lm, tm = twin(name, (), kwargs, device=device)
    x = randn(5, 4)
    if kind == "float":
        compare(lm, tm, [x, randn(5, 4)], device=device)
    elif kind == "class":
        compare(lm, tm, [x, RNG.integers(0, 4, (5,)).astype(np.int64)], int_inputs=(1,), device=device)
    elif kind == "logprob":
        lp = x - np.log(np.exp(x).sum(1, keepdims=True))
        compare(lm, tm, [lp, RNG.integers(0, 4, (5,)).astype(np.int64)], int_inputs=(1,), device=device)
    elif kind == "prob":
        compare(lm, tm, [1 / (1 + np.exp(-x)), RNG.uniform(0, 1, (5, 4))], device=device)
    elif kind == "logprob_prob":
        lp = x - np.log(np.exp(x).sum(1, keepdims=True))
        t = RNG.uniform(0, 1, (5, 4))
        compare(lm, tm, [lp, t / t.sum(1, keepdims=True)], device=device)
    elif kind == "logprob_logprob":
        lp = x - np.log(np.exp(x).sum(1, keepdims=True))
        compare(lm, tm, [lp, np.log(RNG.uniform(0.1, 1, (5, 4)))], device=device)
    else:
        compare(lm, tm, [x, RNG.uniform(0, 1, (5, 4))], device=device)


def test_cross_entropy_with_class_weights():
    w = RNG.uniform(0.5, 2.0, (4,))
    tm = torch.nn.CrossEntropyLoss(weight=torch.from_numpy(w))
    lm = nn.CrossEntropyLoss(weight=lucid.tensor(w))
    assert list(lm.state_dict().keys()) == list(tm.state_dict().keys()) == ["weight"]
    compare(lm, tm, [randn(6, 4), RNG.integers(0, 4, (6,)).astype(np.int64)], int_inputs=(1,))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("device", DEVICES)
def test_multihead_attention(batch_first, need_weights, device):
    lm, tm = twin("MultiheadAttention", (8, 2), {"batch_first": batch_first}, device=device)
    shape = (3, 5, 8) if batch_first else (5, 3, 8)
    q, k = randn(*shape), randn(*shape[:-1], 8)
    compare(lm, tm, [q, k, k], train=False, call_kwargs={"need_weights": need_weights}, device=device)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_self_attention_packed_projection_vs_torch(batch_first):
    # q is k is v: one GEMM for the packed in-projection (chunked), as PyTorch does; outputs,
    # weights and every parameter's and the input's gradient against torch.
    lm, tm = twin("MultiheadAttention", (8, 2), {"batch_first": batch_first})
    x = randn(3, 5, 8)
    lx, tx = lucid.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    lo, lw = lm(lx, lx, lx)
    to, tw = tm(tx, tx, tx)
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(lw.detach().numpy(), tw.detach().numpy(), rtol=1e-7, atol=1e-9)
    g = randn(*to.shape)
    (lo * lucid.tensor(g)).sum().backward()
    (to * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-7, atol=1e-9)
    for (n, p), q in zip(lm.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-7, atol=1e-9, err_msg=n)


def test_multihead_attention_masks():
    lm, tm = twin("MultiheadAttention", (8, 4), {"batch_first": True})
    q = randn(2, 5, 8)
    kv = randn(2, 6, 8)
    attn_mask = np.triu(np.ones((5, 6), dtype=bool), k=2)
    kpm = np.zeros((2, 6), dtype=bool)
    kpm[1, -2:] = True
    compare(lm, tm, [q, kv, kv], train=False, call_kwargs={"attn_mask": attn_mask, "key_padding_mask": kpm})
    compare(lm, tm, [q, kv, kv], train=False,
            call_kwargs={"attn_mask": np.where(attn_mask, -1e9, 0.0), "need_weights": False})


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_transformer_encoder_layer(norm_first, activation, batch_first, device):
    lm, tm = twin("TransformerEncoderLayer", (8, 2), {"dim_feedforward": 16, "dropout": 0.0,
                                                      "activation": activation, "norm_first": norm_first,
                                                      "batch_first": batch_first}, device=device)
    compare(lm, tm, [randn(3, 4, 8)], train=True, rtol=1e-6, atol=1e-8, device=device)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("num_layers,bidirectional,batch_first", [(1, False, False), (2, True, True),
                                                                  (2, False, True)])
@pytest.mark.parametrize("device", DEVICES)
def test_recurrent(name, num_layers, bidirectional, batch_first, device):
    lm, tm = twin(name, (4, 5), {"num_layers": num_layers, "bidirectional": bidirectional,
                                 "batch_first": batch_first}, device=device)
    x = randn(3, 6, 4)
    compare(lm, tm, [x], rtol=1e-6, atol=1e-8, device=device)


def test_lstm_with_initial_state_and_unbatched():
    lm, tm = twin("LSTM", (3, 4), {"num_layers": 2})
    h0, c0 = randn(2, 2, 4), randn(2, 2, 4)
    lo = lm(lucid.tensor(randn(5, 2, 3) * 0), (lucid.tensor(h0), lucid.tensor(c0)))
    to_ = tm(torch.zeros(5, 2, 3, dtype=torch.float64), (torch.from_numpy(h0), torch.from_numpy(c0)))
    np.testing.assert_allclose(lo[0].detach().numpy(), to_[0].detach().numpy(), rtol=1e-7)
    np.testing.assert_allclose(lo[1][1].detach().numpy(), to_[1][1].detach().numpy(), rtol=1e-7)
    x = randn(5, 3)
    compare(lm, tm, [x], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("device", DEVICES)
def test_cells(name, device):
    lm, tm = twin(name, (4, 3), device=device)
    compare(lm, tm, [randn(5, 4)], device=device)
    compare(lm, tm, [randn(4)], device=device)


@pytest.mark.parametrize("name", ["Dropout1d", "Dropout2d", "Dropout3d"])
def test_feature_dropout_zeroes_whole_channels(name):
    shape = {"Dropout1d": (20, 30, 5), "Dropout2d": (20, 30, 4, 4), "Dropout3d": (20, 30, 2, 2, 2)}[name]
    d = getattr(nn, name)(0.4)
    y = d(lucid.full(shape, 1.0)).numpy().reshape(20, 30, -1)
    assert np.all(y.min(-1) == y.max(-1))  # constant per channel
    assert np.all(np.isclose(y, 0.0) | np.isclose(y, 1 / 0.6)) and 0.3 < (y[..., 0] == 0).mean() < 0.5
    d.eval()
    np.testing.assert_array_equal(d(lucid.full(shape, 1.0)).numpy(), np.ones(shape, np.float32))


FUNCTIONAL = [
    ("normalize", lambda T, F, x, y: F.normalize(x, p=2.0, dim=1)),
    ("normalize-p1", lambda T, F, x, y: F.normalize(x, p=1.0, dim=0)),
    ("cosine_similarity", lambda T, F, x, y: F.cosine_similarity(x, y, dim=1)),
    ("pairwise_distance", lambda T, F, x, y: F.pairwise_distance(x, y)),
    ("pairwise_distance-p3", lambda T, F, x, y: F.pairwise_distance(x, y, p=3.0, keepdim=True)),
    ("softmin", lambda T, F, x, y: F.softmin(x, dim=0)),
    ("tanhshrink", lambda T, F, x, y: F.tanhshrink(x)),
    ("kl_div-mean", lambda T, F, x, y: F.kl_div(F.log_softmax(x, 1), F.softmax(y, 1), reduction="mean")),
    ("relu_", lambda T, F, x, y: F.relu_(x * 1.0)),
    ("leaky_relu_", lambda T, F, x, y: F.leaky_relu_(x * 1.0, 0.2)),
]


@pytest.mark.parametrize("name,fn", FUNCTIONAL, ids=[f[0] for f in FUNCTIONAL])
def test_functional_composites(name, fn):
    import lucid.nn.functional as LF
    import torch.nn.functional as TF
    a, b = randn(4, 5), randn(4, 5)
    la, lb = lucid.tensor(a).requires_grad_(True), lucid.tensor(b).requires_grad_(True)
    ta, tb = torch.from_numpy(a).requires_grad_(True), torch.from_numpy(b).requires_grad_(True)
    lo, to = fn(lucid, LF, la, lb), fn(torch, TF, ta, tb)
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-7, atol=1e-10)
    g = randn(*tuple(to.shape))
    (lo * lucid.tensor(g)).sum().backward()
    (to * torch.from_numpy(g)).sum().backward()
    for lx, tx in ((la, ta), (lb, tb)):
        if tx.grad is not None:
            np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_one_hot():
    import lucid.nn.functional as LF
    idx = np.array([[0, 3], [2, 1]], dtype=np.int64)
    for k in (-1, 6):
        lo = LF.one_hot(lucid.tensor(idx), k)
        to = torch.nn.functional.one_hot(torch.from_numpy(idx), k)
        assert lo.dtype == lucid.int64
        np.testing.assert_array_equal(lo.numpy(), to.numpy())


def test_kl_div_zero_targets_forward():
    import lucid.nn.functional as LF
    x = randn(3, 4)
    lp = x - np.log(np.exp(x).sum(1, keepdims=True))
    t = RNG.uniform(0, 1, (3, 4))
    t[0, 1] = 0.0
    for red in ("none", "sum", "batchmean"):
        lo = LF.kl_div(lucid.tensor(lp), lucid.tensor(t), reduction=red)
        to = torch.nn.functional.kl_div(torch.from_numpy(lp), torch.from_numpy(t), reduction=red)
        np.testing.assert_allclose(lo.numpy(), to.numpy(), rtol=1e-12)


def test_alpha_dropout_keeps_moments():
    d = nn.AlphaDropout(0.2)
    assert repr(d) == repr(torch.nn.AlphaDropout(0.2))
    x = lucid.tensor(RNG.standard_normal((400, 250)).astype(np.float32))
    y = d(x).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.03
    d.eval()
    np.testing.assert_array_equal(d(x).numpy(), x.numpy())
