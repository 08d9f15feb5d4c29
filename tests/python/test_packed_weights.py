"""The packed-weights cache (csrc/lucid/backends/cpu/packed_weights.h): small-M products with a 2-D
weight, and convolutions, read a copy of the weight packed once in oneDNN's preferred layout. These tests
check that the packed path is taken (stats), that it computes what PyTorch computes, and that it
never serves stale data: in-place writes, a freed weight whose address is reused, other views
(offset / strides) of one storage, NumPy views writing the buffer, compiled graphs, the byte bound;
and that the packed copies die with their weight, show in memory_cached() and go with empty_cache().
"""
import gc

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lucid
import lucid.nn as nn
from lucid import _C
from harness import needs_plain_allocator

RNG = np.random.default_rng(7)
# GEMM weights are packed on AVX-512 CPUs only (dnnl_matmul.cpp, run_dnnl): on AVX2 oneDNN's plain-B
# kernel is the faster one and its packed-B kernel sums in another order, so a weight's first
# (unpacked) call and its later ones would differ in the last bit. Convolution weights pack everywhere.
MATMUL_PACKS = "avx512f" in open("/proc/cpuinfo").read()
needs_matmul_packing = pytest.mark.skipif(not MATMUL_PACKS, reason="GEMM weight packing runs on AVX-512 CPUs only")


def arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(lo, ref, tol=2e-4):
    ref = ref.detach().numpy() if isinstance(ref, torch.Tensor) else ref
    np.testing.assert_allclose(lo.detach().numpy(), ref, rtol=tol, atol=tol)


def stats():
    return _C._weight_pack_stats()


@pytest.fixture(autouse=True)
def fresh_cache():
    _C._weight_pack_clear()
    limit = _C._weight_pack_set_limit(64 << 20)  # on, whatever LUCID_WEIGHT_PACK_MB says
    yield
    _C._weight_pack_set_limit(limit)
    _C._weight_pack_clear()


def run_thrice(fn):
    """First call records the weight, second packs it, third reads the packed copy."""
    outs = [fn() for _ in range(3)]
    return outs


