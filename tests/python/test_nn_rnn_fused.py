"""nn.LSTM / nn.GRU on the fused recurrence ops (LstmRecurrence, GruRecurrence; ops/nn_rnn.cpp)
against torch: outputs, h_n / c_n, and the gradients of the input, the initial state and every
parameter, in float32 (1e-5) and float64, over sequence lengths 1..50, batch 1, 3 and 7, hidden 1..64,
1-2 layers, bidirectional, batch_first, with and without h0, bias=False. Then lucid.compile: the
compiled forward and a compiled training step (make_step) equal eager."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F

RNG = np.random.default_rng(13)

# (seq_len, batch, input, hidden, num_layers, bidirectional, batch_first, with_h0, bias)
CONFIGS = [
    (1, 1, 3, 1, 1, False, False, False, True),
    (5, 3, 4, 7, 1, False, True, True, True),
    (7, 1, 2, 16, 2, True, False, True, True),
    (12, 3, 5, 33, 2, False, True, False, False),
    (50, 1, 16, 64, 1, False, True, False, True),
    (50, 3, 8, 64, 1, True, False, True, False),
    (3, 3, 6, 5, 2, True, True, True, False),
    (40, 7, 8, 64, 1, True, True, True, True),  # batch rows split over the threads (rnn.cpp over_rows)
]
TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}


def _twins(mode, cfg, dtype):
    _, _, inp, hidden, layers, bidir, batch_first, _, bias = cfg
    torch.manual_seed(0)
    kw = dict(num_layers=layers, bidirectional=bidir, batch_first=batch_first, bias=bias)
    tm = getattr(torch.nn, mode)(inp, hidden, **kw).to(getattr(torch, dtype))
    lm = getattr(nn, mode)(inp, hidden, **kw).to(getattr(lucid, dtype))
    lm.load_state_dict({k: lucid.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return lm, tm


def _inputs(mode, cfg, dtype):
    seq, batch, inp, hidden, layers, bidir, batch_first, with_h0, _ = cfg
    x = RNG.standard_normal((batch, seq, inp) if batch_first else (seq, batch, inp)).astype(dtype)
    states = []
    if with_h0:
        n = layers * (2 if bidir else 1)
        states = [RNG.standard_normal((n, batch, hidden)).astype(dtype) for _ in range(2 if mode == "LSTM" else 1)]
    return x, states


def _call(m, x, states):
    if not states:
        return m(x)
    return m(x, tuple(states) if len(states) == 2 else states[0])


def _flat(out):
    y, hn = out
    return [y, *hn] if isinstance(hn, tuple) else [y, hn]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(map(str, c)))
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_matches_torch_forward_and_grads(mode, cfg, dtype):
    lm, tm = _twins(mode, cfg, dtype)
    x, states = _inputs(mode, cfg, dtype)
    lx, tx = lucid.tensor(x).requires_grad_(True), torch.from_numpy(x.copy()).requires_grad_(True)
    ls = [lucid.tensor(s).requires_grad_(True) for s in states]
    ts = [torch.from_numpy(s.copy()).requires_grad_(True) for s in states]
    lo, to = _flat(_call(lm, lx, ls)), _flat(_call(tm, tx, ts))
    weights = [RNG.standard_normal(tuple(t.shape)).astype(dtype) for t in to]
    for a, b in zip(lo, to):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL[dtype])
    sum(((a * lucid.tensor(w)).sum() for a, w in zip(lo, weights))).backward()
    sum(((b * torch.from_numpy(w)).sum() for b, w in zip(to, weights))).backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), **TOL[dtype])
    for a, b in zip(ls, ts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL[dtype])
    for (name, p), (_, q) in zip(lm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), err_msg=name, **TOL[dtype])


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_runs_on_the_fused_ops(mode):
    """The composite would record ~10 ops per step: the fused path records the recurrence op."""
    m = getattr(nn, mode)(4, 8)
    f = lucid.compile(m)
    x = lucid.tensor(RNG.standard_normal((6, 2, 4)).astype("float32"))
    f(x)
    f(x)
    ir = f.ir()
    assert ("LstmRecurrence" if mode == "LSTM" else "GruRecurrence") in ir
    assert "Sigmoid" not in ir


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_compiled_forward_equals_eager(mode):
    m = getattr(nn, mode)(5, 16, num_layers=2, bidirectional=True, batch_first=True)
    f = lucid.compile(m)
    for _ in range(3):
        x = lucid.tensor(RNG.standard_normal((3, 9, 5)).astype("float32"))
        want, got = _flat(m(x)), _flat(f(x))
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


class _Classifier(nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.rnn = getattr(nn, mode)(6, 12, batch_first=True)
        self.fc = nn.Linear(12, 4)

    def forward(self, x):
        return self.fc(self.rnn(x)[0][:, -1])


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_compiled_training_step_equals_eager(mode):
    lucid.manual_seed(0)
    m, ref = _Classifier(mode), _Classifier(mode)
    ref.load_state_dict(m.state_dict())
    step = lucid.compile.make_step(m, F.cross_entropy, strict=True)
    opt, ref_opt = lucid.optim.SGD(m.parameters(), lr=0.1), lucid.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(3):
        x = lucid.tensor(RNG.standard_normal((3, 7, 6)).astype("float32"))
        y = lucid.tensor(RNG.integers(0, 4, (3,)))
        opt.zero_grad()
        loss = step(x, y)
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = F.cross_entropy(ref(x), y)
        ref_loss.backward()
        ref_opt.step()
        np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=1e-6)
    for (name, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_bad_input_raises_clear_errors():
    xp = lucid.zeros((3, 2, 8))
    with pytest.raises(ValueError, match="lstm: argument 'w_hh'"):
        lucid._C._nn_lstm_recurrence(xp, lucid.zeros((2, 2)), lucid.zeros((2, 2)), lucid.zeros((8, 3)), False)
    with pytest.raises(ValueError, match="lstm: initial state"):
        lucid._C._nn_lstm_recurrence(xp, lucid.zeros((3, 2)), lucid.zeros((2, 2)), lucid.zeros((8, 2)), False)
    with pytest.raises(TypeError, match="gru: argument 'input'"):
        lucid._C._nn_gru_recurrence(lucid.zeros((3, 2, 6), dtype=lucid.int32), lucid.zeros((2, 2)),
                                    lucid.zeros((6, 2)), None, False)


def test_create_graph_raises():
    m = nn.LSTM(3, 4).double()
    x = lucid.tensor(RNG.standard_normal((2, 1, 3))).requires_grad_(True)
    y = m(x)[0].sum()
    with pytest.raises(NotImplementedError, match="double backward"):
        lucid.autograd.grad(y, x, create_graph=True)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_cached_transposed_weight_follows_writes(mode):
    """The forward reads w_hh transposed from the packed-weights cache after a second call; an
    in-place write of the weight must be seen at the next call (never a stale transpose)."""
    cfg = (20, 1, 8, 64, 1, False, True, False, True)
    lm, tm = _twins(mode, cfg, "float32")
    x, _ = _inputs(mode, cfg, "float32")
    lx, tx = lucid.tensor(x), torch.tensor(x)
    with lucid.no_grad(), torch.no_grad():
        for _ in range(3):
            np.testing.assert_allclose(lm(lx)[0].numpy(), tm(tx)[0].numpy(), **TOL["float32"])
        lm.weight_hh_l0.mul_(-0.5)
        tm.weight_hh_l0.mul_(-0.5)
        np.testing.assert_allclose(lm(lx)[0].numpy(), tm(tx)[0].numpy(), **TOL["float32"])
