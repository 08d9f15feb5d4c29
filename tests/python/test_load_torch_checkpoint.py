"""lucid.load of PyTorch checkpoints written by torch.save in the test itself (zip and legacy
formats): tensor values, dtypes, shapes, strides, offsets and shared storage; a model state_dict
into the lucid model; a training checkpoint (model, optimizer, epoch) that continues torch's
trajectory; safetensors still read by content; and the refusals (forbidden global, truncated
file, missing storage record, storage too small, weights_only=False, a device lucid lacks)."""
import io
import os
import pickle
import tarfile
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from lucid.serialization import SafetensorsError, UnpicklingError
from harness import as_numpy

FORMATS = ["zip", "legacy"]


def _save(obj, path, fmt):
    torch.save(obj, path, _use_new_zipfile_serialization=(fmt == "zip"))
    return path


WIDENED = {torch.int16: "int32", torch.uint16: "int32", torch.uint32: "int64"}  # dtypes lucid lacks


def _same(lt, tt, what=""):
    assert lt.shape == tuple(tt.shape), what
    assert lt.dtype.name == WIDENED.get(tt.dtype, str(tt.dtype).split(".")[1]), what
    want = tt.to(torch.int64).numpy() if tt.dtype in WIDENED else as_numpy(tt)
    np.testing.assert_array_equal(as_numpy(lt), want, err_msg=what)


TORCH_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
                torch.int8, torch.uint8, torch.bool, torch.uint16, torch.uint32]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=lambda d: str(d).split(".")[1])
def test_tensors_keep_dtype_shape_strides_and_offset(tmp_path, fmt, dtype):
    g = torch.Generator().manual_seed(0)
    base = (torch.randn(4, 6, generator=g) * 50)
    base = (base.abs() if dtype in (torch.uint16, torch.uint32) else base).to(dtype)
    obj = {"plain": base, "t": base.t(), "slice": base[1:, 2:5], "step": base[::2, 1::3], "row": base[2],
           "scalar": base[1, 1].clone(), "empty": base[:0], "expand": base[0:1].expand(3, 6)}
    got = lucid.load(_save(obj, tmp_path / "t.pt", fmt))
    assert list(got) == list(obj)
    for k, t in obj.items():
        _same(got[k], t, k)
        assert got[k].stride() == t.stride() and got[k].storage_offset() == t.storage_offset(), k
    assert all(got[k]._same_storage(got["plain"]) for k in ("t", "slice", "step", "row", "expand"))
    assert not got["scalar"]._same_storage(got["plain"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_views_sharing_a_storage_share_memory(tmp_path, fmt):
    x = torch.arange(12.0)
    a, b = lucid.load(_save([x[2:8].view(2, 3), x], tmp_path / "v.pt", fmt))
    a[0, 0] = -1.0
    assert b[2].item() == -1.0 and a.storage_offset() == 2


def _torch_net(norm=True):
    torch.manual_seed(0)
    norm = [torch.nn.BatchNorm2d(4)] if norm else []
    return torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), *norm, torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 4 * 4, 3))


def _lucid_net(norm=True):
    norm = [nn.BatchNorm2d(4)] if norm else []
    return nn.Sequential(nn.Conv2d(2, 4, 3), *norm, nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))


@pytest.mark.parametrize("fmt", FORMATS)
def test_state_dict_loads_into_the_lucid_model(tmp_path, fmt):
    tm = _torch_net()
    tm.train()
    tm(torch.randn(5, 2, 6, 6))  # running statistics move away from their init
    tm.eval()
    lm = _lucid_net().eval()
    sd = lucid.load(_save(tm.state_dict(), tmp_path / "model.pt", fmt))
    assert isinstance(sd, OrderedDict) and list(sd) == list(tm.state_dict())
    lm.load_state_dict(sd)
    x = np.random.default_rng(1).standard_normal((3, 2, 6, 6)).astype(np.float32)
    with torch.no_grad():
        want = tm(torch.tensor(x))
    np.testing.assert_allclose(as_numpy(lm(lucid.tensor(x))), as_numpy(want), rtol=1e-5, atol=1e-5)
    assert lm[1].num_batches_tracked.item() == 1 and lm[1].num_batches_tracked.dtype == lucid.int64