# ------------------------------------------------------------------ the packed path is right
CASES = {
    "linear": (lambda x, w, b, r: lucid.linear(x, w),
               lambda x, w, b, r: F.linear(x, w)),
    "linear_bias": (lambda x, w, b, r: lucid.linear(x, w, b),
                    lambda x, w, b, r: F.linear(x, w, b)),
    "fused_relu_res": (lambda x, w, b, r: _C._linear_fused(x, w, b, r, activation="relu"),
                       lambda x, w, b, r: F.relu(F.linear(x, w, b)) + r),
    "fused_res_gelu": (lambda x, w, b, r: _C._linear_fused(x, w, b, r, activation="gelu", residual_first=True),
                       lambda x, w, b, r: F.gelu(F.linear(x, w, b) + r)),
    "fused_gelu_tanh": (lambda x, w, b, r: _C._linear_fused(x, w, b, None, activation="gelu_tanh"),
                        lambda x, w, b, r: F.gelu(F.linear(x, w, b), approximate="tanh")),
    "addmm": (lambda x, w, b, r: lucid.addmm(r, x, w.T, beta=0.5, alpha=2.0),
              lambda x, w, b, r: torch.addmm(r, x, w.T, beta=0.5, alpha=2.0)),
    "matmul_wT": (lambda x, w, b, r: x @ w.T, lambda x, w, b, r: x @ w.T),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("m,k,n", [(1, 784, 256), (7, 48, 17), (64, 512, 512), (128, 40, 24)])
def test_packed_path_matches_torch(case, m, k, n):
    lf, tf = CASES[case]
    x, w, b, r = arr(m, k), arr(n, k), arr(n), arr(m, n)
    lt = [lucid.tensor(a) for a in (x, w, b, r)]
    tt = [torch.from_numpy(a) for a in (x, w, b, r)]
    ref = tf(*tt)
    outs = run_thrice(lambda: lf(*lt))
    for o in outs:
        close(o, ref)
    for o in outs[1:]:  # packed or not, every call gives the first call's bits
        np.testing.assert_array_equal(o.numpy(), outs[0].numpy())
    st = stats()
    assert (st["packs"], st["hits"]) == ((1, 1) if MATMUL_PACKS else (0, 0)), st


@pytest.mark.parametrize("m,k,n", [(1, 784, 256), (1, 768, 3072), (5, 300, 70)])
def test_repeated_gemm_calls_give_the_same_bits(m, k, n):
    # An eager Linear's first call (weight not yet packed) and its later ones (packed where
    # packing runs) must agree bit for bit: a compiled model saved and loaded meets its weights
    # fresh while the in-process one has them packed.
    lin = nn.Linear(k, n)
    x = lucid.tensor(arr(m, k))
    with lucid.no_grad():
        outs = [lin(x).numpy() for _ in range(4)]
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


@needs_matmul_packing
def test_matmul_plain_weight_and_batched_input_fold():
    # x @ w with w [K, N] row-major, and a 3-D input folded into rows (2*3 = 6 rows).
    x, w = arr(2, 3, 50), arr(50, 30)
    lx, lw = lucid.tensor(x), lucid.tensor(w)
    ref = torch.from_numpy(x) @ torch.from_numpy(w)
    for o in run_thrice(lambda: lx @ lw):
        close(o, ref)
    assert stats()["packs"] == 1 and stats()["hits"] == 1


@needs_matmul_packing
def test_bfloat16_packed():
    x, w, b = arr(4, 64), arr(32, 64), arr(32)
    lx, lw, lb = (lucid.tensor(a).bfloat16() for a in (x, w, b))
    ref = F.linear(*(torch.from_numpy(a).bfloat16() for a in (x, w, b))).float()
    for o in run_thrice(lambda: lucid.linear(lx, lw, lb)):
        close(o.float(), ref, tol=5e-2)
    assert stats()["packs"] == 1


def test_large_m_and_batched_weight_are_not_packed():
    x, w = lucid.tensor(arr(129, 16)), lucid.tensor(arr(8, 16))
    run_thrice(lambda: lucid.linear(x, w))
    a, bb = lucid.tensor(arr(3, 4, 16)), lucid.tensor(arr(3, 16, 8))
    run_thrice(lambda: a @ bb)
    assert stats()["packs"] == 0 and stats()["entries"] == 0


@needs_matmul_packing
# ------------------------------------------------------------------ never stale
@pytest.mark.parametrize("write", ["add_", "setitem", "copy_", "row_view_mul_", "optimizer", "fill_"])
def test_inplace_write_to_weight_between_calls(write):
    # The expected weight is tracked in torch, never read back from lucid: a NumPy view of the
    # weight would itself drop its packed copies and hide a stale one.
    w0, b0, x0 = arr(48, 64), arr(48), arr(2, 64)
    lin = nn.Linear(64, 48)
    with lucid.no_grad():
        lin.weight.copy_(lucid.tensor(w0))
        lin.bias.copy_(lucid.tensor(b0))
    x = lucid.tensor(x0)
    tw, tb, tx = (torch.from_numpy(a.copy()) for a in (w0, b0, x0))
    run_thrice(lambda: lin(x))
    assert stats()["hits"] == 1
    w = lin.weight
    with lucid.no_grad(), torch.no_grad():
        if write == "add_":
            w.add_(1.0)
            tw.add_(1.0)
        elif write == "setitem":
            w[3, 5] = 100.0
            tw[3, 5] = 100.0
        elif write == "copy_":
            new = arr(48, 64)
            w.copy_(lucid.tensor(new))
            tw.copy_(torch.from_numpy(new))
        elif write == "row_view_mul_":
            w[7].mul_(-3.0)  # through a view: the version lives on the shared storage
            tw[7].mul_(-3.0)
        elif write == "fill_":
            w.fill_(0.25)
            tw.fill_(0.25)
    if write == "optimizer":
        opt = lucid.optim.SGD(lin.parameters(), lr=0.5)
        lin(x).sum().backward()
        opt.step()
        tw.requires_grad_(True)
        tb.requires_grad_(True)
        F.linear(tx, tw, tb).sum().backward()
        with torch.no_grad():
            tw -= 0.5 * tw.grad
            tb -= 0.5 * tb.grad
    ref = F.linear(tx, tw, tb)
    for _ in range(3):  # the first call reads the weight as it is, the second re-packs, the third hits
        close(lin(x), ref)
    assert stats()["packs"] == 2


def test_weight_updated_every_call_is_never_packed():
    lin = nn.Linear(64, 48)
    x = lucid.tensor(arr(4, 64))
    for step in range(5):
        with lucid.no_grad():
            lin.weight.mul_(0.9)
        ref = F.linear(torch.from_numpy(x.numpy()), torch.from_numpy(lin.weight.detach().numpy().copy()),
                       torch.from_numpy(lin.bias.detach().numpy().copy()))
        close(lin(x), ref)
    assert stats()["packs"] == 0


@needs_plain_allocator
def test_freed_weight_whose_address_is_reused():
    x = lucid.tensor(arr(3, 48))
    reused = False
    for attempt in range(20):
        w1 = lucid.tensor(arr(40, 48))
        run_thrice(lambda: lucid.linear(x, w1))
        addr = w1.data_ptr()
        del w1
        gc.collect()
        w2 = lucid.tensor(arr(40, 48))  # same size: the allocator hands back the freed block
        got = lucid.linear(x, w2)
        close(got, F.linear(torch.from_numpy(x.numpy()), torch.from_numpy(w2.numpy())))
        if w2.data_ptr() == addr:
            reused = True
            break
    assert reused, "the allocator never reused the address; the test did not exercise reuse"


@needs_matmul_packing
def test_views_with_other_offsets_and_strides_of_one_storage():
    base = lucid.tensor(arr(48, 96))
    # packed: other offsets and row strides of one storage; even/odd columns are copied per call
    packed = {"left": base[:, :48], "right": base[:, 48:], "rows": base[::2, :48], "rows_odd": base[1::2, 48:]}
    views = dict(packed, even=base[:, ::2], odd=base[:, 1::2])
    x = lucid.tensor(arr(5, 48))
    tx = torch.from_numpy(x.numpy())
    refs = {name: F.linear(tx, torch.from_numpy(np.ascontiguousarray(v.numpy()))) for name, v in views.items()}
    for rep in range(3):  # interleaved, so each view is packed and then served among the others
        for name, v in views.items():
            close(lucid.linear(x, v), refs[name])
    st = stats()
    assert st["packs"] == len(packed) and st["hits"] == len(packed), st


@needs_matmul_packing
def test_numpy_view_writes_are_seen():
    lin = nn.Linear(64, 48)
    x = lucid.tensor(arr(2, 64))
    run_thrice(lambda: lin(x))
    a = lin.weight.detach().numpy()  # shares the storage; writes through it bump no version
    a[:] = arr(48, 64)
    ref = F.linear(torch.from_numpy(x.numpy()), torch.from_numpy(a.copy()), torch.from_numpy(lin.bias.detach().numpy().copy()))
    for _ in range(3):
        close(lin(x), ref)  # while the array lives nothing is packed or served
    a[0, 0] = 50.0
    ref = F.linear(torch.from_numpy(x.numpy()), torch.from_numpy(a.copy()), torch.from_numpy(lin.bias.detach().numpy().copy()))
    close(lin(x), ref)
    del a
    gc.collect()
    before = stats()["packs"]
    run_thrice(lambda: close(lin(x), ref))
    assert stats()["packs"] == before + 1  # packing resumes once the view is gone


def test_from_numpy_weight_is_never_packed():
    a = arr(48, 64)
    w = lucid.from_numpy(a)  # wraps NumPy's buffer
    x = lucid.tensor(arr(3, 64))
    tx = torch.from_numpy(x.numpy())
    run_thrice(lambda: lucid.linear(x, w))
    a *= -2.0
    close(lucid.linear(x, w), F.linear(tx, torch.from_numpy(a.copy())))
    assert stats()["packs"] == 0


@needs_matmul_packing
def test_compiled_linear_weights_and_arena_operands():
    lucid.manual_seed(0)
    m = nn.Sequential(nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 40))
    cm = lucid.compile(m)
    x = lucid.tensor(arr(4, 64))
    with lucid.no_grad():
        for _ in range(3):
            close(cm(x), m(x), 1e-5)
        assert stats()["hits"] > 0
        m[0].weight.mul_(-1.0)
        for _ in range(3):
            close(cm(x), m(x), 1e-5)

    # B computed inside the graph (an arena slot rewritten each call): never packed, never stale
    def f(x, y):
        return x @ (y * 2.0).T

    cf = lucid.compile(f)
    for _ in range(4):
        xv, yv = arr(3, 64), arr(40, 64)
        close(cf(lucid.tensor(xv), lucid.tensor(yv)), torch.from_numpy(xv) @ (torch.from_numpy(yv) * 2.0).T, 1e-5)


