"""Spec rows for the loss ops (MseLoss, L1Loss, SmoothL1Loss, HuberLoss, PointwiseLossBackward,
BinaryCrossEntropy(+Backward), BinaryCrossEntropyWithLogits, BceWithLogitsBackward,
NllLoss(+Backward), CrossEntropy(+Backward))."""
import numpy as np

from op_specs import OpSpec, Sample, arr, positive

FLOATS = ("float32", "float64", "float16", "bfloat16")
REDS = ("mean", "sum", "none")


def _F(t):
    return t.nn.functional


def _pair(rng, dt, **kw):
    out = [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)], dict(kw, reduction=r)) for r in REDS]
    out.append(Sample([arr(rng, (2, 3, 4), dt), arr(rng, (3, 4), dt)], dict(kw)))  # broadcast target
    out.append(Sample([arr(rng, (5,), dt), arr(rng, (5,), dt)], dict(kw, reduction="sum")))
    return out


def _bce(rng, dt):
    x = lambda s: positive(rng, s, dt, 0.05, 0.95)  # noqa: E731
    p = lambda s: positive(rng, s, dt, 0.0, 1.0)  # noqa: E731
    return [Sample([x((3, 4)), p((3, 4))], {"reduction": r}) for r in REDS] + [
        Sample([x((3, 4)), p((3, 4)), positive(rng, (4,), dt)], {"reduction": "mean"}, grad_args=[0, 1]),
        Sample([x((2, 3)), p((2, 3)), positive(rng, (2, 3), dt)], {"reduction": "none"}, grad_args=[0, 1])]


def _bcel(rng, dt):
    x = lambda s: arr(rng, s, dt, -3, 3)  # noqa: E731
    p = lambda s: positive(rng, s, dt, 0.0, 1.0)  # noqa: E731
    return [Sample([x((3, 4)), p((3, 4))], {"reduction": r}) for r in REDS] + [
        Sample([x((3, 4)), p((3, 4)), positive(rng, (4,), dt), None], {"reduction": "sum"}, grad_args=[0, 1]),
        Sample([x((3, 4)), p((3, 4)), None, positive(rng, (4,), dt, 0.2, 3.0)], {}, grad_args=[0, 1]),
        Sample([x((2, 3)), p((2, 3)), positive(rng, (2, 3), dt), positive(rng, (3,), dt, 0.2, 3.0)],
               {"reduction": "none"}, grad_args=[0, 1])]


def _targets(rng, shape, c):
    return rng.integers(0, c, shape)


def _ce(rng, dt):
    out = []
    for r in REDS:
        out.append(Sample([arr(rng, (4, 5), dt), _targets(rng, (4,), 5)], {"reduction": r}, grad_args=[0]))
    t = _targets(rng, (3, 2, 2), 4)
    t[0, 0, 1] = -100
    out.append(Sample([arr(rng, (3, 4, 2, 2), dt), t], {}, grad_args=[0]))
    t2 = _targets(rng, (6,), 5)
    t2[2] = 1
    out.append(Sample([arr(rng, (6, 5), dt), t2, positive(rng, (5,), dt)], {"ignore_index": 1}, grad_args=[0]))
    out.append(Sample([arr(rng, (6, 5), dt), _targets(rng, (6,), 5), positive(rng, (5,), dt)],
                      {"label_smoothing": 0.2}, grad_args=[0]))
    t3 = _targets(rng, (4, 3), 5)
    t3[1, 1] = -100
    out.append(Sample([arr(rng, (4, 5, 3), dt), t3, None], {"label_smoothing": 0.1, "reduction": "none"}, grad_args=[0]))
    out.append(Sample([arr(rng, (4, 5, 3), dt), t3, positive(rng, (5,), dt)], {"label_smoothing": 0.3, "reduction": "sum"},
                      grad_args=[0]))
    return out


