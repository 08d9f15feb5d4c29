"""fused_step: forward + loss + backward + clipping + optimizer update as one executable. Each
run is compared with the same steps run eagerly on a twin model (same weights, batches, seeds):
parameters within 1e-4 relative after 100 steps, .grad equal to the step's gradient. The
100-step comparison (for test_compile_optim.CUDA_OPTIMIZERS), clipping with dropout and a
scheduler, and fresh dropout masks also run on CUDA."""
import gc
import os

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim
from devices import DEVICES
from test_compile_optim import MODELS, OPTIMIZERS, assert_params_close, device_cases, rel_err, twins

FUSED_OPTIMIZERS = list(OPTIMIZERS)


def eager_step(model, opt, x, y, max_grad_norm=None):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    if max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    opt.step()
    return loss


def run(m, ref, step, eopt, shape, steps, max_grad_norm=None, scheds=(None, None), seed=1):
    device = next(m.parameters()).device
    rng = np.random.default_rng(seed)
    for i in range(steps):
        x = lucid.tensor(rng.standard_normal(shape).astype(np.float32)).to(device)
        y = lucid.tensor(rng.integers(0, 5, shape[0])).to(device)
        lucid.manual_seed(1000 + i)
        loss = step(x, y)
        lucid.manual_seed(1000 + i)
        ref_loss = eager_step(ref, eopt, x, y, max_grad_norm)
        assert abs(loss.item() - ref_loss.item()) <= 1e-4 * max(1.0, abs(ref_loss.item()))
        for s in scheds:
            if s is not None:
                s.step()


@pytest.mark.parametrize("cosine", [False, True], ids=["constant_lr", "cosine_lr"])
@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("name,device", device_cases(FUSED_OPTIMIZERS))
def test_fused_step_matches_eager_for_100_steps(name, device, model, cosine):
    # cosine: the learning rate changes every step, read at run time with no recompile.
    build, shape = MODELS[model]
    m, ref = twins(build, device)
    opt, eopt = OPTIMIZERS[name](m.parameters()), OPTIMIZERS[name](ref.parameters())
    scheds = ((optim.lr_scheduler.CosineAnnealingLR(opt, 100), optim.lr_scheduler.CosineAnnealingLR(eopt, 100))
              if cosine else (None, None))
    step = lucid.compile.fused_step(m, F.cross_entropy, opt, strict=True)
    run(m, ref, step, eopt, shape, 100, scheds=scheds)
    assert_params_close(m, ref)
    for p, q in zip(m.parameters(), ref.parameters()):  # .grad holds this step's gradient
        assert rel_err(p.grad, q.grad) <= 1e-3
    for k, v in m.state_dict().items():  # BatchNorm running stats and counters
        assert rel_err(v.double(), ref.state_dict()[k].double()) <= 1e-4, k
    if cosine:
        assert opt.param_groups[0]["lr"] == eopt.param_groups[0]["lr"] != OPTIMIZERS[name](ref.parameters()).param_groups[0]["lr"]
    info = step.cache_info()
    assert info["eager_only"] == {} and info["entries"] == 1


@pytest.mark.parametrize("device", DEVICES)
def test_fused_step_with_scheduler_clipping_and_dropout(device):
    def build():
        return nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Dropout(0.3), nn.Linear(24, 5))

    m, ref = twins(build, device)
    copt, eopt = optim.AdamW(m.parameters(), lr=1e-2), optim.AdamW(ref.parameters(), lr=1e-2)
    step = lucid.compile.fused_step(m, F.cross_entropy, copt, max_grad_norm=0.5, strict=True)
    scheds = (optim.lr_scheduler.OneCycleLR(copt, max_lr=0.05, total_steps=60),
              optim.lr_scheduler.OneCycleLR(eopt, max_lr=0.05, total_steps=60))
    run(m, ref, step, eopt, (8, 10), 50, max_grad_norm=0.5, scheds=scheds)
    assert_params_close(m, ref)
    assert step.cache_info()["entries"] == 1


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_masks_are_fresh_each_call(device):
    lucid.manual_seed(0)
    m = nn.Sequential(nn.Linear(10, 64), nn.Dropout(0.5), nn.Linear(64, 5)).to(device)
    step = lucid.compile.fused_step(m, F.cross_entropy, optim.SGD(m.parameters(), lr=0.0))
    x, y = lucid.randn(4, 10, device=device), lucid.randint(0, 5, (4,), device=device)
    losses = [step(x, y).item() for _ in range(6)]  # lr 0: only the masks change the loss
    assert len(set(losses[2:])) > 1


