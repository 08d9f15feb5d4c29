"""fused_step: forward + loss + backward + clipping + optimizer update as one executable. Each
run is compared with the same steps run eagerly on a twin model (same weights, batches, seeds):
parameters within 1e-4 relative after 100 steps, .grad equal to the step's gradient."""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim
from test_compile_optim import MODELS, OPTIMIZERS, assert_params_close, rel_err, twins

FUSED_OPTIMIZERS = [n for n in OPTIMIZERS if n != "sgd_nesterov_max"]


def eager_step(model, opt, x, y, max_grad_norm=None):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    if max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    opt.step()
    return loss


def run(m, ref, step, eopt, shape, steps, max_grad_norm=None, scheds=(None, None), seed=1):
    rng = np.random.default_rng(seed)
    for i in range(steps):
        x = lucid.tensor(rng.standard_normal(shape).astype(np.float32))
        y = lucid.tensor(rng.integers(0, 5, shape[0]))
        lucid.manual_seed(1000 + i)
        loss = step(x, y)
        lucid.manual_seed(1000 + i)
        ref_loss = eager_step(ref, eopt, x, y, max_grad_norm)
        assert abs(loss.item() - ref_loss.item()) <= 1e-4 * max(1.0, abs(ref_loss.item()))
        for s in scheds:
            if s is not None:
                s.step()


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("name", FUSED_OPTIMIZERS)
def test_fused_step_matches_eager_for_100_steps(name, model):
    build, shape = MODELS[model]
    m, ref = twins(build)
    step = lucid.compile.fused_step(m, F.cross_entropy, OPTIMIZERS[name](m.parameters()), strict=True)
    run(m, ref, step, OPTIMIZERS[name](ref.parameters()), shape, 100)
    assert_params_close(m, ref)
    for p, q in zip(m.parameters(), ref.parameters()):  # .grad holds this step's gradient
        assert rel_err(p.grad, q.grad) <= 1e-3
    for k, v in m.state_dict().items():  # BatchNorm running stats and counters
        assert rel_err(v.double(), ref.state_dict()[k].double()) <= 1e-4, k
    info = step.cache_info()
    assert info["eager_only"] == {} and info["entries"] == 1


def test_fused_step_with_scheduler_clipping_and_dropout():
    def build():
        return nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Dropout(0.3), nn.Linear(24, 5))

    m, ref = twins(build)
    copt, eopt = optim.AdamW(m.parameters(), lr=1e-2), optim.AdamW(ref.parameters(), lr=1e-2)
    step = lucid.compile.fused_step(m, F.cross_entropy, copt, max_grad_norm=0.5, strict=True)
    scheds = (optim.lr_scheduler.OneCycleLR(copt, max_lr=0.05, total_steps=60),
              optim.lr_scheduler.OneCycleLR(eopt, max_lr=0.05, total_steps=60))
    run(m, ref, step, eopt, (8, 10), 50, max_grad_norm=0.5, scheds=scheds)
    assert_params_close(m, ref)
    assert step.cache_info()["entries"] == 1


def test_dropout_masks_are_fresh_each_call():
    lucid.manual_seed(0)
    m = nn.Sequential(nn.Linear(10, 64), nn.Dropout(0.5), nn.Linear(64, 5))
    step = lucid.compile.fused_step(m, F.cross_entropy, optim.SGD(m.parameters(), lr=0.0))
    x, y = lucid.randn(4, 10), lucid.randint(0, 5, (4,))
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
