"""lucid.device, Tensor.device, .to(...) and lucid.cuda against torch.device / torch.cuda: the
attributes, str/repr, equality and hashing of device objects, the `device = ... if
cuda.is_available() else "cpu"` porting idiom, and a clear error for a CUDA device (no backend)."""
import pickle

import numpy as np
import pytest
import torch

import lucid


@pytest.mark.parametrize("args", [("cpu",), ("cuda",), ("cuda", 0), ("cuda:1",), ("cpu", 0), ("cpu:0",), ("mps",)])
def test_device_attributes_match_torch(args):
    d, t = lucid.device(*args), torch.device(*args)
    assert (d.type, d.index) == (t.type, t.index)
    assert str(d) == str(t)
    assert repr(d) == repr(t)
    assert lucid.device(d) == d and pickle.loads(pickle.dumps(d)) == d


@pytest.mark.parametrize("args, error", [(("tpu",), RuntimeError), (("cuda", -1), RuntimeError),
                                         (("cuda:x",), RuntimeError), ((3.5,), TypeError),
                                         (("cpu", "a"), TypeError), (("cuda:0", 1), RuntimeError)])
def test_bad_device_raises_like_torch(args, error):
    with pytest.raises(error):
        torch.device(*args)
    with pytest.raises(error, match="device"):
        lucid.device(*args)


def test_device_equality_and_hash():
    assert lucid.device("cpu") == lucid.device("cpu")
    assert lucid.device("cuda", 0) == lucid.device("cuda:0")
    assert lucid.device("cuda:0") != lucid.device("cuda")  # index None vs 0, as torch
    assert torch.device("cuda:0") != torch.device("cuda")
    assert len({lucid.device("cpu"), lucid.device("cpu"), lucid.device("cuda", 0), lucid.device("cuda:0")}) == 2
    # Documented difference from torch: a device equals its string form.
    assert lucid.device("cpu") == "cpu" and "cpu" == lucid.device("cpu")
    assert lucid.device("cpu") != "cuda" and lucid.device("cpu") != "tpu" and lucid.device("cpu") != 3
    with pytest.raises(AttributeError):
        lucid.device("cpu").type = "cuda"


def test_tensor_device_is_a_device_object_that_still_equals_the_string():
    t = lucid.zeros(3)
    assert isinstance(t.device, lucid.device)
    assert t.device == "cpu" and str(t.device) == "cpu" and t.device.type == "cpu" and t.device.index is None
    assert t.device == lucid.device("cpu") and not t.is_cuda and t.get_device() == torch.zeros(3).get_device()
    assert f"{t.device}" == f"{torch.zeros(3).device}"


def test_porting_idiom_runs_on_cpu():
    device = lucid.device("cuda" if lucid.cuda.is_available() else "cpu")
    x = lucid.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).to(device)
    model = lucid.nn.Linear(3, 2).to(device)
    z = lucid.zeros(3, device=device)
    assert model(x).device == device and z.device == device
    assert lucid.tensor([1.0], device=device).device == device
    assert lucid.randn(2, device=device).device == device


def test_to_forms_match_torch():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    lt, tt = lucid.tensor(a), torch.from_numpy(a)
    other_l, other_t = lucid.zeros(1, dtype=lucid.int64), torch.zeros(1, dtype=torch.int64)
    pairs = [(lt.to("cpu"), tt.to("cpu")), (lt.to(lucid.float64), tt.to(torch.float64)),
             (lt.to(other_l), tt.to(other_t)), (lt.to(lucid.device("cpu"), lucid.float16),
                                                tt.to(torch.device("cpu"), torch.float16)),
             (lt.to("cpu", lucid.int32), tt.to("cpu", torch.int32)),
             (lt.to(device="cpu", dtype=lucid.float64), tt.to(device="cpu", dtype=torch.float64))]
    for lo, to in pairs:
        assert str(lo.dtype).split(".")[1] == str(to.dtype).split(".")[1]
        np.testing.assert_array_equal(lo.numpy(), to.numpy())
    assert lt.to("cpu")._is_same(lt)  # no copy when nothing changes, as torch returns self
    assert tt.to("cpu") is tt
    assert not lt.to("cpu", copy=True)._is_same(lt)
    assert not lt.to("cpu", lucid.float32, False, True)._is_same(lt)  # positional (non_blocking, copy)
    assert lt.to("cpu", lucid.float32, True, False)._is_same(lt)
    with pytest.raises(TypeError, match="Tensor.to"):
        lt.to(3.5)
    with pytest.raises(TypeError, match="Tensor.to"):
        lt.to(bogus=1)


@pytest.mark.parametrize("make", [
    lambda d: lucid.zeros(3, device=d), lambda d: lucid.ones(2, 2, device=d), lambda d: lucid.randn(2, device=d),
    lambda d: lucid.tensor([1.0], device=d), lambda d: lucid.zeros(2).to(d), lambda d: lucid.zeros(2).to(device=d),
    lambda d: lucid.nn.Linear(2, 2).to(d), lambda d: lucid.arange(3, device=d)])
@pytest.mark.parametrize("dev", [lucid.device("cuda"), lucid.device("cuda", 0), "cuda", "cuda:0"])
@pytest.mark.skipif(lucid.cuda.is_available(), reason="a CUDA device is present")
def test_cuda_device_given_to_an_op_raises_clearly(make, dev):
    # A CPU-only build has no backend (NotImplementedError); a CUDA build on a machine without a
    # GPU or driver says there is no device, and why (RuntimeError, as torch).
    with pytest.raises((NotImplementedError, RuntimeError), match=NO_CUDA):
        make(dev)


NO_CUDA = "no CUDA backend|no CUDA device is available"


@pytest.mark.skipif(lucid.cuda.is_available(), reason="a CUDA device is present")
def test_cuda_method_raises_clearly():
    with pytest.raises((NotImplementedError, RuntimeError), match=NO_CUDA):
        lucid.zeros(2).cuda()
    with pytest.raises(NotImplementedError, match="no MPS backend"):
        lucid.zeros(2).to("mps")


def test_generator_device():
    g = lucid.Generator(device=lucid.device("cpu"))
    assert g.device == "cpu" and isinstance(g.device, lucid.device) and str(g.device) == str(torch.Generator().device)
