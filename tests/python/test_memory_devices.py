"""The `device` argument of lucid's memory statistics (memory_allocated, max_memory_allocated,
reset_peak_memory_stats, memory_cached, empty_cache), as torch.cuda.memory_allocated(device) takes
one: None (the default) is the CPU, as is 'cpu', 'cpu:0' or lucid.device('cpu'); a CUDA device
('cuda', 'cuda:N', lucid.device('cuda', N), or an int N) is answered by the CUDA caching allocator;
without a usable device it raises RuntimeError naming the function (no GPU, an index out of
range), and in a CPU-only build NotImplementedError naming the function and the device. The counters themselves are tested in test_compile_fused.py
(test_memory_counters_follow_allocations, test_freed_buffers_are_reused_and_empty_cache_frees_them)
and tests/cpp/test_allocator.cpp."""
import gc

import pytest

import lucid

FUNCTIONS = ["memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "memory_cached", "empty_cache"]
CPU_FORMS = [None, "cpu", "cpu:0", lucid.device("cpu"), lucid.device("cpu", 0)]


@pytest.mark.parametrize("device", CPU_FORMS, ids=repr)
def test_cpu_device_is_the_default(device):
    gc.collect()
    lucid.reset_peak_memory_stats()
    before = lucid.memory_allocated()
    t = lucid.empty(1024, 1024)  # 4 MiB: a size class of its own
    assert lucid.memory_allocated(device) == lucid.memory_allocated() == before + 4 * 2**20
    assert lucid.memory_allocated(device=device) == before + 4 * 2**20
    assert lucid.max_memory_allocated(device) == before + 4 * 2**20
    del t
    lucid.reset_peak_memory_stats(device)
    assert lucid.max_memory_allocated() == before
    assert lucid.memory_cached(device) == lucid.memory_cached()
    lucid.empty_cache(device)
    assert lucid.memory_cached() == 0 and lucid.memory_cached(device) == 0


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("device, shown", [("cuda", "cuda:0"), ("cuda:1", "cuda:1"),
                                           (lucid.device("cuda", 0), "cuda:0"), (0, "cuda:0")], ids=repr)
def test_cuda_statistics_without_a_usable_cuda_device_raise(name, device, shown):
    index = int(shown.split(":")[1])
    if not lucid._C._cuda_is_built():  # a CPU-only build: no CUDA allocator
        with pytest.raises(NotImplementedError, match=f"^{name}: device '{shown}' has no memory allocator"):
            getattr(lucid, name)(device)
    elif lucid.cuda.device_count() == 0:
        with pytest.raises(RuntimeError, match=f"^{name}: device: '{shown}' requested, but no CUDA device is available"):
            getattr(lucid, name)(device)
    elif index >= lucid.cuda.device_count():
        with pytest.raises(RuntimeError, match=f"^{name}: device: '{shown}' requested: CUDA error: invalid device ordinal"):
            getattr(lucid, name)(device)
    else:  # the CUDA caching allocator answers (tests/python/test_cuda_runtime.py tests its counters)
        getattr(lucid, name)(device)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_bad_device_arguments_raise(name):
    fn = getattr(lucid, name)
    with pytest.raises(TypeError, match=f"{name}: argument 'device'"):
        fn(True)
    with pytest.raises(TypeError, match=f"{name}: argument 'device'"):
        fn(1.5)
    with pytest.raises(ValueError, match=f"{name}: argument 'device'"):
        fn(-1)
    with pytest.raises(ValueError, match="device"):
        fn("tpu")
    with pytest.raises(ValueError, match="CPU device index must be 0"):
        fn("cpu:1")
