"""Python composites on CUDA inputs: every helper tensor a composite creates (hidden-state zeros,
masks, index tensors, optimizer state) must be on its inputs' device, so each case runs on the GPU
and is compared with the same computation on the CPU (lucid's CPU result, itself checked against
torch by the CPU suites). Also: device= of layer constructors, x.new_*, saving and pickling CUDA
tensors, optimizer state_dicts of CUDA parameters. Skipped without a GPU."""
import io
import pickle

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F

pytestmark = pytest.mark.skipif(not lucid.cuda.is_available(), reason="no CUDA device")

DEV = "cuda"


def _host(t):
    return t.detach().cpu().to(lucid.float64).numpy()


def _same(a, b, tol=1e-5):
    """a (CUDA) equals b (CPU) and is on the GPU."""
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y, tol)
        return
    assert a.device.type == "cuda", f"result on {a.device}"
    np.testing.assert_allclose(_host(a), _host(b), rtol=tol, atol=tol)


def _both(fn, *inputs, tol=1e-5):
    """fn on CPU inputs and on their CUDA copies; the results agree and the CUDA one is on the GPU."""
    cpu = fn(*inputs)
    gpu = fn(*[x.to(DEV) if isinstance(x, lucid.Tensor) else x for x in inputs])
    _same(gpu, cpu, tol)


def _module_both(build, *inputs, tol=1e-5, train=True):
    lucid.manual_seed(0)
    m = build()
    m.train(train)
    g = build()
    g.load_state_dict(m.state_dict())
    g = g.to(DEV)
    g.train(train)
    out_c = m(*inputs)
    out_g = g(*[x.to(DEV) for x in inputs])
    _same(out_g, out_c, tol)
    return m, g


def _rnn_out(out):
    o, h = out
    return [o] + (list(h) if isinstance(h, tuple) else [h])


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_recurrent_default_hidden_state(kind):
    x = lucid.randn(5, 3, 4)
    lucid.manual_seed(0)
    m = getattr(nn, kind)(4, 6, num_layers=2, bidirectional=True)
    g = getattr(nn, kind)(4, 6, num_layers=2, bidirectional=True)
    g.load_state_dict(m.state_dict())
    g = g.to(DEV)
    _same(_rnn_out(g(x.to(DEV))), _rnn_out(m(x)))


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_recurrent_cells(kind):
    x = lucid.randn(3, 4)
    m = getattr(nn, kind)(4, 5)
    g = getattr(nn, kind)(4, 5)
    g.load_state_dict(m.state_dict())
    g = g.to(DEV)
    a, b = g(x.to(DEV)), m(x)
    _same(list(a) if isinstance(a, tuple) else a, list(b) if isinstance(b, tuple) else b)


def test_packed_sequence_on_cuda():
    from lucid.nn.utils import rnn
    x = lucid.randn(6, 3, 4)
    lengths = [6, 2, 4]
    m = nn.LSTM(4, 5)
    g = nn.LSTM(4, 5)
    g.load_state_dict(m.state_dict())
    g = g.to(DEV)
    pc = rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
    pg = rnn.pack_padded_sequence(x.to(DEV), lengths, enforce_sorted=False)
    assert pg.is_cuda and pg.sorted_indices.device.type == "cuda" and pg.batch_sizes.device.type == "cpu"
    oc, (hc, cc) = m(pc)
    og, (hg, cg) = g(pg)
    padded_c, len_c = rnn.pad_packed_sequence(oc)
    padded_g, len_g = rnn.pad_packed_sequence(og)
    _same([padded_g, hg, cg], [padded_c, hc, cc])
    assert len_g.device.type == "cpu" and len_g.tolist() == len_c.tolist()
    moved = pc.to(DEV)
    assert moved.data.device.type == "cuda" and moved.unsorted_indices.device.type == "cuda"
    assert moved.cpu().data.device.type == "cpu"
    seqs = [lucid.randn(n, 2) for n in (3, 1, 2)]
    _same(rnn.pad_sequence([s.to(DEV) for s in seqs], batch_first=True, padding_value=-1.0),
          rnn.pad_sequence(seqs, batch_first=True, padding_value=-1.0))


@pytest.mark.parametrize("name,shape", [("InstanceNorm1d", (2, 4, 7)), ("InstanceNorm2d", (2, 4, 5, 6))])
@pytest.mark.parametrize("kwargs", [{}, {"affine": True, "track_running_stats": True}])
def test_instance_norm(name, shape, kwargs):
    m, g = _module_both(lambda: getattr(nn, name)(4, **kwargs), lucid.randn(*shape))
    for k, v in m.state_dict().items():
        _same(g.state_dict()[k], v)


