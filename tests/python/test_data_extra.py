"""ChainDataset, StackDataset, default_convert and get_worker_info against torch.utils.data."""
from collections import namedtuple

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import lucid
import lucid.utils.data as ldata


def _stream(lib_data, lo, hi):
    class S(lib_data.IterableDataset):
        def __iter__(self):
            return iter(range(lo, hi))

        def __len__(self):
            return hi - lo
    return S()


def test_chain_dataset_and_plus_match_torch():
    for lib, fw in ((tdata, torch), (ldata, lucid)):
        c = lib.ChainDataset([_stream(lib, 0, 3), _stream(lib, 10, 12)])
        assert list(c) == [0, 1, 2, 10, 11] and len(c) == 5
        assert list(_stream(lib, 0, 2) + _stream(lib, 5, 6)) == [0, 1, 5]
        with pytest.raises((TypeError, AssertionError)):
            list(lib.ChainDataset([lib.TensorDataset(fw.ones(2))]))  # not an IterableDataset


def test_stack_dataset_matches_torch():
    for lib, fw in ((tdata, torch), (ldata, lucid)):
        a, b = lib.TensorDataset(fw.arange(4)), [10, 11, 12, 13]
        s = lib.StackDataset(a, b)
        assert len(s) == 4 and s[2][1] == 12 and int(s[2][0][0]) == 2
        d = lib.StackDataset(x=a, y=b)
        assert set(d[1]) == {"x", "y"} and d[1]["y"] == 11
        with pytest.raises(ValueError):
            lib.StackDataset(a, [1, 2])
        with pytest.raises(ValueError):
            lib.StackDataset(a, y=b)
        loader = lib.DataLoader(s, batch_size=2)
        first = next(iter(loader))
        assert [int(v) for v in first[1]] == [10, 11]


def test_default_convert_matches_torch():
    P = namedtuple("P", "a b")
    data = {"x": np.arange(3.0), "s": np.float32(2.5), "t": (np.ones(2, dtype=np.int64), "str"),
            "p": P(np.zeros(1), 3), "strs": np.array(["a", "b"])}
    t, l = tdata.default_convert(data), ldata.default_convert(data)
    np.testing.assert_array_equal(l["x"].numpy(), t["x"].numpy())
    assert str(l["x"].dtype).split(".")[-1] == str(t["x"].dtype).split(".")[-1]
    assert float(l["s"]) == float(t["s"]) and isinstance(l["s"], lucid.Tensor)
    assert type(l["t"]) is type(t["t"]) and l["t"][1] == "str"
    assert type(l["p"]) is P and isinstance(l["p"].a, lucid.Tensor) and l["p"].b == 3
    assert isinstance(l["strs"], np.ndarray) and isinstance(t["strs"], np.ndarray)


def test_get_worker_info_in_main_process():
    assert tdata.get_worker_info() is None and ldata.get_worker_info() is None
