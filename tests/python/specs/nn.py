"""Spec rows for the nn ops (Softmax, LogSoftmax, Dropout, BatchNorm, BatchNormUpdateStats,
LayerNorm, GroupNorm, RmsNorm, NormBackward, Embedding, EmbeddingBackward, Interpolate,
InterpolateBackward, ScaledDotProductAttention, SdpaBackward, LstmRecurrence, LstmRecurrenceBackward,
GruRecurrence, GruRecurrenceBackward). Backward-only ops are covered by
the rows whose gradients exercise them."""
import numpy as np

from op_specs import OpSpec, Sample, arr, positive

FLOATS = ("float32", "float64", "float16", "bfloat16")


def _F(t):
    return t.nn.functional


def _softmax_samples(rng, dt):
    return [Sample([arr(rng, (3, 4, 5), dt)], {"dim": d}) for d in (-1, 1, 0)] + [
        Sample([arr(rng, (6,), dt)], {"dim": 0})]


def _dropout_samples(rng, dt):
    x = arr(rng, (4, 5), dt)
    return [Sample([x, rng.random((4, 5)) > 0.3], {"p": 0.3}), Sample([x, rng.random((4, 5)) > 0.5], {"p": 0.5}),
            Sample([x, np.zeros((4, 5), bool)], {"p": 1.0})]


def _bn_samples(rng, dt, training):
    out = []
    for shape in ((4, 3, 2, 3), (5, 3), (3, 2, 4)):
        c = shape[1]
        out.append(Sample([arr(rng, shape, dt), arr(rng, (c,), dt), positive(rng, (c,), dt), arr(rng, (c,), dt),
                           arr(rng, (c,), dt)], {"training": training, "momentum": 0.2, "eps": 1e-5}, grad_args=[0, 3, 4]))
    out.append(Sample([arr(rng, (4, 3, 2), dt), arr(rng, (3,), dt), positive(rng, (3,), dt), None, None],
                      {"training": training}, grad_args=[0]))
    return out


def _bn_stats_lucid(l, x, rm, rv, w, b, **k):
    y = l.batch_norm(x, rm, rv, w, b, **k)
    return y, rm, rv


def _bn_stats_torch(t, x, rm, rv, w, b, **k):
    y = t.nn.functional.batch_norm(x, rm, rv, w, b, **k)
    return y, rm, rv


def _ln_samples(rng, dt):
    return [Sample([arr(rng, (3, 4, 5), dt), (5,), arr(rng, (5,), dt), arr(rng, (5,), dt)]),
            Sample([arr(rng, (2, 3, 4), dt), (3, 4), arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)], {"eps": 1e-3}),
            Sample([arr(rng, (4, 6), dt), (6,), None, None])]


def _gn_samples(rng, dt):
    return [Sample([arr(rng, (2, 6, 3, 2), dt), 3, arr(rng, (6,), dt), arr(rng, (6,), dt)]),
            Sample([arr(rng, (3, 4, 5), dt), 2, arr(rng, (4,), dt), arr(rng, (4,), dt)], {"eps": 1e-3}),
            Sample([arr(rng, (2, 4), dt), 4, None, None]), Sample([arr(rng, (2, 4, 3), dt), 1, None, None])]


def _rms_samples(rng, dt):
    return [Sample([arr(rng, (3, 4, 5), dt), (5,), arr(rng, (5,), dt)]),
            Sample([arr(rng, (2, 3, 4), dt), (3, 4), arr(rng, (3, 4), dt)], {"eps": 1e-5}),
            Sample([arr(rng, (4, 6), dt), (6,), None], {"eps": 1e-6})]


def _emb_samples(rng, dt):
    return [Sample([rng.integers(0, 7, (3, 4)), arr(rng, (7, 5), dt)]),
            Sample([rng.integers(0, 7, (10,)), arr(rng, (7, 3), dt)], {"padding_idx": 2}),
            Sample([np.array([[1, 6], [6, 0]]), arr(rng, (7, 3), dt)], {"padding_idx": -1}),
            Sample([np.array(3), arr(rng, (7, 3), dt)])]