def test_lazy_modules_after_cuda():
    lucid.manual_seed(0)
    m = nn.LazyLinear(3).to(DEV)
    out = m(lucid.randn(2, 5, device=DEV))
    assert out.device.type == "cuda" and m.weight.device.type == "cuda"
    c = nn.LazyConv2d(4, 3).to(DEV)
    assert c(lucid.randn(1, 2, 6, 6, device=DEV)).device.type == "cuda"


def test_constructor_device_argument():
    lin = nn.Linear(4, 3, device=DEV)
    assert lin.weight.device.type == "cuda" and lin.bias.device.type == "cuda"
    lstm = nn.LSTM(4, 3, device=DEV)
    assert all(p.device.type == "cuda" for p in lstm.parameters())
    bn = nn.BatchNorm1d(3, device=DEV)
    assert bn.running_mean.device.type == "cuda" and bn.weight.device.type == "cuda"
    assert nn.Linear(4, 3).weight.device.type == "cpu"  # the context ends with the constructor


def test_new_factories_follow_self():
    x = lucid.ones(2, 3, device=DEV)
    for t in (x.new_zeros(2), x.new_ones(2), x.new_empty(2), x.new_full((2,), 3.0), x.new_tensor([1.0, 2.0]),
              x.new_empty_strided((2, 2), (1, 2))):
        assert t.device.type == "cuda"
    assert x.new_zeros(2, device="cpu").device.type == "cpu"
    assert lucid.bernoulli(x, 0.5).device.type == "cuda"
    assert lucid.normal(x, 1.0).device.type == "cuda"
    assert lucid.get_device(x) == 0 and lucid.get_device(lucid.ones(1)) == -1


def test_losses():
    x = lucid.randn(4, 5)
    t = lucid.tensor([0, 3, 4, 1])
    _both(lambda a, b: F.multi_margin_loss(a, b), x, t)
    _both(lambda a, b: F.multi_margin_loss(a, b, p=2, weight=lucid.arange(5, dtype=a.dtype, device=a.device) + 1),
          x, t)
    mt = lucid.tensor([[3, 0, -1, 1, 2], [1, 2, 3, -1, 0], [-1, 0, 0, 0, 0], [0, 1, 2, 3, 4]])
    _both(lambda a, b: F.multilabel_margin_loss(a, b), x, mt)
    _both(lambda a: F.gaussian_nll_loss(a, a * 0.5, 2.0), x)
    _both(lambda a: F.one_hot(a, 6), t)


def test_ctc_loss_with_cpu_lengths():
    lp = lucid.randn(8, 2, 5).log_softmax(2)
    targets = lucid.tensor([[1, 2, 2], [3, 1, 0]])
    cpu = F.ctc_loss(lp, targets, [8, 6], [3, 2])
    _same(F.ctc_loss(lp.to(DEV), targets.to(DEV), lucid.tensor([8, 6]), lucid.tensor([3, 2])), cpu)
    _same(F.ctc_loss(lp.to(DEV), targets, [8, 6], [3, 2]), cpu)
    flat = lucid.tensor([1, 2, 2, 3, 1])
    _same(F.ctc_loss(lp.to(DEV), flat.to(DEV), [8, 6], [3, 2]), F.ctc_loss(lp, flat, [8, 6], [3, 2]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    w = lucid.randn(6, 3)
    idx = lucid.tensor([1, 2, 4, 5, 4, 3, 2, 0])
    off = lucid.tensor([0, 2, 2, 5])
    _both(lambda i, ww, o: F.embedding_bag(i, ww, o, mode=mode), idx, w, off)
    _both(lambda i, ww: F.embedding_bag(i, ww, mode=mode, padding_idx=2), idx.reshape(2, 4), w)


def test_attention_masks():
    q, k, v = lucid.randn(2, 3, 4, 8), lucid.randn(2, 3, 5, 8), lucid.randn(2, 3, 5, 8)
    mask = lucid.rand(4, 5) > 0.3
    mask[:, 0] = True
    _both(lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m), q, k, v, mask, tol=1e-4)
    _both(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), q, k, k, tol=1e-4)
    mha = nn.MultiheadAttention(8, 2)
    g = nn.MultiheadAttention(8, 2)
    g.load_state_dict(mha.state_dict())
    g = g.to(DEV)
    x = lucid.randn(5, 2, 8)
    kpm = lucid.tensor([[False, False, True, False, True], [False] * 5])
    causal = nn.Transformer.generate_square_subsequent_mask(5, device=DEV)
    assert causal.device.type == "cuda"
    out_c = mha(x, x, x, key_padding_mask=kpm, attn_mask=causal.cpu() == float("-inf"))
    out_g = g(x.to(DEV), x.to(DEV), x.to(DEV), key_padding_mask=kpm.to(DEV), attn_mask=causal == float("-inf"))
    _same(list(out_g), list(out_c), 1e-4)