def _steps(T, model, opt, x, y, n):
    for _ in range(n):
        opt.zero_grad()
        T.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


@pytest.mark.parametrize("opt_name, kwargs", [("Adam", dict(lr=0.01)), ("SGD", dict(lr=0.05, momentum=0.9)),
                                               ("AdamW", dict(lr=0.01, weight_decay=0.1))])
def test_training_checkpoint_resumes_torch_trajectory(tmp_path, opt_name, kwargs):
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((8, 2, 6, 6)).astype(np.float32), rng.integers(0, 3, 8)
    tm = _torch_net(norm=False)  # a conv bias before BatchNorm has a rounding-noise gradient Adam would amplify
    topt = getattr(torch.optim, opt_name)(tm.parameters(), **kwargs)
    tx, ty = torch.tensor(x), torch.tensor(y)
    _steps(torch, tm, topt, tx, ty, 3)
    path = _save({"model": tm.state_dict(), "optimizer": topt.state_dict(), "epoch": 3}, tmp_path / "ck.pt", "zip")
    lm = _lucid_net(norm=False)
    lopt = getattr(lucid.optim, opt_name)(lm.parameters(), **kwargs)
    ck = lucid.load(path)
    assert ck["epoch"] == 3
    lm.load_state_dict(ck["model"])
    lopt.load_state_dict(ck["optimizer"])
    _steps(torch, tm, topt, tx, ty, 4)
    _steps(lucid, lm, lopt, lucid.tensor(x), lucid.tensor(y), 4)
    for (name, lp), tp in zip(lm.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(as_numpy(lp), as_numpy(tp), rtol=1e-4, atol=1e-5, err_msg=name)


def test_parameters_sizes_dtypes_and_containers(tmp_path):
    obj = {"p": torch.nn.Parameter(torch.ones(2)), "frozen": torch.nn.Parameter(torch.ones(1), requires_grad=False),
           "rg": torch.ones(2, requires_grad=True), "size": torch.Size([2, 3]), "dtype": torch.bfloat16,
           "nested": [(1, 2.5, "s", None, True), {3: b"raw", "set": {1, 2}}], "c": 1 + 2j}
    got = lucid.load(_save(obj, tmp_path / "misc.pt", "zip"))
    assert isinstance(got["p"], nn.Parameter) and got["p"].requires_grad
    assert isinstance(got["frozen"], nn.Parameter) and not got["frozen"].requires_grad
    assert got["rg"].requires_grad and not isinstance(got["rg"], nn.Parameter)
    assert got["size"] == (2, 3) and got["dtype"] is lucid.bfloat16
    assert got["nested"] == [(1, 2.5, "s", None, True), {3: b"raw", "set": {1, 2}}] and got["c"] == 1 + 2j


def test_format_is_told_by_content_not_extension(tmp_path):
    sd = {"w": lucid.arange(6.0).reshape(2, 3)}
    lucid.save(sd, tmp_path / "lucid.pt")  # lucid.save keeps writing safetensors
    raw = (tmp_path / "lucid.pt").read_bytes()
    assert int.from_bytes(raw[:8], "little") < len(raw) and raw[8:9] == b"{"
    np.testing.assert_array_equal(as_numpy(lucid.load(tmp_path / "lucid.pt")["w"]), np.arange(6.0).reshape(2, 3))
    _save({"w": torch.arange(3)}, tmp_path / "torch.safetensors", "zip")
    assert lucid.load(tmp_path / "torch.safetensors")["w"].tolist() == [0, 1, 2]
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    assert lucid.load(io.BytesIO(buf.getvalue()))["w"].tolist() == [1.0, 1.0]
    assert lucid.load(buf.getvalue(), map_location="cpu", weights_only=True)["w"].tolist() == [1.0, 1.0]
    assert lucid.load(buf.getvalue(), map_location={"cuda:0": "cpu"})["w"].tolist() == [1.0, 1.0]
    assert lucid.load(buf.getvalue(), map_location=lucid.device("cpu"))["w"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("obj, match", [(torch.ones(2, dtype=torch.complex64), "ComplexFloatStorage"),
                                        (torch.ones(2, dtype=torch.uint64), "torch.uint64"),
                                        (torch.ones(2).to(torch.float8_e4m3fn), "torch.float8_e4m3fn"),
                                        ({"dtype": torch.uint16}, "the dtype torch.uint16")])
def test_elements_lucid_cannot_hold_are_refused_naming_the_dtype(tmp_path, obj, match):
    with pytest.raises(UnpicklingError, match=match):
        lucid.load(_save(obj, tmp_path / "x.pt", "zip"))


def test_weights_only_false_and_other_devices_are_refused(tmp_path):
    path = _save({"w": torch.ones(2)}, tmp_path / "w.pt", "zip")
    with pytest.raises(UnpicklingError, match="weights_only=False is not supported"):
        lucid.load(path, weights_only=False)
    if not lucid.cuda.is_available():  # no CUDA backend (NotImplementedError) or no device (RuntimeError)
        with pytest.raises((NotImplementedError, RuntimeError), match="cuda"):
            lucid.load(path, map_location="cuda")


# ---------------------------------------------------------------- crafted bad files
class _Storage:
    def __init__(self, key, numel, kind=torch.FloatStorage):
        self.pid = ("storage", kind, key, "cpu", numel)


class _Call:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def _craft(path, obj, records, pickled=None):
    buf = io.BytesIO()

    class P(pickle.Pickler):
        def persistent_id(self, o):
            return o.pid if isinstance(o, _Storage) else None

    P(buf, protocol=2).dump(obj)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", buf.getvalue() if pickled is None else pickled)
        z.writestr("archive/byteorder", "little")
        for key, raw in records.items():
            z.writestr(f"archive/data/{key}", raw)
        z.writestr("archive/version", "3\n")
    return path


def _tensor(storage, offset, size, stride):
    return _Call(torch._utils._rebuild_tensor_v2, storage, offset, size, stride, False, OrderedDict())


def test_crafted_valid_file_loads(tmp_path):
    s = _Storage("0", 4)
    p = _craft(tmp_path / "ok.pt", {"w": _tensor(s, 1, (3,), (1,))}, {"0": np.arange(4, dtype="<f4").tobytes()})
    assert lucid.load(p)["w"].tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("target, name", [(os.system, "posix.system"), (eval, "builtins.eval"),
                                          (getattr, "builtins.getattr"), (pickle.loads, "pickle.loads"),
                                          (torch.load, "torch.serialization.load"),
                                          (np.frombuffer, "numpy.frombuffer")])
def test_forbidden_global_raises_naming_it(tmp_path, target, name):
    p = _craft(tmp_path / "evil.pt", {"x": _Call(target, "echo pwned")}, {})
    with pytest.raises(UnpicklingError, match=f"unsupported global '{name}'"):
        lucid.load(p)


def test_forbidden_global_in_legacy_format_raises(tmp_path):
    buf = io.BytesIO()
    for part in (0x1950a86a20f9469cfc6c, 1001, {"protocol_version": 1001, "little_endian": True}):
        pickle.dump(part, buf, protocol=2)
    pickle.dump({"x": _Call(os.system, "echo pwned")}, buf, protocol=2)
    with pytest.raises(UnpicklingError, match="unsupported global 'posix.system'"):
        lucid.load(buf.getvalue())


def test_truncated_files_raise_clear_errors(tmp_path):
    for fmt in FORMATS:
        raw = _save({"w": torch.randn(64), "b": torch.arange(10)}, tmp_path / f"{fmt}.pt", fmt).read_bytes()
        for cut in sorted({1, 3, 10, 40, len(raw) // 3, len(raw) // 2, len(raw) - 30, len(raw) - 1}):
            with pytest.raises((UnpicklingError, SafetensorsError)) as e:
                lucid.load(raw[:cut])
            assert "lucid.load(" in str(e.value)
    with pytest.raises(UnpicklingError, match="truncated or corrupt"):
        lucid.load((tmp_path / "zip.pt").read_bytes()[:-30])


def test_missing_storage_record_raises(tmp_path):
    s = _Storage("7", 4)
    p = _craft(tmp_path / "missing.pt", {"w": _tensor(s, 0, (4,), (1,))}, {})
    with pytest.raises(UnpicklingError, match="storage record 'archive/data/7' is missing"):
        lucid.load(p)


@pytest.mark.parametrize("offset, size, stride", [(0, (5,), (1,)), (2, (3,), (1,)), (0, (2, 3), (3, 1)),
                                                  (0, (2, 2), (1, 3))])
def test_storage_too_small_for_the_tensor_raises(tmp_path, offset, size, stride):
    s = _Storage("0", 4)
    p = _craft(tmp_path / "small.pt", {"w": _tensor(s, offset, size, stride)}, {"0": bytes(16)})
    with pytest.raises(UnpicklingError, match="holds 4"):
        lucid.load(p)


def test_record_size_disagreeing_with_its_element_count_raises(tmp_path):
    s = _Storage("0", 4)
    p = _craft(tmp_path / "short.pt", {"w": _tensor(s, 0, (4,), (1,))}, {"0": bytes(12)})
    with pytest.raises(UnpicklingError, match="holds 12 bytes, expected 16"):
        lucid.load(p)


def test_malformed_structures_raise(tmp_path):
    s = _Storage("0", 4)
    cases = [({"w": _tensor(s, -1, (2,), (1,))}, "non-negative"),
             ({"w": _tensor(s, 0, (2,), (1, 1))}, "non-negative sizes, strides and offset of one length"),
             ({"w": _tensor(s, 0, [2], (1,))}, "size expected a tuple"),
             ({"w": _tensor("not a storage", 0, (2,), (1,))}, "persistent id"),
             ({"w": _Call(torch.FloatStorage, 3)}, "only in a persistent id"),
             ({"w": _tensor(_Storage("0", 4, kind=torch.ComplexFloatStorage), 0, (1,), (1,))}, "no dtype")]
    for obj, match in cases:
        p = _craft(tmp_path / "bad.pt", obj, {"0": bytes(16)})
        with pytest.raises(UnpicklingError, match=match):
            lucid.load(p)
    p = _craft(tmp_path / "garbage.pt", None, {}, pickled=b"\x80\x02}q\x00(X\x01")
    with pytest.raises(UnpicklingError, match="malformed or truncated"):
        lucid.load(p)


def _binunicode(s):
    b = s.encode()
    return b"X" + len(b).to_bytes(4, "little") + b


@pytest.mark.parametrize("glob", [b"torch\nfloat16\n", b"collections\nOrderedDict\n", b"torch._utils\n_rebuild_tensor_v2\n",
                                  b"torch\nFloatStorage\n", b"collections\nCounter\n"])
@pytest.mark.parametrize("slots", [False, True])
def test_build_on_a_global_is_refused_and_changes_nothing(tmp_path, glob, slots):
    state = b"}" + _binunicode("_name_") + _binunicode("evil") + b"s"
    if slots:  # (None, slotstate): pickle would setattr each item
        state = b"N" + state + b"\x86"
    p = _craft(tmp_path / "build.pt", None, {}, pickled=b"\x80\x02c" + glob + state + b"b.")
    with pytest.raises(UnpicklingError, match="BUILD on a global"):
        lucid.load(p)
    assert lucid.float16.name == "float16" and not hasattr(OrderedDict, "_name_")


def test_legacy_format_with_another_pickle_protocol_and_tar_format(tmp_path):
    torch.save({"w": torch.arange(4)}, tmp_path / "p4.pt", _use_new_zipfile_serialization=False, pickle_protocol=4)
    assert lucid.load(tmp_path / "p4.pt")["w"].tolist() == [0, 1, 2, 3]
    with tarfile.open(tmp_path / "old.tar", "w") as tar:
        info = tarfile.TarInfo("sys_info")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"abcd"))
    with pytest.raises(UnpicklingError, match="tar checkpoint format"):
        lucid.load(tmp_path / "old.tar")
