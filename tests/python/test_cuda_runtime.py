"""lucid.cuda's runtime API against torch.cuda's: streams, events, synchronize, the caching
allocator's statistics, out-of-memory errors, Tensor.record_stream, pinned memory and DLPack
exchange with torch.

The GPU tests skip without a CUDA device; the "no GPU" tests run only where there is none (this
development machine), checking that every call raises a clear RuntimeError instead of crashing.
Values are compared with torch's or with lucid's CPU results, never with lucid's own CUDA output.
"""
import pytest
import numpy as np

import lucid
import lucid.utils.dlpack

torch = pytest.importorskip("torch")

HAS_GPU = lucid.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA device")
TORCH_GPU = HAS_GPU and torch.cuda.is_available()
torch_gpu = pytest.mark.skipif(not TORCH_GPU, reason="no CUDA device for lucid and torch")
MiB = 1 << 20


# --- without a GPU ---------------------------------------------------------------------------

NO_GPU_CALLS = [
    ("synchronize", lambda: lucid.cuda.synchronize()),
    ("Stream", lambda: lucid.cuda.Stream()),
    ("Event", lambda: lucid.cuda.Event()),
    ("current_stream", lambda: lucid.cuda.current_stream()),
    ("default_stream", lambda: lucid.cuda.default_stream()),
    ("memory_allocated", lambda: lucid.cuda.memory_allocated()),
    ("max_memory_allocated", lambda: lucid.cuda.max_memory_allocated(0)),
    ("memory_reserved", lambda: lucid.cuda.memory_reserved("cuda")),
    ("max_memory_reserved", lambda: lucid.cuda.max_memory_reserved("cuda:0")),
    ("reset_peak_memory_stats", lambda: lucid.cuda.reset_peak_memory_stats()),
    ("memory_stats", lambda: lucid.cuda.memory_stats()),
    ("mem_get_info", lambda: lucid.cuda.mem_get_info()),
    ("pin_memory", lambda: lucid.ones(3).pin_memory()),
    ("get_allocator_backend", lambda: lucid.cuda.get_allocator_backend()),
    ("set_per_process_memory_fraction", lambda: lucid.cuda.set_per_process_memory_fraction(0.5)),
]


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a CUDA device")
@pytest.mark.parametrize("name,call", NO_GPU_CALLS, ids=[n for n, _ in NO_GPU_CALLS])
def test_without_a_gpu_each_call_raises_a_clear_runtime_error(name, call):
    with pytest.raises(RuntimeError, match="CUDA") as info:
        call()
    assert "no CUDA" in str(info.value) or "CUDA device" in str(info.value), str(info.value)


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a CUDA device")
def test_without_a_gpu_empty_cache_is_a_noop_and_nothing_is_pinned():
    lucid.cuda.empty_cache()  # torch.cuda.empty_cache() does nothing before CUDA is initialised
    assert lucid.ones(3).is_pinned() is False


def test_out_of_memory_error_is_a_runtime_error_like_torchs():
    assert issubclass(lucid.OutOfMemoryError, RuntimeError)
    assert lucid.cuda.OutOfMemoryError is lucid.OutOfMemoryError
    assert issubclass(torch.OutOfMemoryError, RuntimeError)


def test_cpu_dlpack_round_trip_with_torch_shares_memory():
    x = lucid.arange(12, dtype=lucid.float32).reshape(3, 4)
    t = torch.from_dlpack(x)
    assert t.device.type == "cpu" and t.dtype == torch.float32 and tuple(t.shape) == (3, 4)
    t[0, 0] = 100.0
    assert x[0, 0].item() == 100.0
    src = torch.arange(6, dtype=torch.float64).reshape(2, 3).t()  # strided
    y = lucid.from_dlpack(src)
    assert y.shape == (3, 2) and y.stride() == src.stride()
    src[1, 0] = -5.0
    assert y[1, 0].item() == -5.0
    b = lucid.from_dlpack(torch.ones(4, dtype=torch.bfloat16))
    assert b.dtype == lucid.bfloat16 and b.float().tolist() == [1.0] * 4
    assert lucid.utils.dlpack.from_dlpack(lucid.utils.dlpack.to_dlpack(x)).tolist() == x.tolist()
    assert x.__dlpack_device__() == (1, 0)
    c = torch.from_dlpack(x, copy=True)  # torch asks for a copy: lucid's bytes stay as they are
    c[0, 1] = -1.0
    assert x[0, 1].item() == 1.0 and c[0, 0].item() == 100.0