def test_keep_grads_false_and_frozen_parameters():
    m, ref = twins(lambda: nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 5)))
    for mm in (m, ref):
        mm[0].weight.requires_grad_(False)
    w0 = m[0].weight.detach().clone()
    step = lucid.compile.fused_step(m, F.cross_entropy, optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
                                    keep_grads=False, strict=True)
    run(m, ref, step, optim.SGD(ref.parameters(), lr=0.1, momentum=0.9), (8, 10), 20)
    assert rel_err(m[0].weight, w0) == 0.0
    assert all(p.grad is None for p in m.parameters())
    assert_params_close(m, ref)


# (step, parameter index, requires_grad): freezing and unfreezing parts of the model mid-run.
FREEZE_SCHEDULES = {
    "freeze_weight": [(3, 0, False), (9, 0, True)],
    "freeze_two_then_thaw": [(2, 3, False), (4, 0, False), (6, 3, True), (8, 1, False)],
}


@pytest.mark.parametrize("schedule", list(FREEZE_SCHEDULES))
@pytest.mark.parametrize("name", FUSED_OPTIMIZERS)
def test_freezing_parameters_mid_training_matches_eager(name, schedule):
    # A parameter frozen with requires_grad_(False) after some steps keeps its value (its stale
    # .grad and momentum no longer move it), exactly as opt.zero_grad(); backward(); step().
    m, ref = twins(lambda: nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 5)))
    opt, eopt = OPTIMIZERS[name](m.parameters()), OPTIMIZERS[name](ref.parameters())
    step = lucid.compile.fused_step(m, F.cross_entropy, opt, strict=True)
    events = {}
    for at, idx, flag in FREEZE_SCHEDULES[schedule]:
        events.setdefault(at, []).append((idx, flag))
    rng = np.random.default_rng(5)
    for i in range(12):
        for idx, flag in events.get(i, []):
            list(m.parameters())[idx].requires_grad_(flag)
            list(ref.parameters())[idx].requires_grad_(flag)
        x = lucid.tensor(rng.standard_normal((8, 10)).astype(np.float32))
        y = lucid.tensor(rng.integers(0, 5, 8))
        loss, ref_loss = step(x, y), eager_step(ref, eopt, x, y)
        assert abs(loss.item() - ref_loss.item()) <= 1e-5 * max(1.0, abs(ref_loss.item())), f"step {i}"
        assert_params_close(m, ref, 1e-5)
        for (n, p), q in zip(m.named_parameters(), ref.parameters()):
            assert (p.grad is None) == (q.grad is None), f"step {i}: {n}.grad"


def test_parameters_the_optimizer_does_not_hold_get_grad_as_in_eager():
    # eager backward() accumulates into every leaf's .grad; opt.zero_grad() clears only the
    # optimizer's parameters, so the others accumulate over the steps.
    m, ref = twins(lambda: nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 5)))
    opt = optim.SGD(m[2].parameters(), lr=0.1, momentum=0.9)
    eopt = optim.SGD(ref[2].parameters(), lr=0.1, momentum=0.9)
    step = lucid.compile.fused_step(m, F.cross_entropy, opt, strict=True)
    rng = np.random.default_rng(2)
    for i in range(6):
        if i == 4:  # a frozen extra parameter stops accumulating
            m[0].bias.requires_grad_(False)
            ref[0].bias.requires_grad_(False)
        x = lucid.tensor(rng.standard_normal((8, 10)).astype(np.float32))
        y = lucid.tensor(rng.integers(0, 5, 8))
        step(x, y)
        eager_step(ref, eopt, x, y)
        assert_params_close(m, ref, 1e-5)
        for (n, p), q in zip(m.named_parameters(), ref.parameters()):
            assert q.grad is not None and p.grad is not None, f"step {i}: {n}.grad"
            assert rel_err(p.grad, q.grad) <= 1e-5, f"step {i}: {n}.grad"
    assert rel_err(m[0].weight, ref[0].weight) == 0.0  # not held by the optimizer: never updated


