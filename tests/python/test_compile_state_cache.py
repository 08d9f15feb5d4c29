"""The CPU executor's state cache: values a compiled graph computes from bound state only (eval
BatchNorm folded into the conv's weight and bias, a weight's transpose times a scale) are kept
across calls and recomputed exactly when a bound tensor they read changed: an in-place update
(version bump), load_state_dict, a rebinding (`.data = `), a NumPy view written (while it lives
the cache is never trusted; after it dies its end is seen). Compiled must equal eager after every
kind of change, and the fill counter shows the cache is neither stale nor recomputed needlessly."""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
from harness import assert_close


def conv_bn():
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
    with lucid.no_grad():
        m[1].running_mean.copy_(lucid.randn(8) * 0.1)
        m[1].running_var.copy_(lucid.rand(8) + 0.5)
        m[1].weight.copy_(lucid.randn(8))
    return m.eval()


def entry(f):
    (key,) = f._keys()
    return f._executable(key)


def check(f, m, x):
    with lucid.no_grad():
        assert_close(f(x), m(x), 1e-5, 1e-5)


def test_bn_folded_weights_are_planned_cached_and_computed_once():
    m, x = conv_bn(), lucid.randn(2, 3, 9, 9)
    f = lucid.compile(m)
    for _ in range(4):
        check(f, m, x)
    exe = entry(f)
    assert "cached" in exe.memory_plan, exe.memory_plan
    assert exe.state_cache_fills == 1  # the trace ran eagerly; the cached calls computed it once


@pytest.mark.parametrize("change", ["running_mean_inplace", "weight_inplace", "bias_inplace", "load_state_dict",
                                    "rebind_data", "bn_eps_unchanged_state"])
def test_a_changed_bound_tensor_recomputes_the_cache(change):
    m, x = conv_bn(), lucid.randn(1, 3, 7, 7)
    f = lucid.compile(m)
    for _ in range(3):
        check(f, m, x)
    exe = entry(f)
    fills = exe.state_cache_fills
    with lucid.no_grad():
        if change == "running_mean_inplace":
            m[1].running_mean.add_(1.5)
        elif change == "weight_inplace":
            m[0].weight.mul_(-2)
        elif change == "bias_inplace":
            m[0].bias[3] = 7.0
        elif change == "load_state_dict":
            sd = {k: v * 0.5 for k, v in m.state_dict().items() if v.dtype == lucid.float32}
            m.load_state_dict(sd, strict=False)
        elif change == "rebind_data":
            m[0].weight.data = lucid.randn(8, 3, 3, 3)
    check(f, m, x)
    check(f, m, x)
    expect = fills if change == "bn_eps_unchanged_state" else fills + 1
    assert entry(f).state_cache_fills == expect


def test_numpy_writes_are_seen_while_the_view_lives_and_after_it_died():
    m, x = conv_bn(), lucid.randn(1, 3, 6, 6)
    f = lucid.compile(m)
    for _ in range(3):
        check(f, m, x)
    w = m[0].weight.detach().numpy()  # writes through it bump no version
    w[0] = 3.0
    check(f, m, x)
    w[1] = -3.0
    check(f, m, x)  # still alive: recomputed every call
    fills = entry(f).state_cache_fills
    w[2] = 5.0
    del w  # the last write happened just before the view died
    check(f, m, x)
    check(f, m, x)
    assert entry(f).state_cache_fills == fills + 1  # trusted again after the one recompute


def test_wrapped_numpy_state_is_never_trusted():
    a = np.random.default_rng(0).standard_normal((5, 5)).astype(np.float32)
    w = lucid.from_numpy(a)  # shares a's memory: writes to a bump nothing

    def fn(x):
        return x @ (w.t() * 2.0).tanh()

    f = lucid.compile(fn)
    x = lucid.randn(3, 5)
    for _ in range(3):
        assert_close(f(x), fn(x), 1e-6, 1e-6)
    a[:] = 1.0
    assert_close(f(x), fn(x), 1e-6, 1e-6)


def test_graph_outputs_computed_from_state_are_fresh_tensors():
    # A state-only value the caller gets back must not alias the cache: writing to one call's
    # output must not change the next call's.
    w = lucid.randn(4)

    def fn(x):
        return (w * 2.0).exp(), x + (w * 3.0).exp()

    f = lucid.compile(fn)
    x = lucid.randn(4)
    a, _ = f(x)
    a, _ = f(x)
    a.add_(100.0)
    b, y = f(x)
    assert_close(b, (w * 2.0).exp(), 1e-6, 1e-6)
    assert_close(y, fn(x)[1], 1e-6, 1e-6)


def test_training_step_reads_the_updated_weights_every_step():
    # A compiled training step assigns the parameters each call: anything cached from them must
    # be recomputed each call (and the compiled steps equal eager's).
    def model():
        lucid.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))

    me, mc = model(), model()
    oe = lucid.optim.SGD(me.parameters(), lr=0.1)
    oc = lucid.optim.SGD(mc.parameters(), lr=0.1)
    step = lucid.compile.fused_step(mc, lambda out, y: ((out - y) ** 2).mean(), oc)
    x, y = lucid.randn(8, 4), lucid.randn(8, 1)
    for _ in range(4):
        oe.zero_grad()
        loss = ((me(x) - y) ** 2).mean()
        loss.backward()
        oe.step()
        lc = step(x, y)
        assert_close(lc, loss, 1e-5, 1e-5)
    for pe, pc in zip(me.parameters(), mc.parameters()):
        assert_close(pc, pe, 1e-5, 1e-5)


def test_eval_model_whose_weights_train_eagerly_between_calls():
    # Eval calls of a compiled model interleaved with eager optimizer steps on the same weights.
    m = conv_bn()
    f = lucid.compile(m)
    opt = lucid.optim.SGD(m.parameters(), lr=0.05)
    x = lucid.randn(2, 3, 6, 6)
    for _ in range(3):
        check(f, m, x)
        m.train()
        opt.zero_grad()
        m(x).square().mean().backward()
        opt.step()
        m.eval()
    check(f, m, x)


def test_state_cache_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("LUCID_COMPILE_DISABLE", "state_cache")
    lucid._C._clear_executable_cache()
    m, x = conv_bn(), lucid.randn(1, 3, 5, 5)
    f = lucid.compile(m)
    for _ in range(3):
        check(f, m, x)
    assert "cached" not in entry(f).memory_plan