def test_dlpack_export_of_a_tensor_that_requires_grad_raises_as_torch():
    x = lucid.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        x.__dlpack__()
    assert torch.from_dlpack(x.detach()).tolist() == [1.0, 1.0, 1.0]


def test_a_dlpack_capsule_is_consumed_once():
    cap = torch.utils.dlpack.to_dlpack(torch.ones(2))
    assert lucid.from_dlpack(cap).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="already consumed"):
        lucid.from_dlpack(cap)


# --- devices and errors ------------------------------------------------------------------------

@gpu
def test_a_device_out_of_range_raises_invalid_device_ordinal():
    bad = lucid.cuda.device_count()
    for call in (lambda: lucid.cuda.memory_allocated(bad), lambda: lucid.cuda.synchronize(f"cuda:{bad}"),
                 lambda: lucid.cuda.Stream(device=bad), lambda: lucid.cuda.current_stream(bad),
                 lambda: lucid.cuda.mem_get_info(bad), lambda: lucid.memory_allocated(f"cuda:{bad}")):
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            call()
    with pytest.raises(AssertionError, match="Invalid device id"):
        lucid.cuda.get_device_properties(bad)
    with pytest.raises(ValueError, match="expected a cuda device"):
        lucid.cuda.memory_allocated("cpu")


# --- memory statistics -------------------------------------------------------------------------

@gpu
def test_memory_allocated_follows_tensors_and_empty_cache_releases():
    lucid.cuda.synchronize()
    lucid.cuda.empty_cache()
    base = lucid.cuda.memory_allocated()
    assert lucid.memory_allocated("cuda") == base == lucid.memory_allocated(device="cuda:0")
    x = lucid.zeros(1000, device="cuda")  # 4000 bytes, rounded to 4096
    assert lucid.cuda.memory_allocated() == base + 4096
    assert lucid.cuda.memory_reserved() >= lucid.cuda.memory_allocated()
    stats = lucid.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == base + 4096
    assert stats["reserved_bytes.all.current"] == lucid.cuda.memory_reserved()
    del x
    assert lucid.cuda.memory_allocated() == base
    lucid.cuda.reset_peak_memory_stats()
    assert lucid.cuda.max_memory_allocated() == base
    y = lucid.empty(16 * MiB, dtype=lucid.uint8, device="cuda")
    assert lucid.cuda.max_memory_allocated() >= base + 16 * MiB
    del y
    assert lucid.cuda.max_memory_allocated() >= base + 16 * MiB  # the peak stays
    assert lucid.cuda.max_memory_reserved() >= 16 * MiB
    lucid.cuda.empty_cache()
    assert lucid.cuda.memory_reserved() - lucid.cuda.memory_allocated() < 2 * MiB + 20 * MiB
    free, total = lucid.cuda.mem_get_info()
    tfree, ttotal = torch.cuda.mem_get_info() if TORCH_GPU else (free, total)
    assert total == ttotal and 0 < free <= total


@gpu
def test_out_of_memory_names_the_sizes_and_the_process_stays_usable():
    before = lucid.cuda.memory_stats()["num_ooms"]
    with pytest.raises(lucid.OutOfMemoryError, match="CUDA out of memory") as info:
        lucid.empty(10 << 40, dtype=lucid.uint8, device="cuda")  # 10 TiB
    msg = str(info.value)
    assert str(10 << 40) in msg and "cuda:0" in msg and "free" in msg and "reserved" in msg, msg
    assert isinstance(info.value, RuntimeError)
    assert lucid.cuda.memory_stats()["num_ooms"] == before + 1
    x = lucid.ones(1000, device="cuda")  # a normal allocation and a kernel still work
    assert x.cpu().tolist() == [1.0] * 1000


@gpu
def test_the_cuda_malloc_async_backend_is_chosen_by_the_environment():
    import os
    import subprocess
    import sys
    code = ("import lucid; c = lucid.cuda; assert c.get_allocator_backend() == 'cudaMallocAsync'; "
            "before = c.memory_allocated(); x = lucid.ones(1 << 20, device='cuda'); "
            "assert c.memory_allocated() == before + (4 << 20); "
            "assert x.cpu().sum().item() == float(1 << 20); del x; c.synchronize(); "
            "assert c.memory_allocated() == before; assert c.memory_reserved() >= 4 << 20; c.empty_cache(); "
            "print('ok')")
    env = dict(os.environ, LUCID_CUDA_ALLOCATOR="cudaMallocAsync")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


