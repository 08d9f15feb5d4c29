"""Spec rows for the channel-blocked layout ops (ops/blocked_layout.h) that the CPU compiler's
layout pass emits: a blocked tensor [N, C/b, H, W, b] is NCHW [N, C, H, W] with channel c at
[:, c // b, :, :, c % b]. Each torch reference is the NCHW torch op seen through that layout
(unblock, op, block). The samples carry NaN, infinities, signed zeros and ties where the op
selects (max pooling), windows clipped by padding, ceil_mode and dilation. CPU only: no CUDA
graph has these ops (cuda_dtypes=())."""
import numpy as np

from op_specs import OpSpec, Sample, arr, positive

DTYPES = ("float32", "float64", "bfloat16")


def _F(t):
    return t.nn.functional


def _block(t, x, b=16):
    n, c, h, w = x.shape
    return x.reshape(n, c // b, b, h, w).permute(0, 1, 3, 4, 2).contiguous()


def _unblock(t, x):
    n, cb, h, w, b = x.shape
    return x.permute(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def _through(fn):
    """torch reference of a blocked op: the NCHW op between unblock and block."""
    def ref(t, x, *args, **k):
        return _block(t, fn(t, _unblock(t, x), *args, **k), x.shape[4])
    return ref


def _specials(rng, shape, dt):
    """Random values with NaN, +-inf, signed zeros and repeated values (ties) sprinkled in."""
    a = arr(rng, shape, dt)
    flat = a.reshape(-1)
    idx = rng.permutation(flat.size)
    k = max(1, flat.size // 40)
    flat[idx[:k]] = np.nan
    flat[idx[k:2 * k]] = np.inf
    flat[idx[2 * k:3 * k]] = -np.inf
    flat[idx[3 * k:4 * k]] = 0.0
    flat[idx[4 * k:5 * k]] = -0.0
    flat[idx[5 * k:8 * k]] = 1.25  # ties
    return a


def _block_samples(rng, dt):
    return [Sample([arr(rng, (2, 32, 5, 3), dt), 16]), Sample([arr(rng, (1, 16, 1, 1), dt), 16]),
            Sample([arr(rng, (3, 8, 4, 2), dt), 8]), Sample([arr(rng, (0, 16, 2, 2), dt), 16])]


def _unblock_samples(rng, dt):
    return [Sample([arr(rng, (2, 2, 5, 3, 16), dt)]), Sample([arr(rng, (1, 3, 1, 1, 16), dt)]),
            Sample([arr(rng, (3, 1, 4, 2, 8), dt)])]


def _maxpool_samples(rng, dt):
    geo = [((3, 3), (2, 2), (1, 1), (1, 1), False), ((2, 2), (2, 2), (0, 0), (1, 1), False),
           ((3, 3), (2, 2), (1, 1), (1, 1), True), ((3, 2), (1, 2), (1, 0), (2, 1), False),
           ((2, 3), (3, 2), (1, 1), (1, 2), True)]
    out = [Sample([_specials(rng, (2, 2, 9, 8, 16), dt), *g]) for g in geo]
    out.append(Sample([arr(rng, (1, 1, 7, 7, 16), dt), (7, 7), (1, 1), (0, 0), (1, 1), False]))
    return out


def _avgpool_samples(rng, dt):
    geo = [((2, 2), (2, 2), (0, 0), False, True, 0), ((3, 3), (2, 2), (1, 1), False, True, 0),
           ((3, 3), (2, 2), (1, 1), True, False, 0), ((3, 2), (1, 2), (1, 1), False, False, 5),
           ((11, 9), (1, 1), (0, 0), False, True, 0)]
    return [Sample([arr(rng, (2, 2, 11, 9, 16), dt), *g]) for g in geo] + \
        [Sample([_specials(rng, (1, 1, 6, 6, 16), dt), (2, 2), (2, 2), (0, 0), False, True, 0])]


def _adaptive_samples(rng, dt):
    return [Sample([arr(rng, (2, 2, 7, 7, 16), dt), (1, 1)]), Sample([arr(rng, (1, 1, 10, 7, 16), dt), (3, 4)]),
            Sample([arr(rng, (2, 1, 5, 6, 16), dt), (5, 6)]), Sample([_specials(rng, (1, 2, 4, 4, 16), dt), (1, 1)])]


def _bn_samples(rng, dt):
    c = 32
    stats = lambda: [arr(rng, (c,), "float32"), positive(rng, (c,), "float32")]
    return [Sample([arr(rng, (2, 2, 5, 4, 16), dt), *stats(), arr(rng, (c,), "float32"), arr(rng, (c,), "float32"), 1e-5]),
            Sample([arr(rng, (1, 2, 3, 3, 16), dt), *stats(), None, None, 1e-3]),
            Sample([_specials(rng, (1, 2, 2, 2, 16), dt), *stats(), arr(rng, (c,), "float32"), None, 1e-5]),
            Sample([_specials(rng, (2, 2, 3, 2, 16), dt), *stats(), arr(rng, (c,), "float32"), arr(rng, (c,), "float32"),
                    1e-5, True])]  # relu: DenseNet's BN -> ReLU as one op


def _avg_ref(t, x, k, s, p, ceil_mode, cip, div):
    return _F(t).avg_pool2d(x, k, s, p, ceil_mode, cip, div or None)


def _bn_ref(t, x, rm, rv, w, b, eps, relu=False):
    cast = lambda v: None if v is None else v.to(x.dtype)
    y = _F(t).batch_norm(x, cast(rm), cast(rv), cast(w), cast(b), False, 0.1, eps)
    return _F(t).relu(y) if relu else y


SPECS = [
    OpSpec("block_channels", ["BlockChannels"], lambda l, x, b: l._C._block_channels(x, b), _block,
           _block_samples, dtypes=DTYPES, cuda_dtypes=()),
    OpSpec("unblock_channels", ["UnblockChannels"], lambda l, x: l._C._unblock_channels(x), _unblock,
           _unblock_samples, dtypes=DTYPES, cuda_dtypes=()),
    OpSpec("max_pool2d_blocked", ["MaxPool2dBlocked"], lambda l, x, *a: l._C._max_pool2d_blocked(x, *a),
           _through(lambda t, x, k, s, p, d, c: _F(t).max_pool2d(x, k, s, p, d, ceil_mode=c)), _maxpool_samples,
           dtypes=DTYPES, grad=False, cuda_dtypes=()),
    OpSpec("avg_pool2d_blocked", ["AvgPool2dBlocked"], lambda l, x, *a: l._C._avg_pool2d_blocked(x, *a),
           _through(_avg_ref), _avgpool_samples, dtypes=DTYPES, grad=False, cuda_dtypes=()),
    OpSpec("adaptive_avg_pool2d_blocked", ["AdaptiveAvgPool2dBlocked"],
           lambda l, x, o: l._C._adaptive_avg_pool2d_blocked(x, o),
           _through(lambda t, x, o: _F(t).adaptive_avg_pool2d(x, o)), _adaptive_samples, dtypes=DTYPES, grad=False,
           cuda_dtypes=()),
    OpSpec("batch_norm_blocked", ["BatchNormBlocked"], lambda l, x, *a: l._C._batch_norm_blocked(x, *a),
           _through(_bn_ref), _bn_samples, dtypes=DTYPES, grad=False, cuda_dtypes=()),
]
