"""CUDA tensors end to end (issue 12, item 2): device= on factories, to()/cuda()/cpu() in every
direction with the values kept, gradients through a device move, Module.to, the factory device
(`with lucid.device("cuda")`, set_default_device), host reads (item, repr, tolist, numpy's error),
ops mixing devices (PyTorch's error; CPU scalars join), cuda:N past the last GPU, and lucid.compile
running on CUDA (a trace across two devices falls back to eager). References are NumPy / lucid's CPU results of the same inputs.
The tests that need a GPU skip without one ("no CUDA device"); the device-object tests run anywhere."""
import numpy as np
import pytest

import lucid

HAS_CUDA = lucid.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")


# ---- anywhere --------------------------------------------------------------------------------

def test_integer_device_is_cuda_index():
    assert str(lucid.device(0)) == "cuda:0" and lucid.device(1) == lucid.device("cuda", 1)
    with pytest.raises(RuntimeError, match="negative"):
        lucid.device(-1)


def test_cpu_device_context_and_default():
    assert lucid.get_default_device() == "cpu"
    with lucid.device("cpu"):
        assert lucid.zeros(2).device == "cpu"
    lucid.set_default_device(None)
    assert lucid.get_default_device() == "cpu"


def test_to_same_device_returns_self_and_cpu_is_identity():
    x = lucid.arange(4.0)
    assert x.to("cpu")._is_same(x) and x.cpu()._is_same(x)
    assert not x.is_cuda and x.is_cpu and x.get_device() == -1


# ---- with a GPU ------------------------------------------------------------------------------

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_keeps_values(dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((5, 7)) * 10).astype("float32")
    x = lucid.tensor(a).to(getattr(lucid, dtype))
    y = x.cuda()
    assert y.device == "cuda:0" and y.is_cuda and y.get_device() == 0 and y.dtype == x.dtype
    back = y.cpu()
    assert back.device == "cpu"
    np.testing.assert_array_equal(back.float().numpy(), x.float().numpy())


@requires_cuda
def test_non_contiguous_and_cast_on_the_way():
    x = lucid.arange(24.0).reshape(4, 6)
    t = x.t()  # strided source
    y = t.to("cuda", lucid.float64)
    assert y.dtype == lucid.float64 and tuple(y.shape) == (6, 4)
    np.testing.assert_array_equal(y.cpu().numpy(), x.numpy().T.astype("float64"))
    z = y.cuda()[1:, ::2].cpu()  # a strided CUDA view back to the host
    np.testing.assert_array_equal(z.numpy(), x.numpy().T[1:, ::2])


@requires_cuda
@pytest.mark.parametrize("make", [
    lambda: lucid.zeros(3, 4, device="cuda"), lambda: lucid.ones(3, 4, device="cuda:0"),
    lambda: lucid.full((3, 4), 2.5, device=lucid.device("cuda")), lambda: lucid.arange(12, device="cuda"),
    lambda: lucid.empty(3, device="cuda"), lambda: lucid.eye(3, device="cuda"),
    lambda: lucid.tensor([[1.0, 2.0]], device="cuda"), lambda: lucid.zeros_like(lucid.ones(2).cuda())])
def test_factories_make_cuda_tensors(make):
    assert make().device == "cuda:0"


@requires_cuda
def test_factory_values_match_cpu():
    for f in (lambda d: lucid.arange(0, 5, 0.5, device=d), lambda d: lucid.linspace(-1, 1, 7, device=d),
              lambda d: lucid.full((2, 3), 7, device=d), lambda d: lucid.eye(3, 4, device=d)):
        np.testing.assert_array_equal(f("cuda").cpu().numpy(), f("cpu").numpy())


@requires_cuda
def test_device_context_manager_and_default_device():
    with lucid.device("cuda"):
        assert lucid.zeros(2).device == "cuda:0"
        assert lucid.zeros(2, device="cpu").device == "cpu"
    assert lucid.zeros(2).device == "cpu"
    lucid.set_default_device("cuda")
    try:
        assert lucid.ones(1).device == "cuda:0"
    finally:
        lucid.set_default_device("cpu")


@requires_cuda
def test_gradient_flows_back_across_devices():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    x = lucid.tensor(a, requires_grad=True)
    y = (x.cuda() * 3.0).sum()
    y.backward()
    assert x.grad.device == "cpu"
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 3.0, "float32"))
    w = lucid.tensor(a, device="cuda", requires_grad=True)
    (w.cpu() ** 2).sum().backward()
    assert w.grad.device == "cuda:0"
    np.testing.assert_array_equal(w.grad.cpu().numpy(), 2 * a)


@requires_cuda
def test_cpu_scalar_joins_cuda_op_and_gets_its_grad_on_cpu():
    s = lucid.tensor(2.0, requires_grad=True)
    x = lucid.ones(3, device="cuda")
    y = (x * s).sum()
    assert y.device == "cuda:0"
    y.backward()
    assert s.grad.device == "cpu" and s.grad.item() == 3.0
    assert ((x + 1).cpu().numpy() == 2).all()


