"""CUDA graphs of programs with per-call host scalars (backends/cuda/compile/executor.cpp): hyper-
parameters fed as CPU 0-d tensors, an optimizer's step counter, and the CPU ops computing over
only such values (bias corrections, step sizes) run on the host before each replay, and the
values the graph's kernels read are written into the instance's device words per call.

What is checked, for every program: each call of the replayed executable equals the same program
run without a graph (LUCID_CUDA_GRAPHS=0, a fresh executable) bit for bit, and eager lucid where
the kernels are the same; graph_replays counts the calls (the trace runs eagerly, the warm-up
plainly, then every call replays, the capture's included) and graph_fallback is empty; a value
changed per call (a scheduler's learning rate) takes effect at the next replay, with one cache
entry (no recompile) and no recapture. Paths: a generated fused kernel reading a host scalar
from its device word (its host-pointer mask), the eager elementwise kernels doing so
(KernelInput::at, LUCID_CUDA_FUSED=0), training steps (fused_step with Adam and a cosine
schedule, with SGD momentum through BatchNorm, make_step + compile_optimizer) with their
gradients, parameters, optimizer state and running statistics compared, and the recorded reason
of a program whose host instruction reads a device value.
"""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim
from devices import requires_cuda

pytestmark = requires_cuda


def exe_of(cm):
    """The executable of a CompiledModule's latest compiled entry."""
    keys = [k for k in cm._keys() if k in cm._info and cm._info[k]["reason"] is None]
    return cm._executable(max(keys, key=lambda k: cm._info[k]["order"]))


def host(t):
    return t.detach().cpu().numpy()


def fresh(monkeypatch, graphs=True, fused=True):
    """A new process-wide executable for the next compile, with graphs and fused kernels as asked."""
    lucid._C._clear_executable_cache()
    for var, on in (("LUCID_CUDA_GRAPHS", graphs), ("LUCID_CUDA_FUSED", fused)):
        if on:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, "0")


def dense(shape, seed):
    rng = np.random.default_rng(seed)
    return lucid.tensor(rng.standard_normal(shape).astype(np.float32)).to("cuda")


@pytest.mark.parametrize("fused", [True, False], ids=["fused_kernel", "eager_kernels"])
def test_a_host_scalar_changing_per_call_is_read_at_every_replay(monkeypatch, fused):
    # s is a CPU 0-d float64 input (an optimizer's hyper-parameter); (1 - s) ** 2 and s / 3 run on
    # the host before each replay, the kernels read all three from the graph's device words.
    def fn(a, s):
        return a * s + (1 - s) ** 2 - (a * a) * (s / 3)

    x = dense((37, 19), 0)
    values = [0.5, 0.25, -1.5, 3.0, 1e-3, 7.25, 0.5]
    fresh(monkeypatch, fused=fused)
    cf = lucid.compile(fn, strict=True)
    got = [host(cf(x, lucid.tensor(v, dtype=lucid.float64))) for v in values]
    exe = exe_of(cf)
    assert exe.graph_fallback == "" and exe.graph_replays == len(values) - 2, exe.graph_fallback
    assert (exe.fused_kernels["kernels"] > 0) == fused, exe.fused_kernels
    fresh(monkeypatch, graphs=False, fused=fused)
    plain = lucid.compile(fn, strict=True)
    want = [host(plain(x, lucid.tensor(v, dtype=lucid.float64))) for v in values]
    assert exe_of(plain).graph_replays == 0
    for k, v in enumerate(values):
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"call {k}")
        np.testing.assert_array_equal(got[k], host(fn(x, lucid.tensor(v, dtype=lucid.float64))), err_msg=f"call {k}")
    assert not np.array_equal(got[0], got[1])


def test_a_host_instruction_reading_a_device_value_records_why(monkeypatch):
    def fn(a, s):
        return a * (s + a.sum().cpu())  # the device sum copied to the host, then host math

    fresh(monkeypatch)
    x = dense((8, 3), 1)
    cf = lucid.compile(fn)
    for v in (0.5, 1.5, 2.5, 3.5):
        s = lucid.tensor(v, dtype=lucid.float64)
        np.testing.assert_array_equal(host(cf(x, s)), host(fn(x, s)))
    exe = exe_of(cf)
    assert exe.graph_replays == 0
    assert "device value" in exe.graph_fallback, exe.graph_fallback


def mlp():
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 6))


def cnn_bn():
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 6 * 6, 6))


def batches(shape, n, seed=3, classes=False):
    """n (input, target) pairs: MSE targets of 6 values, or class indices of 6 classes."""
    rng = np.random.default_rng(seed)

    def target():
        if classes:
            return lucid.tensor(rng.integers(0, 6, shape[0])).to("cuda")
        return lucid.tensor(rng.standard_normal((shape[0], 6)).astype(np.float32)).to("cuda")

    return [(lucid.tensor(rng.standard_normal(shape).astype(np.float32)).to("cuda"), target()) for _ in range(n)]