def test_tensor_composites():
    x = lucid.arange(5.0)
    _both(lambda a: lucid.combinations(a, 2), x)
    _both(lambda a: lucid.combinations(a, 3, with_replacement=True), x)
    _both(lambda a: F.pdist(a.reshape(5, 1)), x)
    _both(lambda a: lucid.bincount(a.to(lucid.int64), minlength=7), x)
    _both(lambda a: lucid.histc(a, bins=4), x)
    _both(lambda a: lucid.nonzero_static(a, size=7), x)
    _both(lambda a: a.scatter_reduce(0, lucid.tensor([0, 1, 0, 1, 2], device=a.device), a, "amax"), x)
    _both(lambda a: lucid.linalg.matrix_power(a[:4].reshape(2, 2), 0), x)
    theta = lucid.randn(2, 2, 3)
    _both(lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False), theta)
    pooled, idx = F.max_pool2d(lucid.randn(1, 2, 4, 4), 2, return_indices=True)
    _both(lambda p, i: F.max_unpool2d(p, i, 2), pooled, idx)
    assert lucid.tril_indices(3, 3, device=DEV).device.type == "cuda"
    assert lucid.hann_window(8, device=DEV).device.type == "cuda"
    assert lucid.scalar_tensor(1.5, device=DEV).device.type == "cuda"
    y = lucid.empty(3, 3, device=DEV)
    for fill in (lambda t: t.exponential_(), lambda t: t.log_normal_(), lambda t: t.random_(0, 5),
                 lambda t: t.fill_diagonal_(2.0), lambda t: lucid.nn.init.orthogonal_(t),
                 lambda t: lucid.nn.init.eye_(t)):
        assert fill(y).device.type == "cuda"


@pytest.mark.parametrize("opt", ["Adagrad", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop", "Adadelta",
                                 "SGD"])
def test_optimizer_state_and_state_dict(opt):
    lucid.manual_seed(0)
    m = nn.Linear(3, 2)
    g = nn.Linear(3, 2)
    g.load_state_dict(m.state_dict())
    g = g.to(DEV)
    kw = {"lr": 0.1} if opt == "SGD" else {}
    oc, og = getattr(lucid.optim, opt)(m.parameters(), **kw), getattr(lucid.optim, opt)(g.parameters(), **kw)
    x = lucid.randn(4, 3)
    for _ in range(3):
        for mod, o, inp in ((m, oc, x), (g, og, x.to(DEV))):
            o.zero_grad()
            mod(inp).pow(2).sum().backward()
            o.step()
    _same([g.weight, g.bias], [m.weight, m.bias], 1e-4)
    buf = io.BytesIO()
    lucid.save(og.state_dict(), buf)
    fresh = getattr(lucid.optim, opt)(g.parameters(), **kw)
    fresh.load_state_dict(lucid.load(io.BytesIO(buf.getvalue())))
    for st in fresh.state.values():
        for key, v in st.items():
            if isinstance(v, lucid.Tensor) and key not in ("step", "mu_product"):
                assert v.device.type == "cuda", key


def test_save_load_and_pickle_cuda_tensors():
    sd = {"w": lucid.randn(3, 4, device=DEV), "h": lucid.randn(2, device=DEV).to(lucid.bfloat16)}
    buf = io.BytesIO()
    lucid.save(sd, buf)
    back = lucid.load(io.BytesIO(buf.getvalue()))
    assert back["w"].device.type == "cpu"
    _same(sd["w"], back["w"], 0)
    on_gpu = lucid.load(io.BytesIO(buf.getvalue()), map_location=DEV)
    assert all(t.device.type == "cuda" for t in on_gpu.values())
    p = pickle.loads(pickle.dumps(sd["w"]))
    assert p.device.type == "cuda"
    _same(p, sd["w"].cpu(), 0)


def test_lstsq_cuda_driver_is_gels_as_torch():
    """torch's CUDA lstsq has one driver, 'gels', the default there: residuals are filled for a
    tall A, rank and singular values are empty; another driver raises."""
    import torch
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    got = lucid.linalg.lstsq(lucid.tensor(a, device=DEV), lucid.tensor(b, device=DEV))
    want = torch.linalg.lstsq(torch.tensor(a, device="cuda"), torch.tensor(b, device="cuda"))
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(_host(g), w.cpu().double().numpy(), rtol=1e-9, atol=1e-9)
    with pytest.raises(RuntimeError, match="driver"):
        lucid.linalg.lstsq(lucid.tensor(a, device=DEV), lucid.tensor(b, device=DEV), driver="gelsd")