@needs_matmul_packing
def test_byte_bound_evicts_and_zero_turns_packing_off():
    x = lucid.tensor(arr(2, 64))
    ws = [lucid.tensor(arr(64, 64)) for _ in range(4)]
    one = 64 * 64 * 4
    _C._weight_pack_set_limit(int(2.5 * one))
    for w in ws:
        run_thrice(lambda: lucid.linear(x, w))
    st = stats()
    assert st["packs"] == 4 and st["packed"] <= 2 and st["bytes"] <= 2.5 * one, st
    for w in ws:  # evicted weights repack correctly
        close(lucid.linear(x, w), F.linear(torch.from_numpy(x.numpy()), torch.from_numpy(w.numpy())))
    _C._weight_pack_set_limit(0)
    _C._weight_pack_clear()
    for w in ws:
        run_thrice(lambda: lucid.linear(x, w))
    assert stats()["packs"] == 0 and stats()["entries"] == 0


@needs_matmul_packing
def test_weights_cycling_past_the_budget_do_not_thrash():
    """Four weights used in turn, every call, with room for two and a half: plain LRU would evict
    and repack each weight on each use; the cache keeps two packed and runs the others as they
    are (a model larger than the budget)."""
    xv, wvs = arr(2, 64), [arr(64, 64) for _ in range(4)]
    x, ws = lucid.tensor(xv), [lucid.tensor(w) for w in wvs]  # no NumPy view of them stays alive
    refs = [F.linear(torch.from_numpy(xv), torch.from_numpy(w)) for w in wvs]
    one = 64 * 64 * 4
    _C._weight_pack_clear()
    _C._weight_pack_set_limit(int(2.5 * one))
    for _ in range(8):
        for w, ref in zip(ws, refs):
            close(lucid.linear(x, w), ref)
    st = stats()
    assert st["packs"] <= 4 and st["packed"] == 2 and st["hits"] >= 2 * 5, st


