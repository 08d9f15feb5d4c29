"""The fused multi-tensor optimizer steps (FusedAdam / FusedSgd: the foreach/fused path of Adam,
AdamW and SGD). 20-step trajectories over a few parameters with given gradients: the fused CPU
kernel against the op-by-op CPU path (runs everywhere), and CUDA (fused by default) against the
CPU op-by-op path and the fused CPU kernel (skipped without a GPU); maximize, weight decay,
amsgrad, nesterov, float16/bfloat16 parameters, and a list long enough for several launches."""
import numpy as np
import pytest

import lucid

cuda = pytest.mark.skipif(not lucid.cuda.is_available(), reason="no CUDA device")

SHAPES = [(7, 5), (13,), (3, 4, 2), (1,), ()]


def _params(rng, device, dtype, shapes=SHAPES):
    vals = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
    return vals, [lucid.tensor(v).to(dtype).to(device).requires_grad_() for v in vals]


def _run(make_opt, device, dtype="float32", steps=20, shapes=SHAPES, seed=0, **kw):
    rng = np.random.default_rng(seed)
    _, ps = _params(rng, device, getattr(lucid, dtype), shapes)
    opt = make_opt(ps, **kw)
    for _ in range(steps):
        for p in ps:
            g = rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32)
            p.grad = lucid.tensor(g).to(p.dtype).to(device)
        opt.step()
    return [p.detach().cpu().to(lucid.float64).numpy() for p in ps], opt


ADAM_CASES = [
    (lucid.optim.Adam, dict(lr=1e-2)),
    (lucid.optim.Adam, dict(lr=1e-2, weight_decay=0.1, maximize=True)),
    (lucid.optim.Adam, dict(lr=3e-2, betas=(0.8, 0.95), amsgrad=True, eps=1e-6)),
    (lucid.optim.AdamW, dict(lr=1e-2, weight_decay=0.05)),
    (lucid.optim.AdamW, dict(lr=1e-2, weight_decay=0.05, amsgrad=True, maximize=True)),
]
SGD_CASES = [
    (lucid.optim.SGD, dict(lr=0.1)),
    (lucid.optim.SGD, dict(lr=0.1, momentum=0.9)),
    (lucid.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.01, maximize=True)),
    (lucid.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
]
CASES = ADAM_CASES + SGD_CASES
IDS = [f"{c.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for c, kw in CASES]


def _close(a, b, rtol, what):
    for i, (x, y) in enumerate(zip(a, b)):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol, err_msg=f"{what}: parameter {i}")


@pytest.mark.parametrize("opt,kw", CASES, ids=IDS)
def test_fused_cpu_matches_op_by_op(opt, kw):
    # The same formula order and roundings; the elementwise kernels may contract a multiply-add
    # that the fused kernel (compiled without contraction) does not, hence not bit-exact.
    ref, _ = _run(opt, "cpu", foreach=False, **kw)
    got, _ = _run(opt, "cpu", foreach=True, **kw)
    _close(got, ref, 1e-6, "fused CPU vs op-by-op CPU")


@pytest.mark.parametrize("dtype", ("float16", "bfloat16", "float64"))
@pytest.mark.parametrize("opt,kw", [ADAM_CASES[2], ADAM_CASES[3], SGD_CASES[3]], ids=["adam-amsgrad", "adamw", "sgd"])
def test_fused_cpu_low_precision_and_float64(opt, kw, dtype):
    ref, _ = _run(opt, "cpu", dtype, foreach=False, **kw)
    got, _ = _run(opt, "cpu", dtype, foreach=True, **kw)
    _close(got, ref, {"float64": 1e-12, "float16": 2e-3, "bfloat16": 2e-2}[dtype], f"fused CPU {dtype}")