@requires_cuda
def test_two_devices_raise_torch_error():
    with pytest.raises(RuntimeError, match="expected all tensors to be on the same device"):
        lucid.ones(3) + lucid.ones(3, device="cuda")
    y = lucid.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match="same device"):
        y.add_(lucid.ones(3))
    y.copy_(lucid.arange(3.0))  # copy_ moves across devices, as torch's
    np.testing.assert_array_equal(y.cpu().numpy(), [0.0, 1.0, 2.0])


@requires_cuda
def test_host_reads_of_cuda_tensors():
    x = lucid.tensor([1.5, -2.0], device="cuda")
    assert x[0].item() == 1.5 and float(x[1]) == -2.0 and x.tolist() == [1.5, -2.0]
    assert "device='cuda:0'" in repr(x)
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        x.numpy()
    assert bool((x > 0).any())


@requires_cuda
def test_module_to_cuda_and_back():
    m = lucid.nn.Linear(3, 2)
    w = m.weight.detach().numpy().copy()
    m.to("cuda")
    assert m.weight.device == "cuda:0" and m.bias.device == "cuda:0"
    x = lucid.ones(4, 3, device="cuda")
    out = m(x)
    assert out.device == "cuda:0"
    np.testing.assert_allclose(out.detach().cpu().numpy(), np.ones((4, 3), "float32") @ w.T + m.bias.detach().cpu().numpy(), rtol=1e-5)
    m.cpu()
    assert m.weight.device == "cpu"
    np.testing.assert_array_equal(m.weight.detach().numpy(), w)


@requires_cuda
def test_invalid_ordinal_is_a_clear_error():
    n = lucid.cuda.device_count()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        lucid.zeros(2, device=f"cuda:{n}")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        lucid.zeros(2).to(f"cuda:{n + 6}")
    assert lucid.zeros(2, device="cuda").device == "cuda:0"  # still usable


@requires_cuda
def test_index_with_cpu_indices_and_masks():
    x = lucid.arange(10.0, device="cuda")
    np.testing.assert_array_equal(x[[1, 3]].cpu().numpy(), [1.0, 3.0])
    np.testing.assert_array_equal(x[lucid.tensor([0, 9])].cpu().numpy(), [0.0, 9.0])
    np.testing.assert_array_equal(x[x > 6].cpu().numpy(), [7.0, 8.0, 9.0])
    np.testing.assert_array_equal(lucid.nonzero(x > 7).cpu().numpy(), [[8], [9]])


@requires_cuda
def test_compile_runs_on_cuda_and_a_trace_across_devices_falls_back():
    f = lucid.compile(lambda a: a * 2 + 1, strict=True)
    x = lucid.arange(4.0, device="cuda")
    for _ in range(3):  # the trace, then the cached CUDA executable
        y = f(x)
        assert y.device.type == "cuda"
        np.testing.assert_array_equal(y.cpu().numpy(), [1.0, 3.0, 5.0, 7.0])
    assert f.cache_info()["entries"] == 1 and f.cache_info()["eager_only"] == {}
    g = lucid.compile(lambda a: (a * 2).cpu() + 1)  # values on cuda:0 and on the CPU
    with pytest.warns(UserWarning, match="runs on one device"):
        y = g(x)
    assert y.device.type == "cpu"
    np.testing.assert_array_equal(y.numpy(), [1.0, 3.0, 5.0, 7.0])


@requires_cuda
def test_compiled_inputs_on_another_device_compile_their_own_entry():
    # The inputs' devices are part of the signature and a bound tensor moved to another device
    # makes its entry stale (re-traced): never an executable fed another device's memory.
    lucid.manual_seed(0)
    m = lucid.nn.Linear(3, 2)
    f = lucid.compile(lambda a: m(a).relu(), strict=True)
    x = lucid.randn(4, 3)
    with lucid.no_grad():
        want = m(x).relu().numpy()
        m.to("cuda")
        np.testing.assert_allclose(f(x.cuda()).cpu().numpy(), want, rtol=1e-5, atol=1e-6)
        m.to("cpu")  # bound state moved back: the CUDA entry is stale, the CPU call compiles anew
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-5, atol=1e-6)
        with pytest.raises(RuntimeError, match="expected all tensors to be on the same device"):
            f(x.cuda())  # a CUDA input with CPU parameters: the stale entry re-traces, raising as eager
    assert f.cache_info()["eager_only"] == {}


@requires_cuda
def test_save_compiled_of_a_cuda_model_is_not_implemented(tmp_path):
    m = lucid.nn.Linear(3, 2).to("cuda")
    cm = lucid.compile(m)
    with lucid.no_grad():
        cm(lucid.randn(4, 3, device="cuda"))
    with pytest.raises(NotImplementedError, match="run on cuda:0; saving them is not implemented"):
        lucid.compile.save_compiled(cm, tmp_path / "m.lucid")
    assert not (tmp_path / "m.lucid").exists()
