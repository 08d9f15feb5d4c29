"""CUDA-graph replay of compiled executables (backends/cuda/compile/executor.cpp): a frame's first
call runs the instruction list, its second captures it, later calls replay the graph. Every result
is compared with lucid eager on the same GPU (the same kernels run, so equal bit for bit), and the
executable's counters say whether calls were replays (graph_replays) or why they were not
(graph_fallback). What is checked: outputs are fresh per call (never overwritten by the next
replay), bound state is read at every replay (in-place updates seen; a replaced parameter
captures again), BatchNorm's running statistics are written per replay, random ops draw eager's
fresh numbers at every replay, threads and a non-default stream, a loss's deferred target check
replayed (a bad target raises at the next read), and each recorded fallback: a kernel that talks
to the host during capture (an index check), LUCID_CUDA_GRAPHS=0. Programs with per-call host scalars (training steps) are
test_cuda_graph_scalars.py's.
"""
import threading

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from devices import requires_cuda

pytestmark = requires_cuda


# Executables are shared by every compiled call whose graph hashes the same (the process-wide
# executable cache), so each test that counts replays compiles a shape of its own.


def exe_of(cm):
    (key,) = cm._keys()
    return cm._executable(key)


def host(t):
    return t.detach().cpu().numpy()


def mlp(seed=0):
    lucid.manual_seed(seed)
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to("cuda")


def inputs(n, shape=(64, 784), seed=0):
    rng = np.random.default_rng(seed)
    return [lucid.tensor(rng.standard_normal(shape).astype(np.float32)).to("cuda") for _ in range(n)]


def test_replays_equal_eager_and_outputs_are_fresh_per_call():
    m = mlp()
    cm = lucid.compile(m, strict=True)
    xs = inputs(8)
    with lucid.no_grad():
        outs = [cm(x) for x in xs]  # trace, warm-up, capture + replay, replays
        want = [host(m(x)) for x in xs]
    for k, (o, w) in enumerate(zip(outs, want)):  # every earlier output kept its own values
        np.testing.assert_array_equal(host(o), w, err_msg=f"call {k}")
    exe = exe_of(cm)
    assert exe.graph_fallback == ""
    assert exe.graph_replays == len(xs) - 2  # the trace ran eagerly and the warm-up without a graph


def test_bound_state_is_read_at_every_replay():
    m, ref = mlp(0), mlp(1)
    cm = lucid.compile(m, strict=True)
    (x,) = inputs(1, (16, 784))
    with lucid.no_grad():
        for _ in range(3):
            cm(x)
        m.load_state_dict(ref.state_dict())  # copied in place: same addresses, new values
        np.testing.assert_array_equal(host(cm(x)), host(ref(x)))
        m[0].weight.mul_(2.0)
        ref[0].weight.mul_(2.0)
        np.testing.assert_array_equal(host(cm(x)), host(ref(x)))
        before = exe_of(cm).graph_replays
        m[2].weight = nn.Parameter(ref[2].weight.detach().clone())  # another tensor: captured again
        np.testing.assert_array_equal(host(cm(x)), host(ref(x)))
        np.testing.assert_array_equal(host(cm(x)), host(ref(x)))
    assert exe_of(cm).graph_replays > before  # replays again after capturing with the new address
    assert exe_of(cm).graph_fallback == ""


def test_batchnorm_running_stats_are_written_at_every_replay():
    def build():
        lucid.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()).to("cuda")

    m, ref = build(), build()
    cm = lucid.compile(m, strict=True)
    xs = inputs(6, (4, 3, 8, 8), seed=1)
    with lucid.no_grad():
        for x in xs:
            np.testing.assert_array_equal(host(cm(x)), host(ref(x)))
    for (k, v), w in zip(m.state_dict().items(), ref.state_dict().values()):
        np.testing.assert_array_equal(host(v), host(w), err_msg=k)
    assert exe_of(cm).graph_replays == len(xs) - 2


def test_threads_each_replay_their_own_instance():
    m = mlp()
    cm = lucid.compile(m)
    xs = inputs(4, (32, 784), seed=2)
    with lucid.no_grad():
        want = [host(m(x)) for x in xs]
        cm(xs[0])
    errors = []

    def work(i):
        try:
            with lucid.no_grad():
                for _ in range(200):
                    got = host(cm(xs[i]))
                    if not np.array_equal(got, want[i]):
                        errors.append(i)
                        return
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    assert exe_of(cm).graph_replays > 0