@gpu
def test_a_memory_fraction_caps_what_the_allocator_reserves():
    lucid.cuda.empty_cache()
    total = lucid.cuda.mem_get_info()[1]
    lucid.cuda.set_per_process_memory_fraction((lucid.cuda.memory_reserved() + 64 * MiB) / total)
    try:
        x = lucid.empty(30 * MiB, dtype=lucid.uint8, device="cuda")
        with pytest.raises(lucid.OutOfMemoryError, match="set_per_process_memory_fraction"):
            lucid.empty(40 * MiB, dtype=lucid.uint8, device="cuda")
        del x
        y = lucid.empty(40 * MiB, dtype=lucid.uint8, device="cuda")  # fits once x's segment is freed
        del y
    finally:
        lucid.cuda.set_per_process_memory_fraction(1.0)
    with pytest.raises(ValueError, match="fraction"):
        lucid.cuda.set_per_process_memory_fraction(2.0)


# --- streams and events ------------------------------------------------------------------------

@gpu
def test_streams_pool_priority_and_current_stream():
    d = lucid.cuda.default_stream()
    assert d.cuda_stream == 0 and lucid.cuda.current_stream() == d
    least, greatest = lucid.cuda.Stream.priority_range()
    assert least >= greatest
    s = lucid.cuda.Stream()
    hi = lucid.cuda.Stream(priority=-1)
    assert s != d and s.cuda_stream != 0 and s.device == lucid.device("cuda:0")
    assert s.priority == least and hi.priority == max(greatest, -1)
    with lucid.cuda.stream(s):
        assert lucid.cuda.current_stream() == s
        with lucid.cuda.stream(None):
            assert lucid.cuda.current_stream() == s
    assert lucid.cuda.current_stream() == d
    lucid.cuda.set_stream(s)
    assert lucid.cuda.current_stream() == s
    lucid.cuda.set_stream(d)
    with s as entered:  # a stream is its own context manager
        assert entered is s and lucid.cuda.current_stream() == s
        with s:
            assert lucid.cuda.current_stream() == s
        assert lucid.cuda.current_stream() == s
    assert lucid.cuda.current_stream() == d
    assert lucid.cuda.get_allocator_backend() == "native"
    assert s.query() in (True, False)
    s.synchronize()
    assert s.query()
    assert len({lucid.cuda.Stream() for _ in range(40)}) == 32  # a pool of 32, handed out round-robin


@gpu
def test_work_on_a_side_stream_ordered_by_wait_stream_matches_the_cpu():
    a = lucid.randn(512, 512)
    b = lucid.randn(512, 512)
    expect = (a * 2 + b).tolist()
    s = lucid.cuda.Stream()
    x = a.cuda()
    y = b.cuda()
    s.wait_stream(lucid.cuda.current_stream())  # x and y were written on the default stream
    with lucid.cuda.stream(s):
        z = x * 2 + y
    lucid.cuda.current_stream().wait_stream(s)
    np.testing.assert_allclose(np.array(z.cpu().tolist()), np.array(expect), rtol=1e-6)


@gpu
def test_events_record_query_wait_and_time():
    e0 = lucid.cuda.Event(enable_timing=True)
    e1 = lucid.cuda.Event(enable_timing=True)
    assert e0.query() and e0.cuda_event == 0  # not recorded yet: complete, no event made
    e0.synchronize()
    e0.record()
    x = lucid.ones(1 << 22, device="cuda")
    for _ in range(20):
        x = x * 1.0001
    e1.record()
    e1.synchronize()
    assert e1.query() and e0.cuda_event != 0
    ms = e0.elapsed_time(e1)
    assert ms >= 0.0
    s = lucid.cuda.Stream()
    s.wait_event(e1)
    ev = s.record_event()
    ev.synchronize()
    assert ev.query()
    with pytest.raises(RuntimeError, match="enable_timing"):
        ev.elapsed_time(e1)
    with pytest.raises(RuntimeError, match="recorded"):
        lucid.cuda.Event(enable_timing=True).elapsed_time(e1)
    with pytest.raises(NotImplementedError):
        lucid.cuda.Event(interprocess=True)
    lucid.cuda.synchronize()
    lucid.cuda.synchronize(0)


# --- Tensor.record_stream ----------------------------------------------------------------------

RS_SHAPE = (2304, 2048)  # 18 MiB of float32: a large-pool block that is a whole segment
RS_BYTES = 18 * MiB


def _side_work_reading(x, s):
    """Queues on side stream s long matmuls on tensors of its own (tens of milliseconds on an
    H200), then x * 2 + 1, which reads x only after them; returns that result (on s)."""
    s.wait_stream(lucid.cuda.current_stream())  # x was written on the default stream
    with lucid.cuda.stream(s):
        b = lucid.randn(4096, 4096, device="cuda")
        w = lucid.randn(4096, 4096, device="cuda") * (1.0 / 64)
        for _ in range(24):
            b = b @ w
        return x * 2 + 1


