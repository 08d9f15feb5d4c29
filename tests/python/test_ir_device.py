"""The device in the compiler IR, seen from Python: a CPU graph and the same graph on CUDA print
and hash differently and round-trip through the text (`_C._parse_ir`); lucid.device matches
torch.device's type/index; creating a CUDA tensor without a device raises."""
import pytest
import torch

import lucid
from lucid import _C

CPU = ("graph(%0: float32[2,3] input, %1: float32[3] state) {\n"
       "  %2 = Mul(%0, %1) : float32[2,3]\n"
       "  return (%2)\n"
       "}\n")


def on(device):
    return CPU.replace("float32[2,3]", f"float32[2,3]@{device}").replace("float32[3] ", f"float32[3]@{device} ")


def test_cpu_text_unchanged_and_devices_separate():
    texts = {"cpu": CPU, "cuda:0": on("cuda:0"), "cuda:1": on("cuda:1")}
    graphs = {k: _C._parse_ir(t) for k, t in texts.items()}
    for k, g in graphs.items():
        assert str(g) == texts[k]
        assert _C._parse_ir(str(g)).hash == g.hash
    assert "@" not in str(graphs["cpu"])
    assert len({g.hash for g in graphs.values()}) == 3
    assert len({str(g) for g in graphs.values()}) == 3
    assert str(_C._parse_ir(on("cuda"))) == texts["cuda:0"]  # "cuda" is the current device, cuda:0


def test_optimize_keeps_the_device():
    text = str(_C._optimize(_C._parse_ir(on("cuda:0")), ""))
    assert text.replace("@cuda:0", "") == str(_C._optimize(_C._parse_ir(CPU), ""))
    assert "@cuda:0" in text


@pytest.mark.parametrize("bad", ["tpu", "cuda:-1", "cpu:1", "cuda:01"])
def test_bad_device_in_text(bad):
    with pytest.raises(ValueError, match="expected a device"):
        _C._parse_ir(on(bad))


@pytest.mark.parametrize("spec", ["cpu", "cuda", "cuda:0", "cuda:3", "cpu:0"])
def test_device_object_as_torch(spec):
    d, t = lucid.device(spec), torch.device(spec)
    assert (d.type, d.index) == (t.type, t.index)
    assert str(d) == str(t)


@pytest.mark.parametrize("spec", ["cuda:-1", "cuda:x", "tpu"])
def test_device_object_rejects_as_torch(spec):
    with pytest.raises(RuntimeError):
        torch.device(spec)
    with pytest.raises(RuntimeError):
        lucid.device(spec)


@pytest.mark.skipif(lucid.cuda.is_available(), reason="a CUDA device is present")
@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "cuda:1"])
def test_cuda_tensor_unavailable_without_a_device(spec):
    no_cuda = "no CUDA backend|no CUDA device is available"
    with pytest.raises((NotImplementedError, RuntimeError), match=no_cuda):
        lucid.zeros(2, device=spec)
    with pytest.raises((NotImplementedError, RuntimeError), match=no_cuda):
        lucid.ones(2).to(spec)