def test_fused_path_skips_params_it_cannot_take():
    # A non-contiguous parameter falls back to the op-by-op step, the others stay fused.
    rng = np.random.default_rng(1)
    base = lucid.tensor(rng.uniform(-1, 1, (4, 6)).astype(np.float32))
    ps = [base.detach().clone().mT.requires_grad_(),  # a transposed view: not contiguous
          lucid.tensor(rng.uniform(-1, 1, (5,)).astype(np.float32)).requires_grad_()]
    qs = [p.detach().clone().requires_grad_() for p in ps]
    o1, o2 = lucid.optim.Adam(ps, lr=0.1, foreach=True), lucid.optim.Adam(qs, lr=0.1, foreach=False)
    for _ in range(3):
        for p, q in zip(ps, qs):
            g = lucid.tensor(rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32))
            p.grad, q.grad = g.clone(), g.clone()
        o1.step()
        o2.step()
    for p, q in zip(ps, qs):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert not ps[0].is_contiguous()
    assert float(o1.state[ps[0]]["step"].item()) == 3.0 and float(o1.state[ps[1]]["step"].item()) == 3.0


def test_fused_op_bad_input():
    p = lucid.zeros((3,))
    with pytest.raises(ValueError, match="shape"):
        lucid._C._fused_sgd_([p], [lucid.zeros((4,))], [], lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0,
                             nesterov=False, maximize=False, first=False)
    with pytest.raises(TypeError):
        lucid._C._fused_sgd_([lucid.zeros((3,), dtype=lucid.int64)], [lucid.zeros((3,), dtype=lucid.int64)], [],
                             lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False,
                             first=False)


@cuda
@pytest.mark.parametrize("opt,kw", CASES, ids=IDS)
def test_cuda_trajectory_matches_cpu(opt, kw):
    ref, _ = _run(opt, "cpu", foreach=False, **kw)
    fused_cpu, _ = _run(opt, "cpu", foreach=True, **kw)
    got, o = _run(opt, "cuda", **kw)  # fused by default on CUDA
    _close(got, fused_cpu, 1e-7, "CUDA fused vs CPU fused (same kernel math, no contraction)")
    _close(got, ref, 1e-6, "CUDA fused vs CPU op-by-op")
    if "amsgrad" not in kw and opt is not lucid.optim.SGD:
        assert o.state[o.param_groups[0]["params"][0]]["exp_avg"].device.type == "cuda"


@cuda
@pytest.mark.parametrize("opt,kw", CASES, ids=IDS)
def test_cuda_op_by_op_matches_fused(opt, kw):
    ref, _ = _run(opt, "cuda", foreach=False, **kw)
    got, _ = _run(opt, "cuda", **kw)
    _close(got, ref, 1e-6, "CUDA fused vs CUDA op-by-op")


@cuda
@pytest.mark.parametrize("dtype", ("float16", "bfloat16", "float64"))
def test_cuda_low_precision(dtype):
    for opt, kw in (ADAM_CASES[4], SGD_CASES[3]):
        ref, _ = _run(opt, "cpu", dtype, foreach=True, **kw)
        got, _ = _run(opt, "cuda", dtype, **kw)
        _close(got, ref, {"float64": 1e-12, "float16": 1e-3, "bfloat16": 1e-2}[dtype], f"CUDA {dtype}")


@cuda
def test_cuda_many_and_large_tensors_take_several_launches():
    # 70 tensors (above the 30-36 per launch) and one of 3 * 65536 + 5 elements (several chunks,
    # across a launch boundary when the 320-block limit is reached).
    shapes = [(3 * 65536 + 5,)] + [(17,)] * 69 + [(400, 1000)]
    for opt, kw in (ADAM_CASES[2], SGD_CASES[1]):
        ref, _ = _run(opt, "cpu", steps=3, shapes=shapes, foreach=True, **kw)
        got, _ = _run(opt, "cuda", steps=3, shapes=shapes, **kw)
        _close(got, ref, 1e-7, f"{opt.__name__} many tensors")
