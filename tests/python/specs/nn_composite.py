"""Spec rows for the functional composites of lucid._ops_nn_extra (pixel/channel shuffles,
local_response_norm, 3-d and adaptive-max pooling, unpooling, pdist, embedding_bag, the margin
losses, affine_grid, grid_sample, rrelu in eval): no OpIds of their own, so `ops` is empty; the
rows (with conv3d and conv_transpose3d, composites of the 2-D convolutions) give them
forward-vs-torch, gradient, finite-difference and compiled-vs-eager checks."""
import numpy as np

from op_specs import OpSpec, Sample, arr, positive

REDS = ("none", "mean", "sum")


def _F(t):
    return t.nn.functional


def _row(name, samples, fn=None, **kw):
    fn = fn or name
    return OpSpec(name, [], lambda l, *a, **k: getattr(_F(l), fn)(*a, **k),
                  lambda t, *a, **k: getattr(_F(t), fn)(*a, **k), samples, **kw)


def _unpool_indices(rng, lead, out_spatial, k):
    """Flat indices of one position per non-overlapping k-window (as a max_pool with stride k
    returns them), for an input of spatial size out_spatial * k."""
    nd = len(out_spatial)
    full = [o * k for o in out_spatial]
    idx = np.zeros(lead + tuple(out_spatial), dtype=np.int64)
    for pos in np.ndindex(*idx.shape):
        coords = [pos[len(lead) + d] * k + rng.integers(0, k) for d in range(nd)]
        idx[pos] = np.ravel_multi_index(coords, full)
    return idx


def _bag_offsets(rng, length, bags):
    cuts = np.sort(rng.integers(0, length + 1, bags - 1))
    return np.concatenate([[0], cuts]).astype(np.int64)


def _mlm_target(rng, n, c):
    t = np.full((n, c), -1, dtype=np.int64)
    for i in range(n):
        k = rng.integers(0, c + 1)
        t[i, :k] = rng.permutation(c)[:k]
    return t


def _ctc_samples(rng, dt):
    """log_softmax(x) of (T, N, C) logits (torch's ctc gradient w.r.t. log_probs presumes it),
    padded targets, lengths with a short input and an empty target."""
    t, n, c, s = 7, 3, 5, 3
    tg = rng.integers(1, c, (n, s))
    il, tl = np.array([7, 6, 5], dtype=np.int64), np.array([3, 1, 0], dtype=np.int64)
    return [Sample([arr(rng, (t, n, c), dt), tg, il, tl], {"reduction": r}) for r in REDS] + [
        Sample([arr(rng, (t, n, c), dt), rng.integers(0, c - 1, (n, s)), il, tl],
               {"blank": c - 1, "zero_infinity": True})]