@pytest.mark.parametrize("case", ["model_none", "loss_none", "optimizer_str", "loss_float", "loss_vector",
                                  "loss_int"])
def test_fused_step_rejects_bad_arguments_with_a_clear_error(case):
    m = nn.Linear(4, 2)
    opt = optim.SGD(m.parameters(), lr=0.1)
    x, y = lucid.randn(3, 4), lucid.randn(3, 2)
    loss_fns = {"loss_float": lambda o, t: 1.0, "loss_vector": lambda o, t: (o - t).sum(1),
                "loss_int": lambda o, t: (o > t).sum()}
    if case in ("model_none", "loss_none", "optimizer_str"):  # at construction, not at the first step
        args = {"model_none": (None, F.mse_loss, opt), "loss_none": (m, None, opt),
                "optimizer_str": (m, F.mse_loss, "sgd")}[case]
        with pytest.raises(TypeError, match="fused_step: (model|loss_fn|optimizer) must be"):
            lucid.compile.fused_step(*args)
        return
    step = lucid.compile.fused_step(m, loss_fns[case], opt)
    with pytest.raises(TypeError, match="fused_step: loss_fn must return a floating-point tensor with one element"):
        step(x, y)


class _WithUnused(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 5))
        self.unused = nn.Linear(3, 3)  # requires grad, never reached by the loss

    def forward(self, x):
        return self.body(x)


def test_parameters_without_a_gradient_are_skipped_as_in_eager():
    # The unused layer gets no gradient: its .grad stays None and Adam leaves it (and creates no
    # state for it), as the eager step does.
    m, ref = twins(_WithUnused)
    opt, eopt = optim.Adam(m.parameters(), lr=1e-2), optim.Adam(ref.parameters(), lr=1e-2)
    u0 = m.unused.weight.detach().clone()
    step = lucid.compile.fused_step(m, F.cross_entropy, opt, strict=True)
    run(m, ref, step, eopt, (8, 10), 20)
    assert_params_close(m, ref)
    assert m.unused.weight.grad is None and ref.unused.weight.grad is None
    assert rel_err(m.unused.weight, u0) == 0.0 and m.unused.weight not in opt.state
    assert all(p.grad is not None for p in m.body.parameters())
    assert step.cache_info()["entries"] == 1


def test_new_batch_size_compiles_a_new_entry():
    m, ref = twins(lambda: nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 5)))
    step = lucid.compile.fused_step(m, F.cross_entropy, optim.Adam(m.parameters(), lr=1e-2))
    eopt = optim.Adam(ref.parameters(), lr=1e-2)
    run(m, ref, step, eopt, (8, 10), 5)
    run(m, ref, step, eopt, (3, 10), 5, seed=2)
    assert_params_close(m, ref)
    assert step.cache_info()["entries"] == 2


def test_fused_step_with_batchnorm_momentum_none():
    def build():
        return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4, momentum=None), nn.ReLU(),
                             nn.Flatten(), nn.Linear(4 * 8 * 8, 5))

    m, ref = twins(build)
    step = lucid.compile.fused_step(m, F.cross_entropy, optim.SGD(m.parameters(), lr=0.05, momentum=0.9), strict=True)
    run(m, ref, step, optim.SGD(ref.parameters(), lr=0.05, momentum=0.9), (4, 2, 8, 8), 30)
    assert_params_close(m, ref)
    for k, v in m.state_dict().items():
        assert rel_err(v.double(), ref.state_dict()[k].double()) <= 1e-4, k
    assert step.cache_info()["eager_only"] == {}


# ---- NaN and empty batches: as eager ------------------------------------------------------------

