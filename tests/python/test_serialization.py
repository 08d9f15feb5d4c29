"""lucid.save / lucid.load (safetensors format): round trips for every dtype, 0-d and empty tensors,
nested objects (optimizer state dicts), interop with files written/read by the safetensors package
and PyTorch, and clear errors."""
import io
import json
import struct
from collections import OrderedDict

import numpy as np
import pytest
import torch
from safetensors.torch import load_file as st_load_file, save_file as st_save_file

import lucid
import lucid.nn as nn

TORCH = {"bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int32": torch.int32, "int64": torch.int64,
         "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}


def torch_tensor(name, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    if name == "bool":
        return torch.rand(shape, generator=g) > 0.5
    if name in ("uint8", "int8", "int32", "int64"):
        lo = 0 if name == "uint8" else -100
        return torch.randint(lo, 100, shape, generator=g).to(TORCH[name])
    return (torch.randn(shape, generator=g) * 3).to(TORCH[name])


def as_lucid(t):
    if t.dtype == torch.bfloat16:
        return lucid.tensor(t.float().numpy()).to(lucid.bfloat16)
    return lucid.tensor(t.numpy())


def as_np(t):
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return (t.float() if t.dtype == lucid.bfloat16 else t).numpy()


@pytest.mark.parametrize("dtype", list(TORCH))
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4), (5,)])
def test_round_trip_and_torch_interop(dtype, shape, tmp_path):
    tt = torch_tensor(dtype, shape)
    lt = as_lucid(tt)
    assert lt.dtype.name == dtype
    path = tmp_path / "a.safetensors"
    lucid.save({"x": lt}, path)
    back = lucid.load(path)
    assert list(back.keys()) == ["x"]
    assert back["x"].dtype == lt.dtype and tuple(back["x"].shape) == shape
    np.testing.assert_array_equal(as_np(back["x"]), as_np(lt))
    # the same file read by the safetensors package gives torch's tensor bit for bit
    tb = st_load_file(str(path))["x"]
    assert tb.dtype == TORCH[dtype] and tuple(tb.shape) == shape
    assert torch.equal(tb, tt)
    # and a file written by safetensors/torch reads back in lucid
    p2 = tmp_path / "b.safetensors"
    st_save_file({"x": tt}, str(p2))
    lb = lucid.load(p2)["x"]
    assert lb.dtype.name == dtype and tuple(lb.shape) == shape
    np.testing.assert_array_equal(as_np(lb), as_np(tt))


def _pair():
    def build(N, full):
        m = N.Module()
        m.enc = N.Module()
        m.enc.weight = N.Parameter(full((3, 4), 0.0))
        m.enc.bias = N.Parameter(full((3,), 0.0))
        m.norm = N.LayerNorm(3)
        m.bn = N.BatchNorm1d(3)
        return m
    return build(nn, lucid.full), build(torch.nn, torch.full)


def test_load_torch_written_state_dict_into_lucid_model(tmp_path):
    lm, tm = _pair()
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
        tm.bn.running_mean.copy_(torch.randn(3, generator=g))
        tm.bn.num_batches_tracked.fill_(7)
    path = tmp_path / "torch_model.safetensors"
    st_save_file(tm.state_dict(), str(path))
    sd = lucid.load(path)
    res = lm.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    for k, v in tm.state_dict().items():
        lv = lm.state_dict()[k]
        assert tuple(lv.shape) == tuple(v.shape) and lv.dtype.name == str(v.dtype)[6:], k
        np.testing.assert_array_equal(lv.numpy(), v.numpy(), err_msg=k)
    # and back: a lucid-written model file loads into torch by name
    p2 = tmp_path / "lucid_model.safetensors"
    lucid.save(lm.state_dict(), p2)
    _, tm2 = _pair()
    tm2.load_state_dict(st_load_file(str(p2)))
    for k, v in tm.state_dict().items():
        assert torch.equal(tm2.state_dict()[k], v), k


def test_nested_objects_round_trip(tmp_path):
    obj = {
        "state": {0: {"step": lucid.full((), 3.0), "exp_avg": lucid.full((2, 2), 0.5)},
                  1: {"momentum_buffer": lucid.full((3,), -1.0, dtype=lucid.float64)}},
        "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8, "params": [0, 1], "foreach": None,
                          "amsgrad": False, "name": "g0", "inf": float("inf"), "dt": lucid.float16}],
        "epoch": 7,
        "history": [1.5, lucid.full((1,), 2.0)],
        "ordered": OrderedDict([("b", 1), ("a", 2)]),
    }
    buf = io.BytesIO()
    lucid.save(obj, buf)
    back = lucid.load(io.BytesIO(buf.getvalue()))
    assert set(back["state"].keys()) == {0, 1}  # integer keys survive
    assert back["state"][0]["step"].shape == () and float(back["state"][0]["step"].item()) == 3.0
    np.testing.assert_array_equal(back["state"][0]["exp_avg"].numpy(), np.full((2, 2), 0.5, np.float32))
    assert back["state"][1]["momentum_buffer"].dtype == lucid.float64
    g = back["param_groups"][0]
    assert g["betas"] == (0.9, 0.999) and isinstance(g["betas"], tuple)
    assert g["params"] == [0, 1] and g["foreach"] is None and g["amsgrad"] is False and g["name"] == "g0"
    assert g["inf"] == float("inf") and g["dt"] == lucid.float16
    assert back["epoch"] == 7 and back["history"][0] == 1.5
    assert isinstance(back["ordered"], OrderedDict) and list(back["ordered"].keys()) == ["b", "a"]
    # the file is a valid safetensors file: the package reads its tensors
    raw = buf.getvalue()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert "lucid.skeleton" in header["__metadata__"]
    assert (8 + n) % 8 == 0


def test_errors():
    with pytest.raises(TypeError):
        lucid.save({"f": lambda x: x}, io.BytesIO())
    with pytest.raises(ValueError):
        lucid.load(io.BytesIO(b"\x01\x02"))
    with pytest.raises(ValueError):
        lucid.load(io.BytesIO(struct.pack("<Q", 1000) + b"{}"))
    with pytest.raises(ValueError):
        lucid.load(io.BytesIO(struct.pack("<Q", 4) + b"nope"))
    bad = json.dumps({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    with pytest.raises(ValueError):
        lucid.load(io.BytesIO(struct.pack("<Q", len(bad)) + bad + b"\x00" * 8))