@needs_matmul_packing
def test_compiled_calls_from_threads_share_packed_weights():
    # Compiled runs release the GIL, so these threads pack and read the cache concurrently.
    import threading

    lucid.manual_seed(1)
    m = nn.Sequential(nn.Linear(64, 96), nn.GELU(), nn.Linear(96, 48))
    cm = lucid.compile(m)
    xs = [lucid.tensor(arr(3, 64)) for _ in range(4)]
    with lucid.no_grad():
        refs = [m(x).numpy() for x in xs]
    errors = []

    def worker(i):
        try:
            with lucid.no_grad():
                for _ in range(30):
                    np.testing.assert_allclose(cm(xs[i]).numpy(), refs[i], rtol=1e-5, atol=1e-5)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert stats()["hits"] > 0


# ------------------------------------------------------------ packed copies and memory accounting
def packed_model():
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 128))
    x = lucid.tensor(arr(4, 256))
    run_thrice(lambda: model(x))
    return model


@needs_matmul_packing
def test_dropping_the_model_frees_its_packed_weights():
    lucid.empty_cache()
    model = packed_model()
    st = stats()
    assert st["packed"] == 2 and st["bytes"] >= (256 * 512 + 512 * 128) * 4, st
    assert lucid.memory_cached() >= st["bytes"]  # the packed copies are reported
    cached_with_model = lucid.memory_cached()
    del model
    gc.collect()
    st = stats()
    assert st["bytes"] == 0 and st["entries"] == 0, st  # freed with the weights, not kept to the budget
    # Freed weights may wait in the buffer free lists; the packed copies are no longer counted.
    lucid.empty_cache()
    assert lucid.memory_cached() == 0 < cached_with_model


