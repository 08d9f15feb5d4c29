"""Spec rows for the fused optimizer steps (FusedAdam, FusedSgd): one step over two parameters,
against the same update written with torch ops in the op-by-op path's order
(python/lucid/optim/{adam,sgd}.py). Trajectories over many steps, CPU against CUDA, are in
test_cuda_optim_fused.py; the optimizers' own tests in test_optim.py."""
import math

from op_specs import OpSpec, Sample, arr, positive

FLOATS = ("float32", "float64", "float16", "bfloat16")
_ADAM = [dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, step=1.0, amsgrad=False, maximize=False,
              decoupled=False),
         dict(lr=3e-2, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.1, step=7.0, amsgrad=True, maximize=True,
              decoupled=False),
         dict(lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.05, step=3.0, amsgrad=False, maximize=False,
              decoupled=True)]
_SGD = [dict(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False, first=False),
        dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01, nesterov=False, maximize=True, first=False),
        dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=True, maximize=False, first=False),
        dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=0.1, nesterov=True, maximize=False, first=True)]


def _adam_samples(rng, dt):
    out = []
    for k in _ADAM:
        shapes = ((3, 4), (5,))
        args = [arr(rng, s, dt) for s in shapes] + [arr(rng, s, dt) for s in shapes] + \
               [arr(rng, s, dt, -0.5, 0.5) for s in shapes] + [positive(rng, s, dt, 0.0, 0.5) for s in shapes] + \
               [positive(rng, s, dt, 0.0, 0.5) for s in shapes]
        out.append(Sample(args, k))
    return out


def _adam_lucid(l, p0, p1, g0, g1, m0, m1, v0, v1, w0, w1, **k):
    ps, ms, vs, ws = ([t.detach().clone() for t in ts] for ts in ((p0, p1), (m0, m1), (v0, v1), (w0, w1)))
    l._C._fused_adam_(ps, [g0, g1], ms, vs, ws if k["amsgrad"] else [], **k)
    return tuple(ps + ms + vs + (ws if k["amsgrad"] else []))


def _adam_torch(t, p0, p1, g0, g1, m0, m1, v0, v1, w0, w1, lr, beta1, beta2, eps, weight_decay, step, amsgrad,
                maximize, decoupled):
    outs = ([], [], [], [])
    for p, g, m, v, w in ((p0, g0, m0, v0, w0), (p1, g1, m1, v1, w1)):
        p, m, v, w = p.clone(), m.clone(), v.clone(), w.clone()
        g = -g if maximize else g
        if weight_decay != 0:
            if decoupled:
                p.mul_(1 - lr * weight_decay)
            else:
                g = g + p * weight_decay
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        bc1, bc2 = 1 - beta1 ** step, 1 - beta2 ** step
        if amsgrad:
            w = t.maximum(w, v)
        denom = (w if amsgrad else v).sqrt() / math.sqrt(bc2) + eps
        p.addcdiv_(m, denom, value=-(lr / bc1))
        for lst, x in zip(outs, (p, m, v, w)):
            lst.append(x)
    return tuple(outs[0] + outs[1] + outs[2] + (outs[3] if amsgrad else []))


def _sgd_samples(rng, dt):
    out = []
    for k in _SGD:
        shapes = ((4, 3), (6,))
        args = [arr(rng, s, dt) for s in shapes] * 1 + [arr(rng, s, dt) for s in shapes] + \
               [arr(rng, s, dt) for s in shapes]
        out.append(Sample(args, k))
    return out


def _sgd_lucid(l, p0, p1, g0, g1, b0, b1, **k):
    ps = [p0.detach().clone(), p1.detach().clone()]
    bs = [b0.detach().clone(), b1.detach().clone()] if k["momentum"] != 0 else []
    l._C._fused_sgd_(ps, [g0, g1], bs, **k)
    return tuple(ps + bs)


def _sgd_torch(t, p0, p1, g0, g1, b0, b1, lr, momentum, dampening, weight_decay, nesterov, maximize, first):
    ps, bs = [], []
    for p, g, b in ((p0, g0, b0), (p1, g1, b1)):
        p, b = p.clone(), b.clone()
        g = -g if maximize else g
        if weight_decay != 0:
            g = g + p * weight_decay
        if momentum != 0:
            if first:
                b = g.clone()
            else:
                b.mul_(momentum)
                b = b + g if dampening == 0 else b + g * (1 - dampening)
            g = g + b * momentum if nesterov else b
            bs.append(b)
        p.add_(g, alpha=-lr)
        ps.append(p)
    return tuple(ps + bs)


SPECS = [
    OpSpec("fused_adam", ["FusedAdam"], _adam_lucid, _adam_torch, _adam_samples, dtypes=FLOATS, grad=False, fd=False,
           atol=1e-6, rtol=1e-6, low_precision_tol=2e-2),
    OpSpec("fused_sgd", ["FusedSgd"], _sgd_lucid, _sgd_torch, _sgd_samples, dtypes=FLOATS, grad=False, fd=False,
           atol=1e-6, rtol=1e-6, low_precision_tol=2e-2),
]