def run_fused_step(monkeypatch, build, make_opt, shape, graphs, steps=12, loss=F.mse_loss):
    """`steps` fused_step calls with a cosine schedule; the model, optimizer, losses and the step's
    executable."""
    fresh(monkeypatch, graphs=graphs)
    lucid.manual_seed(0)
    model = build().to("cuda")
    opt = make_opt(model.parameters())
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    step = lucid.compile.fused_step(model, loss, opt, strict=True)
    losses = []
    for x, y in batches(shape, steps, classes=loss is F.cross_entropy):
        losses.append(host(step(x, y)))
        sched.step()
    assert step.cache_info()["entries"] == 1, step.cache_info()
    return model, opt, losses, exe_of(step._cm)


def assert_same_training(a, b):
    (ma, oa, la, _), (mb, ob, lb, _) = a, b
    np.testing.assert_array_equal(np.array(la), np.array(lb))
    for (n, p), q in zip(ma.named_parameters(), mb.parameters()):
        np.testing.assert_array_equal(host(p), host(q), err_msg=n)
        np.testing.assert_array_equal(host(p.grad), host(q.grad), err_msg=f"{n}.grad")
        for key, v in oa.state[p].items():
            w = ob.state[q][key]
            np.testing.assert_array_equal(np.asarray(host(v)), np.asarray(host(w)), err_msg=f"{n} {key}")
    for (n, v), w in zip(ma.state_dict().items(), mb.state_dict().values()):
        np.testing.assert_array_equal(host(v), host(w), err_msg=n)


@pytest.mark.parametrize("case", ["mlp_adam", "mlp_adam_cross_entropy", "mlp_adamw_amsgrad", "bn_sgd_momentum"])
def test_fused_step_replays_a_graph_equal_to_the_plain_program(monkeypatch, case):
    # cross_entropy: its deferred class-target check is replayed too (test_cuda_graphs.py)
    build, shape, make_opt, loss = {
        "mlp_adam": (mlp, (16, 20), lambda p: optim.Adam(p, lr=1e-2, weight_decay=1e-3), F.mse_loss),
        "mlp_adam_cross_entropy": (mlp, (16, 20), lambda p: optim.Adam(p, lr=1e-2), F.cross_entropy),
        "mlp_adamw_amsgrad": (mlp, (16, 20), lambda p: optim.AdamW(p, lr=1e-2, amsgrad=True), F.mse_loss),
        "bn_sgd_momentum": (cnn_bn, (8, 3, 6, 6), lambda p: optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3),
                            F.mse_loss),
    }[case]
    graph = run_fused_step(monkeypatch, build, make_opt, shape, graphs=True, loss=loss)
    plain = run_fused_step(monkeypatch, build, make_opt, shape, graphs=False, loss=loss)
    exe = graph[3]
    assert exe.graph_fallback == "", exe.graph_fallback
    assert exe.graph_replays >= 6, exe.graph_replays  # the first steps run eagerly, trace and warm up
    assert plain[3].graph_replays == 0
    assert_same_training(graph, plain)
    assert graph[1].param_groups[0]["lr"] != 1e-2 and graph[1].param_groups[0]["lr"] == plain[1].param_groups[0]["lr"]


def test_fused_step_graph_matches_eager_training(monkeypatch):
    # The replayed step against the eager step (backward + opt.step()) on a twin: the same formulas,
    # the hyper-parameters float64 0-d tensors rather than Python floats (test_compile_optim's 1e-4).
    model, _, _, exe = run_fused_step(monkeypatch, mlp, lambda p: optim.Adam(p, lr=1e-2), (16, 20), graphs=True)
    assert exe.graph_replays >= 6 and exe.graph_fallback == ""
    lucid.manual_seed(0)
    ref = mlp().to("cuda")
    opt = optim.Adam(ref.parameters(), lr=1e-2)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, 12)
    for x, y in batches((16, 20), 12):
        opt.zero_grad()
        F.mse_loss(ref(x), y).backward()
        opt.step()
        sched.step()
    for (n, p), q in zip(model.named_parameters(), ref.parameters()):
        a, b = host(p).astype(np.float64), host(q).astype(np.float64)
        assert np.abs(a - b).max() <= 1e-4 * max(np.abs(b).max(), 1e-12), n


def test_compile_optimizer_replays_with_a_manual_lr_change(monkeypatch):
    def train(graphs):
        fresh(monkeypatch, graphs=graphs)
        lucid.manual_seed(0)
        model = mlp().to("cuda")
        copt = lucid.compile.compile_optimizer(optim.Adam(model.parameters(), lr=1e-2), strict=True)
        losses = []
        for k, (x, y) in enumerate(batches((16, 20), 10, seed=5)):
            if k == 6:
                copt.param_groups[0]["lr"] = 0.1  # read at the next replay: no recompile, no recapture
            copt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            copt.step()
            losses.append(host(loss))
        assert copt.cache_info()["entries"] == 1
        return model, losses, exe_of(copt._cm)

    m1, l1, exe = train(True)
    m2, l2, _ = train(False)
    assert exe.graph_fallback == "" and exe.graph_replays >= 4, (exe.graph_fallback, exe.graph_replays)
    np.testing.assert_array_equal(np.array(l1), np.array(l2))
    for (n, p), q in zip(m1.named_parameters(), m2.parameters()):
        np.testing.assert_array_equal(host(p), host(q), err_msg=n)