def _special_batches_match_eager(build, train, opt_name, batches, make_step=False):
    """Runs the same batches (x, y) through a compiled step and the eager step on twin models:
    the same losses (NaN where eager's is NaN), parameters with eager's NaN positions and values
    (1e-4 relative elsewhere), or the same exception where eager raises."""
    m, ref = twins(build)
    m.train(train), ref.train(train)
    opt, eopt = OPTIMIZERS[opt_name](m.parameters()), OPTIMIZERS[opt_name](ref.parameters())
    if make_step:
        compiled = lucid.compile.make_step(m, F.cross_entropy, strict=True)

        def step(x, y):
            opt.zero_grad()
            loss = compiled(x, y)
            loss.backward()
            opt.step()
            return loss
    else:
        step = lucid.compile.fused_step(m, F.cross_entropy, opt, strict=True)
    for i, (x, y) in enumerate(batches):
        try:
            want = eager_step(ref, eopt, x, y).item()
        except Exception as e:  # noqa: BLE001 - the compiled step must raise the same
            with pytest.raises(type(e)):
                step(x, y)
            continue
        got = step(x, y).item()
        assert np.isnan(got) == np.isnan(want) and (np.isnan(want) or abs(got - want) <= 1e-4 * max(1.0, abs(want))), \
            f"step {i}: loss {got} vs eager {want}"
        for (n, p), q in zip(m.named_parameters(), ref.parameters()):
            a, b = p.detach().numpy(), q.detach().numpy()
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"step {i}: NaN positions of {n}")
            fin = ~np.isnan(b)
            np.testing.assert_allclose(a[fin], b[fin], rtol=1e-4, atol=1e-6, err_msg=f"step {i}: {n}")
    return step


SPECIAL_MODELS = [pytest.param("mlp", True, id="mlp"), pytest.param("cnn_bn", True, id="cnn_bn-train"),
                  pytest.param("cnn_bn", False, id="cnn_bn-eval")]


def _batches(shape, n, rng, nan_at=None, empty_at=()):
    out = []
    for i in range(n):
        batch = 0 if i in empty_at else shape[0]
        x = rng.standard_normal((batch, *shape[1:])).astype(np.float32)
        if i == nan_at:
            x.flat[rng.integers(x.size)] = np.nan
        out.append((lucid.tensor(x), lucid.tensor(rng.integers(0, 5, batch))))
    return out


@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adam"])
@pytest.mark.parametrize("model,train", SPECIAL_MODELS)
def test_one_nan_in_a_batch_gives_eagers_nan_loss_and_parameters(model, train, opt_name):
    # A NaN in the batch at step 4 (the executable is cached by then): the loss is NaN and the
    # parameters become NaN exactly where eager's do. oneDNN's relu post-op turned the NaN into 0
    # in the forward (a finite loss) while the backward still spread it into the parameters.
    build, shape = MODELS[model]
    step = _special_batches_match_eager(build, train, opt_name, _batches(shape, 6, np.random.default_rng(0), nan_at=4))
    assert step.cache_info()["eager_only"] == {}


@pytest.mark.parametrize("make_step", [False, True], ids=["fused_step", "make_step"])
@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adam"])
@pytest.mark.parametrize("model,train", SPECIAL_MODELS)
def test_empty_batches_step_as_eager(model, train, opt_name, make_step):
    # Batches of 0 (three in a row, so the cached executable runs) between ordinary ones: the
    # mean loss over 0 samples is NaN, as eager's, and so is everything it reaches.
    build, shape = MODELS[model]
    _special_batches_match_eager(build, train, opt_name, _batches(shape, 7, np.random.default_rng(1), empty_at=(3, 4, 5)),
                                 make_step)


# ---- memory -----------------------------------------------------------------------------------

def test_memory_counters_follow_allocations():
    gc.collect()
    lucid.reset_peak_memory_stats()
    before = lucid.memory_allocated()
    assert lucid.max_memory_allocated() == before
    t = lucid.empty(1024, 1024)  # 4 MiB: a size class of its own
    assert lucid.memory_allocated() - before == 4 * 2**20
    del t
    assert lucid.memory_allocated() == before
    assert lucid.max_memory_allocated() == before + 4 * 2**20
    lucid.reset_peak_memory_stats()
    assert lucid.max_memory_allocated() == before
    u = lucid.empty(1000, 1000)  # 4,000,000 bytes: rounded up to the 4 MiB class (classes are <= 25% apart)
    assert lucid.memory_allocated() - before == 4 * 2**20
    del u
    wrapped = lucid.from_numpy(np.zeros((1000, 1000), np.float32))  # NumPy's memory: not lucid's
    assert lucid.memory_allocated() == before
    del wrapped