def test_record_stream_of_a_cpu_tensor_raises_as_torch():
    with pytest.raises(NotImplementedError, match="record_stream"):
        lucid.ones(3).record_stream(lucid.cuda.Stream._wrap(0, 0))
    with pytest.raises(TypeError, match="Stream"):
        lucid.ones(3).record_stream(0)


@gpu
def test_record_stream_keeps_a_freed_block_from_reuse_until_the_side_stream_is_done():
    lucid.cuda.synchronize()
    lucid.cuda.empty_cache()
    s = lucid.cuda.Stream()
    a = lucid.randn(*RS_SHAPE)
    expect = (a * 2 + 1).numpy()
    # Without record_stream the default stream reuses the freed block at once (the hazard).
    x = a.cuda()
    r = _side_work_reading(x, s)
    ptr = x.data_ptr()
    del x
    y = lucid.empty(RS_SHAPE, device="cuda")
    assert y.data_ptr() == ptr
    lucid.cuda.synchronize()
    del y, r
    # With it, the block waits until the side stream has read it; the new tensor gets other memory.
    x = a.cuda()
    r = _side_work_reading(x, s)
    x.record_stream(s)
    ptr = x.data_ptr()
    del x
    assert not s.query(), "the side stream's work finished too early for this test"
    y = lucid.empty(RS_SHAPE, device="cuda")
    y.fill_(1e6)
    assert y.data_ptr() != ptr
    lucid.cuda.current_stream().wait_stream(s)
    np.testing.assert_allclose(r.cpu().numpy(), expect, rtol=1e-6)
    # Once the side stream is done, the next allocation finds the block free again.
    lucid.cuda.synchronize()
    reserved = lucid.cuda.memory_reserved()
    z = lucid.empty(RS_SHAPE, device="cuda")
    assert z.data_ptr() == ptr and lucid.cuda.memory_reserved() == reserved
    del y, z, r


@gpu
def test_a_block_waiting_for_a_recorded_stream_is_active_and_reserved_not_allocated():
    lucid.cuda.synchronize()
    lucid.cuda.empty_cache()
    s = lucid.cuda.Stream()
    before = lucid.cuda.memory_stats()
    assert before["active_bytes.all.current"] == before["allocated_bytes.all.current"]
    x = lucid.zeros(RS_SHAPE, device="cuda")
    r = _side_work_reading(x, s)  # r: another 18 MiB, allocated on s
    x[5:].record_stream(s)  # through a view: the block is the storage's
    del x
    assert not s.query(), "the side stream's work finished too early for this test"
    mid = lucid.cuda.memory_stats()
    assert mid["allocated_bytes.all.current"] == before["allocated_bytes.all.current"] + RS_BYTES  # r only
    assert lucid.cuda.memory_allocated() == mid["allocated_bytes.all.current"]
    assert mid["active_bytes.all.current"] == mid["allocated_bytes.all.current"] + RS_BYTES  # and x, pending
    assert mid["active.all.current"] == before["active.all.current"] + 2
    assert lucid.cuda.memory_reserved() >= mid["active_bytes.all.current"]
    del r
    lucid.cuda.synchronize()
    lucid.cuda.empty_cache()
    after = lucid.cuda.memory_stats()
    for key in ("allocated_bytes.all.current", "active_bytes.all.current", "active.all.current",
                "reserved_bytes.all.current", "segment.all.current"):
        assert after[key] == before[key], key
    assert after["num_device_free"] > before["num_device_free"]


@gpu
def test_record_stream_errors_and_no_ops():
    x = lucid.zeros(RS_SHAPE, device="cuda")
    with pytest.raises(TypeError, match="Stream"):
        x.record_stream(lucid.cuda.current_stream().cuda_stream)
    other = lucid.cuda.Stream._wrap(lucid.cuda.device_count(), 0)  # a stream of another device
    with pytest.raises(RuntimeError, match="cuda:"):
        x.record_stream(other)
    # The tensor's own stream is no use to track: the block is reused at once.
    x.record_stream(lucid.cuda.current_stream())
    ptr = x.data_ptr()
    del x
    y = lucid.empty(RS_SHAPE, device="cuda")
    assert y.data_ptr() == ptr
    if TORCH_GPU:  # memory lucid did not allocate (a DLPack import) is not tracked, as torch
        t = torch.ones(1000, device="cuda")
        lucid.from_dlpack(t).record_stream(lucid.cuda.Stream())
        assert t.sum().item() == 1000.0


