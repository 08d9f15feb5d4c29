"""lucid.nn.utils.rnn against torch.nn.utils.rnn: pad/pack/unpack of variable-length sequences
(values, batch_sizes, permutations, gradients), RNN/LSTM/GRU over PackedSequence (output, h_n,
c_n and every gradient, multi-layer, bidirectional, unsorted lengths, given hx), the error cases,
and lucid.compile on packed input (compiled == eager; other lengths never reuse a trace)."""
import copy
import pickle
import warnings

import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as trnn

import lucid
from lucid.nn.utils import rnn as lrnn
from harness import as_numpy

TOL = dict(rtol=1e-5, atol=1e-6)


def _close(lo, to, what="", **tol):
    a, b = as_numpy(lo), as_numpy(to)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    np.testing.assert_allclose(a, b, err_msg=what, **(tol or TOL))


def _pair(*shape, seed=0, rg=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    lt, tt = lucid.tensor(a), torch.tensor(a)
    if rg:
        lt.requires_grad_(True)
        tt.requires_grad_(True)
    return lt, tt


def _seqs(lengths, feat=(3,), seed=0):
    pairs = [_pair(n, *feat, seed=seed + i, rg=True) for i, n in enumerate(lengths)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_values_and_grads_match_torch(batch_first, side):
    ls, ts = _seqs([3, 5, 1, 0], feat=(2, 2))
    lo = lrnn.pad_sequence(ls, batch_first=batch_first, padding_value=-1.5, padding_side=side)
    to = trnn.pad_sequence(ts, batch_first=batch_first, padding_value=-1.5, padding_side=side)
    _close(lo, to)
    w = np.random.default_rng(9).standard_normal(tuple(to.shape)).astype(np.float32)
    (lo * lucid.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for i, (a, b) in enumerate(zip(ls, ts)):
        _close(a.grad, b.grad, f"grad of sequence {i}")


def _check_packed(lp, tp, exact_order=True):
    assert lp.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert lp.batch_sizes.dtype == lucid.int64
    for f in ("sorted_indices", "unsorted_indices"):
        a, b = getattr(lp, f), getattr(tp, f)
        assert (a is None) == (b is None), f
        if a is not None and exact_order:
            assert a.tolist() == b.tolist(), f
    if exact_order:
        _close(lp.data, tp.data, "data")


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted, lengths", [(True, [5, 3, 3, 1]), (False, [2, 5, 1, 4]),
                                                     (False, [3, 3, 1, 3])])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_pack_pad_round_trip_matches_torch(batch_first, enforce_sorted, lengths, as_tensor):
    shape = (4, 6, 3) if batch_first else (6, 4, 3)
    lx, tx = _pair(*shape, rg=True)
    ll = lucid.tensor(lengths) if as_tensor else lengths
    tl = torch.tensor(lengths) if as_tensor else lengths
    lp = lrnn.pack_padded_sequence(lx, ll, batch_first=batch_first, enforce_sorted=enforce_sorted)
    tp = trnn.pack_padded_sequence(tx, tl, batch_first=batch_first, enforce_sorted=enforce_sorted)
    ties = len(set(lengths)) < len(lengths) and not enforce_sorted  # torch orders ties unspecified
    _check_packed(lp, tp, exact_order=not ties)
    lo, llen = lrnn.pad_packed_sequence(lp, batch_first=batch_first, padding_value=7.0, total_length=8)
    to, tlen = trnn.pad_packed_sequence(tp, batch_first=batch_first, padding_value=7.0, total_length=8)
    _close(lo, to, "padded")
    assert llen.tolist() == tlen.tolist() and llen.dtype == lucid.int64
    w = np.random.default_rng(3).standard_normal(tuple(to.shape)).astype(np.float32)
    (lo * lucid.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    _close(lx.grad, tx.grad, "grad of input")


def test_pack_sequence_unpack_and_unpad_match_torch():
    ls, ts = _seqs([2, 4, 1])
    lp = lrnn.pack_sequence(ls, enforce_sorted=False)
    tp = trnn.pack_sequence(ts, enforce_sorted=False)
    _check_packed(lp, tp)
    for a, b in zip(lrnn.unpack_sequence(lp), trnn.unpack_sequence(tp)):
        _close(a, b)
    lx, tx = _pair(5, 3, 2)
    for bf in (False, True):
        lx_, tx_ = (lx, tx) if not bf else (lx.transpose(0, 1), tx.transpose(0, 1))
        got = lrnn.unpad_sequence(lx_, lucid.tensor([5, 2, 3]), batch_first=bf)
        want = trnn.unpad_sequence(tx_.clone(), torch.tensor([5, 2, 3]), batch_first=bf)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            _close(a, b)
    ps = lrnn.pack_sequence([lucid.ones(3), lucid.ones(2)])
    assert isinstance(ps, lrnn.PackedSequence) and isinstance(ps, tuple) and ps._fields == trnn.PackedSequence._fields
    d = ps.to(lucid.float64)
    assert isinstance(d, lrnn.PackedSequence) and d.data.dtype == lucid.float64 and d.batch_sizes is ps.batch_sizes
    assert ps.double().data.dtype == lucid.float64 and ps.to(lucid.float32) is ps and not ps.is_cuda
    for back in (pickle.loads(pickle.dumps(ps)), copy.deepcopy(ps)):
        assert isinstance(back, lrnn.PackedSequence) and back.batch_sizes.tolist() == [2, 2, 1]
    direct = lrnn.PackedSequence(ps.data, lucid.tensor([2, 2, 1]))  # built directly, as torch allows
    _close(lrnn.pad_packed_sequence(direct)[0], trnn.pad_packed_sequence(trnn.pack_sequence(
        [torch.ones(3), torch.ones(2)]))[0])


def _modules(kind, layers, bidir, seed=0, **kw):
    torch.manual_seed(seed)
    cls = {"LSTM": "LSTM", "GRU": "GRU", "RNN_tanh": "RNN", "RNN_relu": "RNN"}[kind]
    if kind.startswith("RNN"):
        kw["nonlinearity"] = kind.split("_")[1]
    tm = getattr(torch.nn, cls)(3, 4, num_layers=layers, bidirectional=bidir, **kw)
    lm = getattr(lucid.nn, cls)(3, 4, num_layers=layers, bidirectional=bidir, **kw)
    lm.load_state_dict({k: lucid.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return lm, tm


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh", "RNN_relu"])
@pytest.mark.parametrize("layers, bidir", [(1, False), (2, False), (1, True), (2, True)])
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("with_hx", [False, True])
def test_recurrent_modules_on_packed_input_match_torch(kind, layers, bidir, enforce_sorted, with_hx):
    lm, tm = _modules(kind, layers, bidir)
    lengths = [5, 4, 2, 1] if enforce_sorted else [2, 5, 1, 4]
    lx, tx = _pair(5, 4, 3, seed=1, rg=True)
    lp = lrnn.pack_padded_sequence(lx, lengths, enforce_sorted=enforce_sorted)
    tp = trnn.pack_padded_sequence(tx, lengths, enforce_sorted=enforce_sorted)
    n = layers * (2 if bidir else 1)
    lh = th = None
    if with_hx:
        pairs = [_pair(n, 4, 4, seed=5 + i, rg=True) for i in range(2 if kind == "LSTM" else 1)]
        lh = tuple(p[0] for p in pairs) if kind == "LSTM" else pairs[0][0]
        th = tuple(p[1] for p in pairs) if kind == "LSTM" else pairs[0][1]
    lo, lstate = lm(lp, lh)
    to, tstate = tm(tp, th)
    assert isinstance(lo, lrnn.PackedSequence)
    _check_packed(lo, tp._replace(data=to.data))
    lstates = lstate if kind == "LSTM" else (lstate,)
    tstates = tstate if kind == "LSTM" else (tstate,)
    for i, (a, b) in enumerate(zip(lstates, tstates)):
        _close(a, b, f"final state {i}")
    lpad, _ = lrnn.pad_packed_sequence(lo)
    tpad, _ = trnn.pad_packed_sequence(to)
    _close(lpad, tpad, "padded output")
    rng = np.random.default_rng(11)
    loss_l = (lo.data * lucid.tensor(rng.standard_normal(tuple(to.data.shape)).astype(np.float32))).sum()
    rng = np.random.default_rng(11)
    loss_t = (to.data * torch.tensor(rng.standard_normal(tuple(to.data.shape)).astype(np.float32))).sum()
    for k, (a, b) in enumerate(zip(lstates, tstates)):
        w = np.random.default_rng(20 + k).standard_normal(tuple(b.shape)).astype(np.float32)
        loss_l = loss_l + (a * lucid.tensor(w)).sum()
        loss_t = loss_t + (b * torch.tensor(w)).sum()
    loss_l.backward()
    loss_t.backward()
    _close(lx.grad, tx.grad, "grad of input", rtol=1e-4, atol=1e-5)
    for (name, lpar), (_, tpar) in zip(lm.named_parameters(), tm.named_parameters()):
        _close(lpar.grad, tpar.grad, f"grad of {name}", rtol=1e-4, atol=1e-5)
    if with_hx:
        for a, b in zip(lh if kind == "LSTM" else (lh,), th if kind == "LSTM" else (th,)):
            _close(a.grad, b.grad, "grad of hx", rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("lengths", [[4, 6, 2], [3], [1, 1]])
def test_packed_batch_first_classifier_matches_torch(lengths):
    """The porting idiom: pad, pack (unsorted, batch_first), a batch_first LSTM (which packed input
    ignores), take h_n, and unpack the output batch-first."""
    lm, tm = _modules("LSTM", 2, True, seed=3, batch_first=True)
    lx, tx = _pair(len(lengths), max(lengths), 3, seed=2)
    lo, (lh, lc) = lm(lrnn.pack_padded_sequence(lx, lucid.tensor(lengths), batch_first=True, enforce_sorted=False))
    to, (th, tc) = tm(trnn.pack_padded_sequence(tx, torch.tensor(lengths), batch_first=True, enforce_sorted=False))
    _close(lh, th)
    _close(lc, tc)
    _close(lrnn.pad_packed_sequence(lo, batch_first=True)[0], trnn.pad_packed_sequence(to, batch_first=True)[0])


@pytest.mark.parametrize("lengths, enforce_sorted, match", [
    ([2, 5, 1], True, "sorted in decreasing order"),
    ([5, 0, 3], False, "greater than 0"),
    ([5, 3, -1], True, "greater than 0"),
    ([5, 3], True, "len\\(lengths\\)"),
    ([7, 3, 2], True, "exceeds the padded sequence length 5"),
    ([3, 7, 2], False, "exceeds the padded sequence length 5"),
])
def test_pack_padded_sequence_bad_lengths_raise_like_torch(lengths, enforce_sorted, match):
    with pytest.raises(RuntimeError, match=match):
        lrnn.pack_padded_sequence(lucid.zeros(5, 3, 2), lengths, enforce_sorted=enforce_sorted)


def test_other_bad_input_raises():
    x = lucid.zeros(5, 3, 2)
    with pytest.raises(RuntimeError, match="1-D"):
        lrnn.pack_padded_sequence(x, lucid.tensor([[5, 3, 2]]))
    with pytest.raises(TypeError, match="lengths"):
        lrnn.pack_padded_sequence(x, 3)
    with pytest.raises(RuntimeError, match="time and a batch"):
        lrnn.pack_padded_sequence(lucid.zeros(5), [5])
    with pytest.raises(RuntimeError, match="empty"):
        lrnn.pack_padded_sequence(lucid.zeros(0, 2), [])
    with pytest.raises(RuntimeError, match="empty list"):
        lrnn.pad_sequence([])
    with pytest.raises(RuntimeError, match="empty list"):
        lrnn.pack_sequence([])
    with pytest.raises(RuntimeError, match="sequences\\[1\\] has shape \\[2, 4\\]"):
        lrnn.pad_sequence([lucid.ones(2, 3), lucid.ones(2, 4)])
    with pytest.raises(RuntimeError, match="padding_side"):
        lrnn.pad_sequence([lucid.ones(2)], padding_side="middle")
    p = lrnn.pack_padded_sequence(x, [5, 3, 2])
    with pytest.raises(ValueError, match="total_length=3"):
        lrnn.pad_packed_sequence(p, total_length=3)
    with pytest.raises(TypeError, match="PackedSequence"):
        lrnn.pad_packed_sequence(x)
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 3, 4\\)"):
        lucid.nn.GRU(2, 4)(p, lucid.zeros(1, 2, 4))
    with pytest.raises(RuntimeError, match="input_size"):
        lucid.nn.GRU(3, 4)(p)


class _Classifier(lucid.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = lucid.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
        self.head = lucid.nn.Linear(8, 2)

    def forward(self, packed):
        out, (h, _) = self.rnn(packed)
        return self.head(lucid.cat([h[-2], h[-1]], -1)), out.data


class _PadThenPack(_Classifier):
    def forward(self, x, lengths):
        return super().forward(lrnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))


def _assert_same(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(as_numpy(g), as_numpy(w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("grad", [False, True])
def test_compiled_model_on_packed_input_matches_eager_and_keys_on_lengths(grad):
    lucid.manual_seed(0)
    m = _Classifier()
    fast = lucid.compile(m)
    x = lucid.randn(4, 3, 3)
    # same shapes for every tensor of the PackedSequence, different batch sizes
    for lengths in ([4, 2, 2], [4, 3, 1], [4, 2, 2], [4, 3, 1]):
        packed = lrnn.pack_padded_sequence(x, lengths)
        with lucid.set_grad_enabled(grad):
            for p in m.parameters():
                p.grad = None
            got = fast(packed)
            if grad:
                got[0].sum().backward()
                g_fast = [p.grad.clone() for p in m.parameters()]
                for p in m.parameters():
                    p.grad = None
            want = m(packed)
            if grad:
                want[0].sum().backward()
                for a, (name, p) in zip(g_fast, m.named_parameters()):
                    np.testing.assert_allclose(as_numpy(a), as_numpy(p.grad), rtol=1e-4, atol=1e-6, err_msg=name)
        _assert_same(got, want)
    info = fast.cache_info()
    assert info["entries"] == 2 and not info["eager_only"] and info["hits"] == 2, info


def test_compiled_packing_inside_forward():
    lucid.manual_seed(1)
    m = _PadThenPack()
    fast = lucid.compile(m)
    x = lucid.randn(3, 5, 3)
    with lucid.no_grad():
        for lengths in ([5, 2, 3], [1, 5, 4], [5, 2, 3]):  # a list: keyed by value, compiled
            _assert_same(fast(x, lengths), m(x, lengths))
        assert fast.cache_info()["entries"] == 2 and not fast.cache_info()["eager_only"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for lengths in ([5, 2, 3], [1, 5, 4]):  # a tensor: a host read, so it runs eagerly, with the reason
                _assert_same(fast(x, lucid.tensor(lengths)), m(x, lucid.tensor(lengths)))
    reasons = list(fast.cache_info()["eager_only"].values())
    assert reasons and all("host" in r for r in reasons), reasons


def test_fused_step_on_packed_input_matches_eager_training():
    def run(compiled):
        lucid.manual_seed(2)
        m = _Classifier()
        opt = lucid.optim.Adam(m.parameters(), lr=0.01)
        loss_fn = lambda out, y: lucid.nn.functional.cross_entropy(out[0], y)  # noqa: E731
        step = lucid.compile.fused_step(m, loss_fn, opt) if compiled else None
        x, y = lucid.randn(4, 3, 3), lucid.tensor([0, 1, 1])
        losses = []
        for lengths in ([4, 2, 2], [4, 3, 1], [4, 2, 2], [4, 3, 1], [4, 2, 2]):
            packed = lrnn.pack_padded_sequence(x, lengths)
            if compiled:
                losses.append(step(packed, y).item())
            else:
                opt.zero_grad()
                loss = loss_fn(m(packed), y)
                loss.backward()
                opt.step()
                losses.append(loss.item())
        return losses, [as_numpy(p).copy() for p in m.parameters()], step

    (le, pe, _), (lc, pc, step) = run(False), run(True)
    np.testing.assert_allclose(lc, le, rtol=1e-5)
    for a, b in zip(pc, pe):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert step.cache_info()["entries"] >= 1 and not step.cache_info()["eager_only"], step.cache_info()
