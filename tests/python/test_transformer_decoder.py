"""TransformerDecoderLayer, TransformerDecoder and Transformer against torch's: the same
constructor arguments, torch's state_dict loaded by name (the key lists equal), and outputs and
gradients of inputs and parameters compared in float64, over batch_first, norm_first, activation
and the masks (causal tgt_mask, boolean and float masks, key padding masks for tgt and memory)."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as lnn
from harness import assert_close

RNG = np.random.default_rng(5)
D, H, FF = 8, 2, 16
T, S, N = 5, 6, 3


def load_twin(lm, tm):
    assert list(lm.state_dict().keys()) == list(tm.state_dict().keys())
    res = lm.load_state_dict({k: lucid.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []


def build(lib, kind, **kw):
    nn = lib.nn
    if kind == "layer":
        return nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, **kw)
    if kind == "decoder":
        return nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, **kw), 2, norm=nn.LayerNorm(D))
    return nn.Transformer(D, H, 2, 2, FF, dropout=0.0, **kw)


def _masks(lib, spec, batch_first):
    """Keyword masks for a forward call, built from one numpy draw for both libraries."""
    out = {}
    if "causal" in spec:
        out["tgt_mask"] = lib.nn.Transformer.generate_square_subsequent_mask(T, dtype=lib.float64)
    if "bool_tgt" in spec:
        out["tgt_mask"] = _conv(lib, np.triu(np.ones((T, T), dtype=bool), 1))
    if "memory_mask" in spec:
        out["memory_mask"] = _conv(lib, spec["memory_mask"])
    if "tgt_kpm" in spec:
        out["tgt_key_padding_mask"] = _conv(lib, spec["tgt_kpm"])
    if "mem_kpm" in spec:
        out["memory_key_padding_mask"] = _conv(lib, spec["mem_kpm"])
    return out


def _conv(lib, a):
    return lucid.tensor(a) if lib is lucid else torch.from_numpy(a.copy())


def _kpm(n, length):
    m = np.zeros((n, length), dtype=bool)
    m[0, -2:] = True
    m[-1, -1] = True
    return m


MASK_SPECS = {
    "none": {},
    "causal": {"causal": True},
    "bool_causal": {"bool_tgt": True},
    "causal+kpm": {"causal": True, "tgt_kpm": _kpm(N, T), "mem_kpm": _kpm(N, S)},
    "memory_mask": {"memory_mask": RNG.standard_normal((T, S)) * 0.5, "mem_kpm": _kpm(N, S)},
}


def run(kind, ctor, mask_name, unbatched=False, rtol=1e-7, atol=1e-9):
    torch.manual_seed(0)
    tm = build(torch, kind, **ctor).double()
    lm = build(lucid, kind, **ctor).double()
    load_twin(lm, tm)
    lm.train()
    tm.train()
    bf = ctor.get("batch_first", False)
    tshape = (T, D) if unbatched else ((N, T, D) if bf else (T, N, D))
    sshape = (S, D) if unbatched else ((N, S, D) if bf else (S, N, D))
    a, b = RNG.standard_normal(tshape), RNG.standard_normal(sshape)
    spec = MASK_SPECS[mask_name]
    if unbatched:
        spec = {k: (v[0] if k in ("tgt_kpm", "mem_kpm") else v) for k, v in spec.items()}
    lt, tt = lucid.tensor(a).requires_grad_(True), torch.from_numpy(a.copy()).requires_grad_(True)
    ls, ts = lucid.tensor(b).requires_grad_(True), torch.from_numpy(b.copy()).requires_grad_(True)
    lk, tk = _masks(lucid, spec, bf), _masks(torch, spec, bf)
    if kind == "transformer":
        lo, to = lm(ls, lt, **lk), tm(ts, tt, **tk)
    else:
        lo, to = lm(lt, ls, **lk), tm(tt, ts, **tk)
    assert_close(lo, to, atol, rtol, "output")
    g = RNG.standard_normal(tuple(to.shape))
    (lo * lucid.tensor(g)).sum().backward()
    (to * torch.from_numpy(g)).sum().backward()
    assert_close(lt.grad, tt.grad, atol * 10, rtol * 10, "tgt grad")
    assert_close(ls.grad, ts.grad, atol * 10, rtol * 10, "memory grad")
    lp = dict(lm.named_parameters())
    for n, p in tm.named_parameters():
        assert_close(lp[n].grad, p.grad, atol * 10, rtol * 10, f"grad of {n}")
    return lm, tm


CTORS = [{}, {"batch_first": True}, {"norm_first": True}, {"batch_first": True, "norm_first": True},
         {"activation": "gelu"}, {"bias": False, "layer_norm_eps": 1e-3}]


@pytest.mark.parametrize("ctor", CTORS, ids=[str(c) for c in CTORS])
@pytest.mark.parametrize("mask", list(MASK_SPECS))
def test_decoder_layer(ctor, mask):
    run("layer", ctor, mask)


@pytest.mark.parametrize("ctor", [{}, {"batch_first": True, "norm_first": True}], ids=str)
@pytest.mark.parametrize("mask", ["causal", "causal+kpm", "memory_mask"])
def test_decoder_stack(ctor, mask):
    lm, _ = run("decoder", ctor, mask)
    assert len(lm.layers) == 2 and lm.layers[0] is not lm.layers[1]


@pytest.mark.parametrize("ctor", [{}, {"batch_first": True}, {"norm_first": True, "activation": "gelu"}], ids=str)
@pytest.mark.parametrize("mask", ["none", "causal+kpm"])
def test_transformer(ctor, mask):
    run("transformer", ctor, mask)


def test_unbatched():
    run("layer", {}, "causal+kpm", unbatched=True)
    run("layer", {"batch_first": True}, "none", unbatched=True)


def test_transformer_state_dict_keys_and_repr():
    tm = torch.nn.Transformer(D, H, 1, 2, FF)
    lm = lnn.Transformer(D, H, 1, 2, FF)
    assert list(lm.state_dict().keys()) == list(tm.state_dict().keys())
    assert [tuple(v.shape) for v in lm.state_dict().values()] == [tuple(v.shape) for v in tm.state_dict().values()]
    assert repr(lnn.TransformerDecoderLayer(D, H, FF)) == repr(torch.nn.TransformerDecoderLayer(D, H, FF))
    # xavier-initialised matrices, as torch's _reset_parameters
    w = lm.decoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6.0 / (D + FF))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound


def test_generate_square_subsequent_mask():
    for sz in (1, 4):
        assert_close(lnn.Transformer.generate_square_subsequent_mask(sz),
                     torch.nn.Transformer.generate_square_subsequent_mask(sz), 0, 0)
    m = lnn.Transformer.generate_square_subsequent_mask(3, dtype=lucid.float64)
    assert m.dtype == lucid.float64


def test_custom_encoder_decoder():
    enc = lnn.TransformerEncoder(lnn.TransformerEncoderLayer(D, H, FF, dropout=0.0), 1)
    dec = lnn.TransformerDecoder(lnn.TransformerDecoderLayer(D, H, FF, dropout=0.0), 1)
    m = lnn.Transformer(D, H, custom_encoder=enc, custom_decoder=dec)
    assert m.encoder is enc and m.decoder is dec
    assert list(m.state_dict().keys())[0].startswith("encoder.layers.0.")


def test_transformer_shape_errors():
    m = lnn.Transformer(D, H, 1, 1, FF)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(lucid.randn(S, 2, D), lucid.randn(T, 3, D))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        m(lucid.randn(S, 2, D + 1), lucid.randn(T, 2, D + 1))


def test_decoder_dropout_trains_and_eval_is_deterministic():
    m = lnn.TransformerDecoderLayer(D, H, FF, dropout=0.5)
    x, mem = lucid.randn(T, N, D), lucid.randn(S, N, D)
    m.train()
    assert not np.allclose(m(x, mem).detach().numpy(), m(x, mem).detach().numpy())
    m.eval()
    np.testing.assert_array_equal(m(x, mem).detach().numpy(), m(x, mem).detach().numpy())


@pytest.mark.parametrize("ctor", [{}, {"batch_first": True, "norm_first": True}], ids=str)
def test_compiled_transformer_equals_eager(ctor):
    lucid.manual_seed(0)
    eager = lnn.Transformer(D, H, 1, 2, FF, dropout=0.0, **ctor)
    model = lnn.Transformer(D, H, 1, 2, FF, dropout=0.0, **ctor)
    model.load_state_dict({k: v.detach().clone() for k, v in eager.state_dict().items()})
    compiled = lucid.compile(model, strict=True)
    bf = ctor.get("batch_first", False)
    mask = lnn.Transformer.generate_square_subsequent_mask(T)
    kpm = lucid.tensor(_kpm(N, T))
    for step in range(3):
        src = lucid.randn(*((N, S, D) if bf else (S, N, D)))
        tgt = lucid.randn(*((N, T, D) if bf else (T, N, D)))
        out_e = eager(src, tgt, tgt_mask=mask, tgt_key_padding_mask=kpm)
        out_c = compiled(src, tgt, tgt_mask=mask, tgt_key_padding_mask=kpm)
        assert_close(out_c, out_e, 1e-5, 1e-5, f"step {step}")
        out_e.square().sum().backward()
        out_c.square().sum().backward()
        for (n, p), q in zip(model.named_parameters(), eager.parameters()):
            assert_close(p.grad, q.grad, 1e-4, 1e-4, f"grad of {n} step {step}")
    assert compiled.cache_info()["eager_only"] == {}