def test_freed_buffers_are_reused_and_empty_cache_frees_them():
    gc.collect()
    lucid.empty_cache()
    a = lucid.empty(300, 1000)
    ptr = a.data_ptr()
    del a
    if os.environ.get("LUCID_CPU_CACHE_MB") == "0":  # recycling off (scripts/sanitize.sh): nothing is kept
        assert lucid.memory_cached() == 0
        return
    assert lucid.memory_cached() >= 1_200_000
    b = lucid.empty(1000, 300)  # the same size class: the same buffer
    assert b.data_ptr() == ptr
    del b
    assert lucid.empty_cache() >= 1_200_000
    assert lucid.memory_cached() == 0


def _step_peak(build, shape, opt_name, fused):
    """Peak bytes lucid holds during one training step, above what it held before the model was
    built: parameters, optimizer state, .grad, activations, temporaries, the executable's arena."""
    gc.collect()
    start = lucid.memory_allocated()
    lucid.manual_seed(0)
    model = build()
    opt = {"SGD": lambda p: optim.SGD(p, lr=0.01, momentum=0.9), "Adam": lambda p: optim.Adam(p, lr=1e-3)}[opt_name](
        model.parameters())
    rng = np.random.default_rng(0)
    x = lucid.tensor(rng.standard_normal(shape).astype(np.float32))
    y = lucid.tensor(rng.integers(0, 10, shape[0]))
    if fused:
        fs = lucid.compile.fused_step(model, F.cross_entropy, opt, strict=True)
        step = lambda: fs(x, y)  # noqa: E731
    else:
        step = lambda: eager_step(model, opt, x, y)  # noqa: E731
    for _ in range(4):  # past the eager first step (state creation) and the compile
        step()
    gc.collect()
    lucid.reset_peak_memory_stats()
    step()
    peak = lucid.max_memory_allocated() - start
    if fused:
        assert fs.cache_info()["hits"] >= 1  # the measured step ran the executable
    return peak


def _wide_mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def _bn_cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


# Known gap: since BatchNorm stopped saving its output (as torch), the eager bn_cnn step peaks at
# 17.9 MB (was 23.4); fused_step peaks at 20.9 MB. Its arena (14.9 MB) is the graph's largest live
# set (conv1 output, relu output, pool indices and two gradients of [64,16,28,28] during the first
# layer's backward); the other ~6 MB are temporaries kernels allocate outside the arena during the
# call, on top of its peak (the conv backward's oneDNN reorders alone take 3.7 MB on conv1, measured
# eagerly), where eager has already freed the activations it no longer needs. Not fully accounted
# for yet; planning the primitives' layouts and scratch into the arena belongs to issue 13
# ("layouts in compiled graphs"). Strict: it fails as soon as fused_step is back under eager.
_BN_CNN_GAP = pytest.mark.xfail(strict=True, reason="fused_step peak 17% above eager on bn_cnn: kernel temporaries "
                                "outside the arena (issue 13: layouts in compiled graphs)")


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("model", ["mlp", pytest.param("bn_cnn", marks=_BN_CNN_GAP)])
def test_fused_step_peak_memory_is_not_above_eager(model, opt_name):
    # The arena holds each activation only until the backward is done with it, the update is
    # written into the parameters and optimizer state in place, and last step's gradients are
    # freed before this step's are made (as zero_grad(set_to_none=True) does in eager).
    build, shape = {"mlp": (_wide_mlp, (256, 784)), "bn_cnn": (_bn_cnn, (64, 1, 28, 28))}[model]
    eager = _step_peak(build, shape, opt_name, fused=False)
    fused = _step_peak(build, shape, opt_name, fused=True)
    assert fused <= 1.05 * eager, f"fused_step peak {fused / 1e6:.2f} MB > eager {eager / 1e6:.2f} MB"


def test_cleared_executables_free_their_arenas():
    gc.collect()
    lucid.manual_seed(0)
    model, x, y = _wide_mlp(), lucid.randn(256, 784), lucid.randint(0, 10, (256,))
    fs = lucid.compile.fused_step(model, F.cross_entropy, optim.SGD(model.parameters(), lr=0.01), strict=True)
    for _ in range(4):
        fs(x, y)
    gc.collect()
    arena = fs._cm._executable(fs._cm._keys()[0]).arena_bytes
    assert arena > 1_000_000
    held = lucid.memory_allocated()
    fs.clear_cache()  # the process-wide cache keeps the executable (for a later identical graph), not its arena
    gc.collect()
    assert held - lucid.memory_allocated() >= arena