def _sdpa_samples(rng, dt):
    q, k, v = arr(rng, (2, 3, 4), dt), arr(rng, (2, 5, 4), dt), arr(rng, (2, 5, 3), dt)
    bmask = rng.random((3, 5)) > 0.4
    bmask[:, 0] = True
    bmask_full = bmask.copy()
    bmask_full[1] = False
    return [Sample([q, k, v]),
            Sample([q, k, v], {"attn_mask": arr(rng, (2, 3, 5), dt)}),
            Sample([q, k, v], {"is_causal": True, "scale": 0.3}),
            Sample([arr(rng, (2, 2, 3, 4), dt), arr(rng, (2, 1, 5, 4), dt), arr(rng, (1, 2, 5, 3), dt)],
                   {"attn_mask": bmask}),
            Sample([q, k, v], {"attn_mask": bmask_full}),
            Sample([arr(rng, (3, 4), dt), arr(rng, (6, 4), dt), arr(rng, (6, 2), dt)])]


def _sdpa_lucid(l, q, k, v, **kw):
    if isinstance(kw.get("attn_mask"), np.ndarray):
        m = kw["attn_mask"]
        kw["attn_mask"] = l.tensor(m) if m.dtype == bool else l.tensor(m).to(q.dtype)
    return l.scaled_dot_product_attention(q, k, v, **kw)


def _sdpa_torch(t, q, k, v, **kw):
    if isinstance(kw.get("attn_mask"), np.ndarray):
        m = kw["attn_mask"]
        kw["attn_mask"] = t.from_numpy(m) if m.dtype == bool else t.from_numpy(m).to(q.dtype)
    return t.nn.functional.scaled_dot_product_attention(q, k, v, **kw)


def _sdpa_mask_samples(rng, dt):
    # float mask as a positional arg so the harness differentiates it
    return [Sample([arr(rng, (2, 3, 4), dt), arr(rng, (2, 5, 4), dt), arr(rng, (2, 5, 3), dt), arr(rng, (3, 5), dt)]),
            Sample([arr(rng, (2, 3, 4), dt), arr(rng, (2, 5, 4), dt), arr(rng, (2, 5, 3), dt), arr(rng, (2, 1, 5), dt)])]


def _interp_samples(rng, dt):
    x = arr(rng, (2, 3, 4, 5), dt)
    return [Sample([x], {"size": (6, 7), "mode": "nearest"}),
            Sample([x], {"size": 8, "mode": "nearest"}),
            Sample([x], {"scale_factor": 2, "mode": "nearest"}),
            Sample([x], {"size": (3, 2), "mode": "nearest"}),
            Sample([x], {"scale_factor": 1.7, "mode": "nearest-exact"}),
            Sample([x], {"size": (7, 9), "mode": "bilinear", "align_corners": False}),
            Sample([x], {"size": (7, 9), "mode": "bilinear", "align_corners": True}),
            Sample([x], {"scale_factor": (1.5, 0.6), "mode": "bilinear"}),
            Sample([x], {"size": (1, 1), "mode": "bilinear", "align_corners": True}),
            Sample([x], {"size": (3, 3), "mode": "bilinear"}),
            Sample([x], {"size": (7, 9), "mode": "bicubic"}),
            Sample([x], {"size": (7, 9), "mode": "bicubic", "align_corners": True}),
            Sample([x], {"scale_factor": 0.6, "mode": "bicubic"}),
            Sample([x], {"size": (2, 3), "mode": "bicubic"})]


def _lstm_torch(t, xp, h0, c0, w_hh, reverse):
    """The LSTM recurrence written per step with torch ops: (y, cells)."""
    steps = range(xp.shape[0] - 1, -1, -1) if reverse else range(xp.shape[0])
    h, c, ys, cs = h0, c0, [None] * xp.shape[0], [None] * xp.shape[0]
    for s in steps:
        i, f, g, o = (xp[s] + h @ w_hh.T).chunk(4, -1)
        c = t.sigmoid(f) * c + t.sigmoid(i) * t.tanh(g)
        h = t.sigmoid(o) * t.tanh(c)
        ys[s], cs[s] = h, c
    return t.stack(ys), t.stack(cs)


def _gru_torch(t, xp, h0, w_hh, b_hh, reverse):
    steps = range(xp.shape[0] - 1, -1, -1) if reverse else range(xp.shape[0])
    h, ys = h0, [None] * xp.shape[0]
    for s in steps:
        hp = h @ w_hh.T + (0 if b_hh is None else b_hh)
        xr, xz, xn = xp[s].chunk(3, -1)
        hr, hz, hn = hp.chunk(3, -1)
        r, z = t.sigmoid(xr + hr), t.sigmoid(xz + hz)
        n = t.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
        ys[s] = h
    return t.stack(ys)