def test_replay_on_a_non_default_stream():
    m = mlp()
    cm = lucid.compile(m, strict=True)
    xs = inputs(5, (48, 784), seed=3)
    s = lucid.cuda.Stream()
    with lucid.no_grad():
        want = [host(m(x)) for x in xs]
        with lucid.cuda.stream(s):
            outs = [cm(x) for x in xs]
        s.synchronize()
    for o, w in zip(outs, want):
        np.testing.assert_array_equal(host(o), w)
    assert exe_of(cm).graph_replays == len(xs) - 2


def _fallback(fn, make_args, match, calls=4):
    """fn compiled: every call equals eager, none is a replay, and graph_fallback says why."""
    cf = lucid.compile(fn, strict=True)
    for k in range(calls):
        args = make_args(k)
        lucid.manual_seed(k)
        want = fn(*args)
        lucid.manual_seed(k)
        got = cf(*args)
        np.testing.assert_array_equal(host(got), host(want))
    exe = exe_of(cf)
    assert exe.graph_replays == 0
    assert match in exe.graph_fallback, exe.graph_fallback


def test_random_ops_draw_fresh_numbers_at_every_replay_equal_to_eager():
    # The Philox offset advances per call: with a captured (not replayed) offset, every replay
    # would repeat the capture's draws and differ from eager's sequence.
    def fn(a):
        return F.dropout(a, 0.5, training=True) + lucid.randn(*a.shape, device=a.device) * 0.1

    cf = lucid.compile(fn, strict=True)
    x = lucid.ones(64, 33, device="cuda")
    lucid.manual_seed(5)
    want = [host(fn(x)) for _ in range(7)]
    lucid.manual_seed(5)
    got = [host(cf(x)) for _ in range(7)]
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"call {k}")
    assert not np.array_equal(got[5], got[6])
    exe = exe_of(cf)
    assert exe.graph_fallback == "" and exe.graph_replays == 5


def test_an_index_check_ends_the_capture_and_is_the_reason():
    x = lucid.arange(20.0, device="cuda").reshape(4, 5)
    idx = lucid.tensor([3, 0, 2]).to("cuda")
    _fallback(lambda a, i: a[i] * 2, lambda k: (x + k, idx), "capturing a CUDA graph failed")


def test_a_deferred_target_check_is_replayed_and_a_bad_target_raises_at_the_next_read():
    # cross_entropy's class-target check is captured with its copy to the host; each replay queues
    # it as eager queues its deferred check, so a bad target raises eager's IndexError at the next
    # host read, and the next replay's check starts clean.
    rng = np.random.default_rng(4)
    logits = lucid.tensor(rng.standard_normal((8, 5)).astype(np.float32)).to("cuda")
    t = rng.integers(0, 5, 8)
    target = lucid.tensor(t).to("cuda")
    bad = lucid.tensor(np.where(np.arange(8) == 3, 7, t)).to("cuda")

    def fn(a, y):
        return F.cross_entropy(a, y)

    cf = lucid.compile(fn, strict=True)
    for k in range(5):
        np.testing.assert_array_equal(host(cf(logits * (k + 1), target)), host(fn(logits * (k + 1), target)))
    exe = exe_of(cf)
    assert exe.graph_fallback == "" and exe.graph_replays == 3, exe.graph_fallback
    with pytest.raises(IndexError):
        fn(logits, bad).item()
    with pytest.raises(IndexError):
        cf(logits, bad).item()
    assert exe.graph_replays == 4  # the bad call was a replay
    np.testing.assert_array_equal(host(cf(logits, target)), host(fn(logits, target)))
    assert exe.graph_replays == 5


def test_graphs_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("LUCID_CUDA_GRAPHS", "0")
    x = lucid.ones(3, 11, device="cuda")  # a shape no other test compiles: a new executable
    _fallback(lambda a: (a * 3).relu(), lambda k: (x + k,), "LUCID_CUDA_GRAPHS=0")