@gpu
def test_record_stream_with_the_cuda_malloc_async_backend_orders_the_free():
    import os
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import numpy as np
        import lucid
        c = lucid.cuda
        assert c.get_allocator_backend() == 'cudaMallocAsync'
        s = c.Stream()
        a = lucid.randn(2304, 2048)
        x = a.cuda()
        s.wait_stream(c.current_stream())
        with c.stream(s):
            b = lucid.randn(4096, 4096, device='cuda')
            w = lucid.randn(4096, 4096, device='cuda') * (1.0 / 64)
            for _ in range(24):
                b = b @ w
            r = x * 2 + 1
        x.record_stream(s)
        del x
        assert not s.query(), 'the side stream finished too early'
        y = lucid.empty((2304, 2048), device='cuda')
        y.fill_(1e6)
        c.current_stream().wait_stream(s)
        np.testing.assert_allclose(r.cpu().numpy(), (a * 2 + 1).numpy(), rtol=1e-6)
        c.synchronize()
        print('ok')
    """)
    env = dict(os.environ, LUCID_CUDA_ALLOCATOR="cudaMallocAsync")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


# --- pinned memory -----------------------------------------------------------------------------

@gpu
def test_pin_memory_copies_into_pinned_memory_once():
    x = lucid.arange(10, dtype=lucid.float32)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.tolist() == x.tolist() and p.device == lucid.device("cpu")
    assert p.pin_memory() is p or p.pin_memory().data_ptr() == p.data_ptr()
    v = lucid.arange(12, dtype=lucid.float32).reshape(3, 4).t()  # a strided view is made contiguous
    pv = v.pin_memory()
    assert pv.is_pinned() and pv.tolist() == v.tolist() and pv.is_contiguous()
    with pytest.raises(TypeError, match="only dense CPU tensors"):
        lucid.ones(3, device="cuda").pin_memory()
    g = pv.cuda()  # an upload from pinned memory
    assert g.cpu().tolist() == v.tolist()
    if TORCH_GPU:
        assert lucid.from_dlpack(torch.ones(3).pin_memory()).is_pinned()


# --- DLPack with torch on the GPU --------------------------------------------------------------

@torch_gpu
def test_cuda_dlpack_round_trip_with_torch_is_zero_copy():
    x = lucid.arange(12, dtype=lucid.float32, device="cuda").reshape(3, 4)
    assert x.__dlpack_device__() == (2, 0)
    t = torch.from_dlpack(x)
    assert t.device.type == "cuda" and t.data_ptr() == x.data_ptr()
    assert t.cpu().tolist() == x.cpu().tolist()
    t.mul_(2)
    torch.cuda.synchronize()
    assert x.cpu().tolist() == [[2.0 * (4 * i + j) for j in range(4)] for i in range(3)]
    src = torch.arange(24, dtype=torch.float16, device="cuda").reshape(4, 6)[:, 1:5]
    y = lucid.from_dlpack(src)
    assert y.device == lucid.device("cuda:0") and y.dtype == lucid.float16
    assert y.data_ptr() == src.data_ptr() and y.stride() == src.stride()
    assert y.cpu().float().tolist() == src.cpu().float().tolist()
    b = lucid.from_dlpack(torch.ones(5, dtype=torch.bfloat16, device="cuda"))
    assert b.dtype == lucid.bfloat16 and b.cpu().float().tolist() == [1.0] * 5


@torch_gpu
def test_dlpack_stream_handshake_orders_the_producer_before_the_consumer():
    # lucid writes on a side stream; torch reads on its own stream: the handshake must order them.
    s = lucid.cuda.Stream()
    ts = torch.cuda.Stream()
    a = lucid.randn(2048, 2048)
    expect = (a * 3).sum().item()
    x = a.cuda()
    s.wait_stream(lucid.cuda.current_stream())
    with lucid.cuda.stream(s):
        y = x * 3
        with torch.cuda.stream(ts):
            t = torch.utils.dlpack.from_dlpack(y.__dlpack__(stream=ts.cuda_stream))
            total = t.sum()
    ts.synchronize()
    assert total.item() == pytest.approx(expect, rel=1e-4)
    with pytest.raises(ValueError, match="stream=0"):
        y.__dlpack__(stream=0)


# --- safetensors straight to the GPU -----------------------------------------------------------

@gpu
def test_safetensors_load_to_the_gpu(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    path = str(tmp_path / "w.safetensors")
    safetensors_torch.save_file({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3)}, path)
    loaded = lucid.load(path, map_location="cuda")
    assert loaded["w"].device == lucid.device("cuda:0")
    assert loaded["w"].cpu().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