def _rnn_samples(rng, dt, gates):
    out = []
    for steps, batch, hidden, reverse in ((1, 1, 1, False), (4, 3, 5, True), (3, 2, 9, False), (2, 1, 33, True)):
        G = gates * hidden
        args = [arr(rng, (steps, batch, G), dt), arr(rng, (batch, hidden), dt, -1, 1)]
        if gates == 4:
            args.append(arr(rng, (batch, hidden), dt, -1, 1))
        args.append(arr(rng, (G, hidden), dt, -0.5, 0.5))
        if gates == 3:
            args.append(arr(rng, (G,), dt, -0.5, 0.5) if hidden != 9 else None)
        out.append(Sample(args, {"reverse": reverse}))
    return out


SPECS = [
    OpSpec("softmax", ["Softmax"], lambda l, x, **k: l.softmax(x, **k), lambda t, x, **k: _F(t).softmax(x, **k),
           _softmax_samples, dtypes=FLOATS),
    OpSpec("log_softmax", ["LogSoftmax"], lambda l, x, **k: l.log_softmax(x, **k),
           lambda t, x, **k: _F(t).log_softmax(x, **k), _softmax_samples, dtypes=FLOATS),
    OpSpec("softmax_method", ["Softmax", "LogSoftmax"], lambda l, x: (x.softmax(1), x.log_softmax(-1)),
           lambda t, x: (x.softmax(1), x.log_softmax(-1)), lambda rng, dt: [Sample([arr(rng, (2, 3, 4), dt)])]),
    OpSpec("softmin", ["Softmax"], lambda l, x, **k: l.softmin(x, **k), lambda t, x, **k: _F(t).softmin(x, **k),
           _softmax_samples, dtypes=FLOATS),
    OpSpec("instance_norm", ["GroupNorm", "NormBackward"], lambda l, *a, **k: l.instance_norm(*a, **k),
           lambda t, *a, **k: _F(t).instance_norm(*a, **k),
           lambda rng, dt: [Sample([arr(rng, (2, 3, 4, 2), dt), None, None, arr(rng, (3,), dt), arr(rng, (3,), dt)],
                                   grad_args=[0, 3, 4]), Sample([arr(rng, (3, 2, 5), dt)])],
           dtypes=FLOATS, low_precision_tol=3e-2),
    OpSpec("dropout_mask", ["Dropout"], lambda l, x, m, p: l._C._nn_dropout(x, m, p),
           lambda t, x, m, p: x * m.to(x.dtype) * (0.0 if p == 1 else 1.0 / (1.0 - p)),
           _dropout_samples, dtypes=FLOATS),
    OpSpec("batch_norm_train", ["BatchNorm", "NormBackward"], lambda l, *a, **k: l.batch_norm(*a, **k),
           lambda t, *a, **k: _F(t).batch_norm(*a, **k), lambda rng, dt: _bn_samples(rng, dt, True), dtypes=FLOATS,
           low_precision_tol=3e-2),
    OpSpec("batch_norm_eval", ["BatchNorm", "NormBackward"], lambda l, *a, **k: l.batch_norm(*a, **k),
           lambda t, *a, **k: _F(t).batch_norm(*a, **k), lambda rng, dt: _bn_samples(rng, dt, False), dtypes=FLOATS,
           low_precision_tol=3e-2),
    OpSpec("batch_norm_running_stats", ["BatchNorm", "BatchNormUpdateStats"], _bn_stats_lucid, _bn_stats_torch,
           lambda rng, dt: _bn_samples(rng, dt, True), dtypes=("float32", "float64"), fd=False),
    OpSpec("layer_norm", ["LayerNorm", "NormBackward"], lambda l, *a, **k: l.layer_norm(*a, **k),
           lambda t, *a, **k: _F(t).layer_norm(*a, **k), _ln_samples, dtypes=FLOATS, low_precision_tol=3e-2),
    OpSpec("group_norm", ["GroupNorm", "NormBackward"], lambda l, *a, **k: l.group_norm(*a, **k),
           lambda t, *a, **k: _F(t).group_norm(*a, **k), _gn_samples, dtypes=FLOATS, low_precision_tol=3e-2),
    OpSpec("rms_norm", ["RmsNorm", "NormBackward"], lambda l, *a, **k: l.rms_norm(*a, **k),
           lambda t, *a, **k: _F(t).rms_norm(*a, **k), _rms_samples, dtypes=FLOATS, low_precision_tol=3e-2),
    OpSpec("embedding", ["Embedding", "EmbeddingBackward"], lambda l, i, w, **k: l.embedding(i, w, **k),
           lambda t, i, w, **k: _F(t).embedding(i, w, **k), _emb_samples, dtypes=FLOATS),
    OpSpec("embedding_int32_idx", ["Embedding"], lambda l, i, w: l.embedding(i.to(l.int32), w),
           lambda t, i, w: _F(t).embedding(i.int(), w),
           lambda rng, dt: [Sample([rng.integers(0, 5, (2, 3)), arr(rng, (5, 4), dt)])]),
    OpSpec("interpolate_3d", ["Interpolate", "InterpolateBackward"], lambda l, x, **k: l.interpolate(x, **k),
           lambda t, x, **k: _F(t).interpolate(x, **k),
           lambda rng, dt: [Sample([arr(rng, (2, 3, 5), dt)], {"size": 9, "mode": "linear"}),
                            Sample([arr(rng, (2, 3, 5), dt)], {"scale_factor": 1.5, "mode": "linear", "align_corners": True}),
                            Sample([arr(rng, (2, 3, 5), dt)], {"size": 7, "mode": "nearest"})], dtypes=FLOATS),
    OpSpec("sdpa", ["ScaledDotProductAttention", "SdpaBackward"], _sdpa_lucid, _sdpa_torch, _sdpa_samples,
           dtypes=FLOATS, atol=1e-5, low_precision_tol=3e-2),
    OpSpec("sdpa_gqa", ["ScaledDotProductAttention", "SdpaBackward"],
           lambda l, q, k, v, **kw: l.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw),
           lambda t, q, k, v, **kw: _F(t).scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw),
           lambda rng, dt: [Sample([arr(rng, (2, 4, 3, 5), dt), arr(rng, (2, 2, 6, 5), dt), arr(rng, (2, 2, 6, 3), dt)]),
                            Sample([arr(rng, (6, 3, 5), dt), arr(rng, (1, 4, 5), dt), arr(rng, (1, 4, 2), dt)],
                                   {"is_causal": True})],
           dtypes=("float32", "float64")),
    OpSpec("sdpa_float_mask_grad", ["ScaledDotProductAttention", "SdpaBackward"],
           lambda l, q, k, v, m: l.scaled_dot_product_attention(q, k, v, attn_mask=m),
           lambda t, q, k, v, m: _F(t).scaled_dot_product_attention(q, k, v, attn_mask=m), _sdpa_mask_samples),
    OpSpec("interpolate", ["Interpolate", "InterpolateBackward"], lambda l, x, **k: l.interpolate(x, **k),
           lambda t, x, **k: _F(t).interpolate(x, **k), _interp_samples, dtypes=FLOATS),
    OpSpec("lstm_recurrence", ["LstmRecurrence", "LstmRecurrenceBackward"],
           lambda l, *a, **k: l._C._nn_lstm_recurrence(*a, **k), _lstm_torch, lambda rng, dt: _rnn_samples(rng, dt, 4),
           cuda_dtypes=("float32", "float64")),  # the records take float32 / float64 only
    OpSpec("gru_recurrence", ["GruRecurrence", "GruRecurrenceBackward"],
           lambda l, *a, **k: l._C._nn_gru_recurrence(*a, **k), _gru_torch, lambda rng, dt: _rnn_samples(rng, dt, 3),
           cuda_dtypes=("float32", "float64")),
]