def _ce_prob(rng, dt):
    def probs(shape):
        p = rng.random(shape) + 0.1
        return (p / p.sum(axis=1, keepdims=True)).astype(np.float32 if dt in ("float16", "bfloat16") else dt)
    return [Sample([arr(rng, (4, 5), dt), probs((4, 5))], {"reduction": r}) for r in REDS] + [
        Sample([arr(rng, (3, 4, 2), dt), probs((3, 4, 2)), positive(rng, (4,), dt)], {"label_smoothing": 0.2},
               grad_args=[0, 1]),
        Sample([arr(rng, (3, 4, 2), dt), probs((3, 4, 2)), positive(rng, (4,), dt)], {"reduction": "none"},
               grad_args=[0, 1])]


def _nll(rng, dt):
    out = [Sample([arr(rng, (4, 5), dt), _targets(rng, (4,), 5)], {"reduction": r}, grad_args=[0]) for r in REDS]
    t = _targets(rng, (3, 2, 2), 4)
    t[1, 0, 0] = 3
    out.append(Sample([arr(rng, (3, 4, 2, 2), dt), t, positive(rng, (4,), dt)], {"ignore_index": 3}, grad_args=[0]))
    out.append(Sample([arr(rng, (3, 4, 2), dt), _targets(rng, (3, 2), 4), positive(rng, (4,), dt)],
                      {"reduction": "none"}, grad_args=[0]))
    return out


def _ll(name):
    return lambda l, *a, **k: getattr(l, name)(*a, **k)


def _tl(name):
    return lambda t, *a, **k: getattr(t.nn.functional, name)(*a, **k)


def _bcel_l(l, x, t, w=None, pw=None, **k):
    return l.binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=pw, **k)


def _bcel_t(t, x, tg, w=None, pw=None, **k):
    return t.nn.functional.binary_cross_entropy_with_logits(x, tg, weight=w, pos_weight=pw, **k)


def _kl(rng, dt):
    def logp(shape):
        z = rng.standard_normal(shape)
        return (z - np.log(np.exp(z).sum(-1, keepdims=True))).astype(np.float32 if dt in ("float16", "bfloat16") else dt)

    def prob(shape):
        p = rng.random(shape) + 0.05
        return (p / p.sum(-1, keepdims=True)).astype(np.float32 if dt in ("float16", "bfloat16") else dt)
    return [Sample([logp((3, 4)), prob((3, 4))], {"reduction": r}) for r in ("mean", "sum", "none", "batchmean")] + [
        Sample([logp((3, 4)), logp((3, 4))], {"reduction": "batchmean", "log_target": True}),
        Sample([logp((2, 3, 4)), prob((3, 4))], {"reduction": "sum"})]


SPECS = [
    OpSpec("mse_loss", ["MseLoss", "PointwiseLossBackward"], _ll("mse_loss"), _tl("mse_loss"), _pair, dtypes=FLOATS),
    OpSpec("l1_loss", ["L1Loss", "PointwiseLossBackward"], _ll("l1_loss"), _tl("l1_loss"), _pair, dtypes=FLOATS),
    OpSpec("smooth_l1_loss", ["SmoothL1Loss", "PointwiseLossBackward"], _ll("smooth_l1_loss"), _tl("smooth_l1_loss"),
           lambda rng, dt: _pair(rng, dt) + _pair(rng, dt, beta=0.5)[:2] + [_pair(rng, dt, beta=0.0)[0]], dtypes=FLOATS),
    OpSpec("huber_loss", ["HuberLoss", "PointwiseLossBackward"], _ll("huber_loss"), _tl("huber_loss"),
           lambda rng, dt: _pair(rng, dt) + _pair(rng, dt, delta=0.7)[:2], dtypes=FLOATS),
    OpSpec("binary_cross_entropy", ["BinaryCrossEntropy", "BinaryCrossEntropyBackward"], _ll("binary_cross_entropy"),
           _tl("binary_cross_entropy"), _bce, dtypes=FLOATS),
    OpSpec("binary_cross_entropy_with_logits", ["BinaryCrossEntropyWithLogits", "BceWithLogitsBackward"],
           _bcel_l, _bcel_t, _bcel, dtypes=FLOATS),
    OpSpec("cross_entropy", ["CrossEntropy", "CrossEntropyBackward"], _ll("cross_entropy"), _tl("cross_entropy"), _ce,
           dtypes=FLOATS, low_precision_tol=3e-2),
    OpSpec("cross_entropy_prob", ["CrossEntropy", "CrossEntropyBackward"], _ll("cross_entropy"), _tl("cross_entropy"),
           _ce_prob, dtypes=FLOATS, low_precision_tol=3e-2),
    OpSpec("kl_div", ["KlDiv", "KlDivBackward"], _ll("kl_div"), _tl("kl_div"), _kl, dtypes=FLOATS),
    OpSpec("nll_loss", ["NllLoss", "NllLossBackward"], _ll("nll_loss"), _tl("nll_loss"), _nll, dtypes=FLOATS),
]