SPECS = [
    _row("conv3d", lambda rng, dt: [
        Sample([arr(rng, (2, 2, 4, 5, 4), dt), arr(rng, (3, 2, 3, 2, 3), dt), arr(rng, (3,), dt)]),
        Sample([arr(rng, (1, 4, 5, 4, 6), dt), arr(rng, (4, 2, 2, 3, 3), dt), None],
               {"stride": (2, 1, 2), "padding": 1, "dilation": (1, 1, 2), "groups": 2})]),
    _row("conv_transpose3d", lambda rng, dt: [
        Sample([arr(rng, (2, 2, 3, 2, 3), dt), arr(rng, (2, 3, 3, 2, 2), dt), arr(rng, (3,), dt)]),
        Sample([arr(rng, (1, 4, 2, 3, 2), dt), arr(rng, (4, 1, 2, 3, 2), dt), None],
               {"stride": 2, "padding": (1, 0, 1), "output_padding": 1, "groups": 2})]),
    _row("pixel_shuffle", lambda rng, dt: [Sample([arr(rng, (2, 8, 3, 2), dt), 2]),
                                           Sample([arr(rng, (9, 2, 2), dt), 3])]),
    _row("pixel_unshuffle", lambda rng, dt: [Sample([arr(rng, (2, 2, 4, 6), dt), 2])]),
    _row("channel_shuffle", lambda rng, dt: [Sample([arr(rng, (2, 6, 3, 2), dt), 3]),
                                             Sample([arr(rng, (1, 4, 5), dt), 2])]),
    _row("local_response_norm", lambda rng, dt: [Sample([arr(rng, (2, 6, 3), dt), 3]),
                                                 Sample([arr(rng, (2, 5, 3, 2), dt), 2], {"alpha": 0.1, "k": 2.0})]),
    _row("avg_pool3d", lambda rng, dt: [
        Sample([arr(rng, (2, 2, 4, 5, 6), dt), 2]),
        Sample([arr(rng, (1, 2, 5, 6, 5), dt), 3], {"stride": 2, "padding": 1, "count_include_pad": False,
                                                   "ceil_mode": True}),
        Sample([arr(rng, (2, 4, 4, 4), dt), (2, 1, 2)], {"divisor_override": 3})]),
    _row("max_pool3d", lambda rng, dt: [
        Sample([arr(rng, (2, 2, 4, 5, 6), dt), 2]),
        Sample([arr(rng, (1, 2, 6, 5, 7), dt), 3], {"stride": (1, 2, 2), "padding": 1, "dilation": (2, 1, 1)})]),
    _row("max_pool3d_with_indices", lambda rng, dt: [Sample([arr(rng, (2, 2, 4, 5, 6), dt), 2],
                                                            {"ceil_mode": True})]),
    _row("adaptive_avg_pool3d", lambda rng, dt: [Sample([arr(rng, (2, 2, 5, 6, 7), dt), (2, 3, 4)]),
                                                 Sample([arr(rng, (2, 4, 5, 3), dt), 2])]),
    _row("adaptive_max_pool3d", lambda rng, dt: [Sample([arr(rng, (2, 2, 5, 6, 7), dt), (2, 3, 4)]),
                                                 Sample([arr(rng, (2, 4, 5, 3), dt), 2], {"return_indices": True})]),
    _row("lp_pool3d", lambda rng, dt: [Sample([positive(rng, (2, 2, 4, 4, 6), dt), 2, 2]),
                                       Sample([positive(rng, (1, 2, 4, 3, 4), dt), 3, (2, 1, 2)], {"stride": 1})]),
    _row("max_unpool1d", lambda rng, dt: [Sample([arr(rng, (2, 3, 4), dt), _unpool_indices(rng, (2, 3), (4,), 2), 2],
                                                 grad_args=[0])]),
    _row("max_unpool2d", lambda rng, dt: [
        Sample([arr(rng, (2, 3, 2, 3), dt), _unpool_indices(rng, (2, 3), (2, 3), 2), 2], grad_args=[0]),
        Sample([arr(rng, (2, 2, 3), dt), _unpool_indices(rng, (2,), (2, 3), 3), 3], {"output_size": (7, 9)},
               grad_args=[0])]),
    _row("max_unpool3d", lambda rng, dt: [
        Sample([arr(rng, (1, 2, 2, 2, 3), dt), _unpool_indices(rng, (1, 2), (2, 2, 3), 2), 2], grad_args=[0])]),
    _row("conv_tbc", lambda rng, dt: [
        Sample([arr(rng, (7, 2, 3), dt), arr(rng, (3, 3, 4), dt), arr(rng, (4,), dt)]),
        Sample([arr(rng, (5, 3, 2), dt), arr(rng, (2, 2, 3), dt), arr(rng, (3,), dt), 1])]),
    _row("fractional_max_pool2d", lambda rng, dt: [
        Sample([arr(rng, (2, 3, 9, 8), dt), 3, (4, 5), None, False, rng.random((2, 3, 2)).astype(dt)], grad_args=[0]),
        Sample([arr(rng, (2, 7, 9), dt), (2, 3), None, (0.5, 0.6), True, rng.random((1, 2, 2)).astype(dt)],
               grad_args=[0])]),
    _row("fractional_max_pool3d", lambda rng, dt: [
        Sample([arr(rng, (1, 2, 6, 7, 8), dt), 2, (3, 4, 5), None, False, rng.random((1, 2, 3)).astype(dt)],
               grad_args=[0])]),
    _row("pdist", lambda rng, dt: [Sample([arr(rng, (5, 3), dt)]), Sample([arr(rng, (4, 6), dt)], {"p": 1.0}),
                                   Sample([arr(rng, (4, 3), dt)], {"p": 3.0})]),
    _row("embedding_bag", lambda rng, dt: [
        Sample([rng.integers(0, 7, (4, 3)), arr(rng, (7, 5), dt)], {"mode": m}) for m in ("sum", "mean", "max")] + [
        Sample([rng.integers(0, 7, 9), arr(rng, (7, 5), dt), _bag_offsets(rng, 9, 4)], {"mode": "mean"}),
        Sample([rng.integers(0, 7, 9), arr(rng, (7, 5), dt), _bag_offsets(rng, 9, 3), None, 2, False, "sum", False,
                arr(rng, (9,), dt)]),
        Sample([rng.integers(0, 7, (3, 4)), arr(rng, (7, 5), dt)], {"mode": "mean", "padding_idx": 0})]),
    _row("multilabel_margin_loss", lambda rng, dt: [
        Sample([arr(rng, (4, 5), dt), _mlm_target(rng, 4, 5)], {"reduction": r}) for r in REDS] + [
        Sample([arr(rng, (5,), dt), _mlm_target(rng, 1, 5)[0]])]),
    _row("triplet_margin_with_distance_loss", lambda rng, dt: [
        Sample([arr(rng, (4, 5), dt), arr(rng, (4, 5), dt), arr(rng, (4, 5), dt)], {"reduction": r}) for r in REDS] + [
        Sample([arr(rng, (4, 5), dt), arr(rng, (4, 5), dt), arr(rng, (4, 5), dt)], {"swap": True, "margin": 2.0})]),
    _row("affine_grid", lambda rng, dt: [
        Sample([arr(rng, (2, 2, 3), dt), (2, 3, 4, 5)], {"align_corners": a}) for a in (False, True)] + [
        Sample([arr(rng, (2, 3, 4), dt), (2, 1, 3, 4, 2)], {"align_corners": False}),
        Sample([arr(rng, (1, 2, 3), dt), (1, 1, 1, 3)], {"align_corners": True})]),
    _row("grid_sample", lambda rng, dt: [
        Sample([arr(rng, (2, 3, 4, 5), dt), arr(rng, (2, 3, 6, 2), dt, -1.2, 1.2)],
               {"mode": m, "padding_mode": p, "align_corners": a}, grad_args=[0] if m == "nearest" else [0, 1])
        for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection") for a in (False, True)],
         # torch's CUDA grid_sample rounds its bfloat16 sampling coordinates (0.05 off torch's CPU,
         # which lucid's CPU and CUDA agree with), so CUDA checks the formats torch computes exactly.
         cuda_dtypes=("float32", "float64", "float16")),
    OpSpec("ctc_loss", [], lambda l, x, *a, **k: _F(l).ctc_loss(_F(l).log_softmax(x, 2), *a, **k),
           lambda t, x, *a, **k: _F(t).ctc_loss(_F(t).log_softmax(x, 2), *a, **k), _ctc_samples),
    _row("rrelu", lambda rng, dt: [Sample([arr(rng, (3, 4), dt)]), Sample([arr(rng, (3, 4), dt), 0.2, 0.4])]),
]