@needs_matmul_packing
def test_empty_cache_drops_packed_weights_of_live_models():
    model = packed_model()
    assert stats()["bytes"] > 0
    freed = lucid.empty_cache()
    assert stats()["bytes"] == 0 and freed > 0 and lucid.memory_cached() == 0
    x = lucid.tensor(arr(4, 256))
    ref = model(x)
    close(run_thrice(lambda: model(x))[-1], ref.detach().numpy())  # packs again, same result
    assert stats()["packed"] == 2


# ------------------------------------------------------------------ convolution weights
CONV_CASES = {  # (x shape, conv kwargs): blocked (channels % 16 == 0) and plain layouts, groups, depthwise
    "blocked": ((1, 16, 10, 10), dict(in_channels=16, out_channels=32, kernel_size=3, padding=1)),
    "plain": ((2, 3, 9, 9), dict(in_channels=3, out_channels=8, kernel_size=3, stride=2)),
    "grouped": ((1, 32, 8, 8), dict(in_channels=32, out_channels=32, kernel_size=3, padding=1, groups=4)),
    "depthwise": ((1, 32, 8, 8), dict(in_channels=32, out_channels=32, kernel_size=3, padding=1, groups=32)),
    "pointwise": ((1, 32, 7, 7), dict(in_channels=32, out_channels=64, kernel_size=1)),
}


def torch_conv(conv, x):
    return F.conv2d(torch.from_numpy(x.numpy()), torch.from_numpy(conv.weight.detach().numpy().copy()),
                    torch.from_numpy(conv.bias.detach().numpy().copy()), conv.stride, conv.padding,
                    conv.dilation, conv.groups)


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv_weights_are_packed_and_never_stale(case):
    shape, kw = CONV_CASES[case]
    conv = nn.Conv2d(**kw)
    x = lucid.tensor(arr(*shape))
    ref = torch_conv(conv, x)
    for _ in range(3):
        close(conv(x), ref)
    packed = stats()["packs"]
    with lucid.no_grad():
        conv.weight[0].mul_(-2.0)  # through a view: the storage's version moves
    ref = torch_conv(conv, x)
    for _ in range(3):
        close(conv(x), ref)
    a = conv.weight.detach().numpy()  # NumPy writes bump nothing: never served while it lives
    a[1] = 0.5
    ref = torch_conv(conv, x)
    close(conv(x), ref)
    a[2] = -0.5
    ref = torch_conv(conv, x)
    close(conv(x), ref)
    del a  # its last write came just before it died
    gc.collect()
    for _ in range(3):
        close(conv(x), ref)
    st = stats()
    if case == "blocked":  # oneDNN reorders these weights: packed each time (a pointwise conv is a GEMM)
        assert packed >= 1 and st["packs"] == packed + 2 and st["hits"] >= 3, st


def test_conv_backward_data_reads_the_current_weights():
    conv = nn.Conv2d(16, 16, 3, padding=1)
    x0 = arr(1, 16, 8, 8)
    for step in range(4):
        x = lucid.tensor(x0, requires_grad=True)
        conv(x).sum().backward()
        tx = torch.from_numpy(x0.copy()).requires_grad_(True)
        F.conv2d(tx, torch.from_numpy(conv.weight.detach().numpy().copy()), None, 1, 1).sum().backward()
        close(x.grad, tx.grad)
        with lucid.no_grad():
            conv.weight.mul_(0.5 if step % 2 else 1.0)  # unchanged on even steps: packed, then served