# ---- composite losses (Python over ops of every family) ----------------------------------
def _sign(rng, shape, dt):
    return np.sign(rng.standard_normal(shape)).astype(np.float32 if dt in ("float16", "bfloat16") else dt)


def _composite_samples(name):
    def f(rng, dt):
        x, y = arr(rng, (4, 5), dt), arr(rng, (4, 5), dt)
        if name == "poisson_nll_loss":
            return [Sample([x, positive(rng, (4, 5), dt, 0.0, 4.0)], {"reduction": r}, grad_args=[0]) for r in REDS] + [
                Sample([x, positive(rng, (4, 5), dt, 0.0, 4.0)], {"full": True}, grad_args=[0]),
                Sample([positive(rng, (4, 5), dt), positive(rng, (4, 5), dt)], {"log_input": False}, grad_args=[0, 1])]
        if name == "gaussian_nll_loss":
            return [Sample([x, y, positive(rng, (4, 5), dt)], {"reduction": r}) for r in REDS] + [
                Sample([x, y, positive(rng, (4,), dt)], {"full": True}), Sample([x, y, positive(rng, (4, 1), dt)])]
        if name in ("hinge_embedding_loss", "soft_margin_loss"):
            return [Sample([x, _sign(rng, (4, 5), dt)], {"reduction": r}, grad_args=[0]) for r in REDS]
        if name == "margin_ranking_loss":
            return [Sample([arr(rng, (6,), dt), arr(rng, (6,), dt), _sign(rng, (6,), dt)], {"margin": 0.2, "reduction": r},
                           grad_args=[0, 1]) for r in REDS]
        if name == "multilabel_soft_margin_loss":
            t = (rng.random((4, 5)) > 0.5).astype(x.dtype)
            return [Sample([x, t], {"reduction": r}, grad_args=[0]) for r in REDS] + [
                Sample([x, t, positive(rng, (5,), dt)], {}, grad_args=[0])]
        if name == "cosine_embedding_loss":
            return [Sample([x, y, _sign(rng, (4,), dt)], {"margin": 0.1, "reduction": r}, grad_args=[0, 1]) for r in REDS]
        if name == "triplet_margin_loss":
            return [Sample([x, y, arr(rng, (4, 5), dt)], {"reduction": r}) for r in REDS] + [
                Sample([x, y, arr(rng, (4, 5), dt)], {"swap": True, "p": 1, "margin": 2.0})]
        if name == "multi_margin_loss":
            t = rng.integers(0, 5, 4)
            return [Sample([x, t], {"reduction": r}, grad_args=[0]) for r in REDS] + [
                Sample([x, t], {"p": 2, "margin": 0.5}, grad_args=[0])]
        raise KeyError(name)
    return f


SPECS += [OpSpec(n, [], _ll(n), _tl(n), _composite_samples(n), dtypes=("float32", "float64"))
          for n in ("poisson_nll_loss", "gaussian_nll_loss", "hinge_embedding_loss", "soft_margin_loss",
                    "margin_ranking_loss", "multilabel_soft_margin_loss", "cosine_embedding_loss",
                    "triplet_margin_loss", "multi_margin_loss")]
