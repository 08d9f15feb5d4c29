"""nn.TransformerDecoderLayer, nn.TransformerDecoder and nn.Transformer against torch: the same
state dict (keys match by name), forward outputs and gradients, with masks and padding, post- and
pre-norm, relu and gelu; generate_square_subsequent_mask; bad shapes."""
import numpy as np
import pytest
import torch

import lucid


def _copy(tm, lm):
    lm.load_state_dict({k: lucid.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _close(a, b, tol=1e-9):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [True, False])
def test_transformer_matches_torch(norm_first, activation, batch_first):
    torch.manual_seed(0)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
              activation=activation, batch_first=batch_first, norm_first=norm_first, dtype=torch.float64)
    tm = torch.nn.Transformer(**kw)
    lm = lucid.nn.Transformer(**{**kw, "dtype": lucid.float64})
    assert set(tm.state_dict()) == set(lm.state_dict())
    _copy(tm, lm)
    rng = np.random.default_rng(0)
    S, T, B = 5, 4, 3
    src = rng.standard_normal((B, S, 8) if batch_first else (S, B, 8))
    tgt = rng.standard_normal((B, T, 8) if batch_first else (T, B, 8))
    pad = np.zeros((B, S), dtype=bool)
    pad[0, -2:] = True
    tt = [torch.tensor(a, requires_grad=True) for a in (src, tgt)]
    lt = [lucid.tensor(a).requires_grad_() for a in (src, tgt)]
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    lmask = lucid.nn.Transformer.generate_square_subsequent_mask(T, dtype=lucid.float64)
    _close(lmask, tmask)
    to = tm(*tt, tgt_mask=tmask, src_key_padding_mask=torch.tensor(pad), memory_key_padding_mask=torch.tensor(pad),
            tgt_is_causal=True)
    lo = lm(*lt, tgt_mask=lmask, src_key_padding_mask=lucid.tensor(pad), memory_key_padding_mask=lucid.tensor(pad),
            tgt_is_causal=True)
    _close(lo, to)
    w = rng.standard_normal(to.shape)
    (to * torch.tensor(w)).sum().backward()
    (lo * lucid.tensor(w)).sum().backward()
    for a, b in zip(lt, tt):
        _close(a.grad, b.grad)
    tp, lp = dict(tm.named_parameters()), dict(lm.named_parameters())
    for k in ("decoder.layers.0.multihead_attn.in_proj_weight", "decoder.layers.1.linear2.weight", "decoder.norm.weight",
              "encoder.layers.0.self_attn.out_proj.weight"):
        _close(lp[k].grad, tp[k].grad)


def test_decoder_layer_alone_matches_torch():
    torch.manual_seed(1)
    tl = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, dtype=torch.float64)
    ll = lucid.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, dtype=lucid.float64)
    _copy(tl, ll)
    td = torch.nn.TransformerDecoder(tl, 2)
    ld = lucid.nn.TransformerDecoder(ll, 2)
    rng = np.random.default_rng(1)
    tgt, mem = rng.standard_normal((4, 2, 8)), rng.standard_normal((6, 2, 8))
    _close(ld(lucid.tensor(tgt), lucid.tensor(mem)), td(torch.tensor(tgt), torch.tensor(mem)))
    _close(ll(lucid.tensor(tgt), lucid.tensor(mem)), tl(torch.tensor(tgt), torch.tensor(mem)))


def test_transformer_init_is_xavier_uniform():
    m = lucid.nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32)
    w = m.encoder.layers[0].linear1.weight
    bound = (6.0 / (16 + 32)) ** 0.5
    assert float(w.abs().max()) <= bound and float(w.abs().max()) > 0.5 * bound


def test_transformer_bad_shapes():
    m = lucid.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    with pytest.raises(RuntimeError, match="batch number of src and tgt"):
        m(lucid.ones(3, 2, 8), lucid.ones(3, 4, 8))
    with pytest.raises(RuntimeError, match="d_model=8"):
        m(lucid.ones(3, 2, 8), lucid.ones(3, 2, 6))