def _norm_composite_samples(rng, dt):
    return [Sample([arr(rng, (3, 4), dt)]), Sample([arr(rng, (2, 3, 4), dt)], {"p": 1.0, "dim": -1}),
            Sample([arr(rng, (2, 3, 4), dt)], {"p": 3.0, "dim": 0})]


SPECS += [
    OpSpec("normalize", [], lambda l, x, **k: l.normalize(x, **k), lambda t, x, **k: _F(t).normalize(x, **k),
           _norm_composite_samples),
    OpSpec("cosine_similarity", [], lambda l, a, b, **k: l.cosine_similarity(a, b, **k),
           lambda t, a, b, **k: _F(t).cosine_similarity(a, b, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)]),
                            Sample([arr(rng, (2, 3, 4), dt), arr(rng, (3, 4), dt)], {"dim": -1})]),
    OpSpec("pairwise_distance", [], lambda l, a, b, **k: l.pairwise_distance(a, b, **k),
           lambda t, a, b, **k: _F(t).pairwise_distance(a, b, **k),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)]),
                            Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)], {"p": 1.0, "keepdim": True})]),
    OpSpec("upsample", ["Interpolate"], lambda l, x, **k: l.upsample(x, **k), lambda t, x, **k: _F(t).upsample(x, **k),
           lambda rng, dt: [Sample([arr(rng, (1, 2, 3, 3), dt)], {"scale_factor": 2, "mode": "bilinear"})]),
]
