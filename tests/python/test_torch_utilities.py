"""Small PyTorch utilities a port calls (core list of scripts/api_core_names.txt): finfo / iinfo,
numel, is_tensor, Tensor.new_tensor and inference_mode, each compared with torch."""
import pytest
import torch

import lucid

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int32", "int64"]


@pytest.mark.parametrize("dt", FLOATS)
def test_finfo_matches_torch(dt):
    lf, tf = lucid.finfo(getattr(lucid, dt)), torch.finfo(getattr(torch, dt))
    for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(lf, k) == getattr(tf, k), k
    assert lf.dtype == getattr(lucid, dt)
    assert repr(lf) == repr(tf)


def test_finfo_default_dtype_and_bad_type():
    assert lucid.finfo().eps == torch.finfo().eps
    with pytest.raises(TypeError, match="finfo.*floating"):
        lucid.finfo(lucid.int32)


@pytest.mark.parametrize("dt", INTS)
def test_iinfo_matches_torch(dt):
    li, ti = lucid.iinfo(getattr(lucid, dt)), torch.iinfo(getattr(torch, dt))
    assert (li.bits, li.min, li.max) == (ti.bits, ti.min, ti.max)
    assert repr(li) == repr(ti)


@pytest.mark.parametrize("dt", ["bool", "float32"])
def test_iinfo_rejects_what_torch_rejects(dt):
    with pytest.raises(TypeError):
        torch.iinfo(getattr(torch, dt))
    with pytest.raises(TypeError, match="iinfo"):
        lucid.iinfo(getattr(lucid, dt))


def test_numel_and_is_tensor():
    assert lucid.numel(lucid.ones(2, 3, 4)) == torch.numel(torch.ones(2, 3, 4)) == 24
    assert lucid.numel(lucid.ones(())) == 1
    assert lucid.is_tensor(lucid.ones(1)) and lucid.is_tensor(lucid.nn.Parameter(lucid.ones(1)))
    assert not lucid.is_tensor([1.0]) and not lucid.is_tensor(torch.ones(1))


@pytest.mark.parametrize("data,dtype", [([1, 2], None), ([1.5, 2.0], None), ([1, 2], "int64"), ([[1.0]], "float16")])
@pytest.mark.parametrize("base", ["float64", "int32"])
def test_new_tensor_dtype_as_torch(data, dtype, base):
    t = torch.ones(2, dtype=getattr(torch, base)).new_tensor(data, dtype=dtype and getattr(torch, dtype))
    l = lucid.ones(2, dtype=getattr(lucid, base)).new_tensor(data, dtype=dtype and getattr(lucid, dtype))
    assert str(l.dtype).replace("lucid", "torch") == str(t.dtype)
    assert l.tolist() == t.tolist()


def test_new_tensor_copies_and_can_require_grad():
    src = lucid.ones(3)
    out = src.new_tensor(src, requires_grad=True)
    src.add_(1)
    assert out.tolist() == [1.0, 1.0, 1.0] and out.requires_grad and out.grad_fn is None


def test_inference_mode_as_torch():
    for mod in (torch, lucid):
        with mod.inference_mode():
            assert not mod.is_grad_enabled()
        with mod.inference_mode(False):
            assert mod.is_grad_enabled()
        assert mod.is_grad_enabled()

        @mod.inference_mode()
        def f():
            return mod.is_grad_enabled()

        @mod.inference_mode
        def g():
            return mod.is_grad_enabled()
        assert f() is False and g() is False and mod.is_grad_enabled()
    with lucid.inference_mode():
        y = lucid.ones(2, requires_grad=True) * 2
    assert not y.requires_grad


@pytest.mark.parametrize("shape", [(3, 4), (7, 3), (4, 4), (3, 3, 3)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_in_place_as_torch(shape, wrap):
    import numpy as np
    x = np.random.default_rng(0).random(shape)
    lt, tt = lucid.tensor(x), torch.tensor(x)
    out = lt.fill_diagonal_(-2.5, wrap=wrap)
    tt.fill_diagonal_(-2.5, wrap=wrap)
    assert out is lt and np.array_equal(lt.numpy(), tt.numpy())


def test_composite_bad_input_names_the_op_and_argument():
    with pytest.raises(lucid.ArgumentError, match="fill_diagonal_: all dimensions"):
        lucid.ones(2, 3, 4).fill_diagonal_(1.0)
    with pytest.raises(lucid.ArgumentError, match="outer: argument 'input' expected a 1-D"):
        lucid.outer(lucid.ones(2, 2), lucid.ones(2))
    with pytest.raises(lucid.ArgumentError, match="baddbmm: argument 'input'"):
        lucid.baddbmm(lucid.ones(4, 4), lucid.ones(2, 3, 4), lucid.ones(2, 4, 5))
    with pytest.raises(lucid.ArgumentError, match="sum_to_size: size \\[5\\]"):
        lucid.ones(2, 3).sum_to_size(5)
    with pytest.raises(lucid.ArgumentError, match="meshgrid: indexing"):
        lucid.meshgrid(lucid.ones(2), indexing="yx")


def test_baddbmm_beta_zero_ignores_nan_input_as_torch():
    nan = float("nan")
    t = torch.baddbmm(torch.full((2, 2, 2), nan), torch.ones(2, 2, 3), torch.ones(2, 3, 2), beta=0)
    l = lucid.baddbmm(lucid.full((2, 2, 2), nan), lucid.ones(2, 2, 3), lucid.ones(2, 3, 2), beta=0)
    assert l.tolist() == t.tolist()


def test_sum_to_size_of_its_own_size_is_itself_as_torch():
    t, l = torch.ones(2, 3), lucid.ones(2, 3)
    assert t.sum_to_size(2, 3) is t
    assert l.sum_to_size(2, 3) is l


def _stream(mod, data):
    class Stream(data.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            for i in range(self.n):
                yield mod.tensor([float(i), 2.0 * i]), i

        def __len__(self):
            return self.n
    return Stream


@pytest.mark.parametrize("kw", [{"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None}, {}])
def test_iterable_dataset_loader_as_torch(kw):
    import lucid.utils.data as ldata
    import torch.utils.data as tdata

    def batches(mod, data):
        dl = data.DataLoader(_stream(mod, data)(7), **kw)
        return len(dl), [(b[0].tolist(), b[1].tolist() if hasattr(b[1], "tolist") else b[1]) for b in dl]
    assert batches(lucid, ldata) == batches(torch, tdata)


@pytest.mark.parametrize("kw", [{"shuffle": True}, {"sampler": [0, 1]}])
def test_iterable_dataset_refuses_sampling_as_torch(kw):
    import lucid.utils.data as ldata
    import torch.utils.data as tdata
    with pytest.raises(ValueError, match="IterableDataset"):
        tdata.DataLoader(_stream(torch, tdata)(3), **kw)
    with pytest.raises(ValueError, match="IterableDataset: expected unspecified"):
        ldata.DataLoader(_stream(lucid, ldata)(3), **kw)


def test_cdist_zero_distance_has_zero_gradient_as_torch():
    import numpy as np
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    for p in (2.0, 3.0):
        tx, lx = torch.tensor(x, requires_grad=True), lucid.tensor(x).requires_grad_()
        torch.cdist(tx, tx, p=p).sum().backward()
        lucid.cdist(lx, lx, p=p).sum().backward()
        np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-9)
    with pytest.raises(lucid.ArgumentError, match="cdist: x1 and x2 must have the same number of columns"):
        lucid.cdist(lucid.ones(3, 4), lucid.ones(5, 3))


def test_size_as_torch():
    t, l = torch.Size([2, 3, 4]), lucid.Size([2, 3, 4])
    assert l.numel() == t.numel() == 24 and l == t == (2, 3, 4) and isinstance(l, tuple)
    assert repr(l) == repr(t).replace("torch", "lucid")
    assert lucid.ones(2, 3, 4).shape == l


@pytest.mark.parametrize("fn", ["baddbmm", "addbmm", "addmv", "addr"])
def test_add_product_input_never_broadcasts_the_product(fn):
    # input must broadcast to the product's shape; a larger input raises in torch, never widens the result
    args = {"baddbmm": ((2, 3, 5), (2, 3, 4), (2, 4, 5)), "addbmm": ((3, 5), (2, 3, 4), (2, 4, 5)),
            "addmv": ((3,), (3, 4), (4,)), "addr": ((3, 4), (3,), (4,))}[fn]
    big = (2,) + args[0]
    with pytest.raises(RuntimeError):
        getattr(torch, fn)(torch.ones(big), *(torch.ones(s) for s in args[1:]))
    with pytest.raises(RuntimeError, match=f"{fn}: argument 'input'"):
        getattr(lucid, fn)(lucid.ones(big), *(lucid.ones(s) for s in args[1:]))
    for beta in (0, 1, 0.5):
        t = getattr(torch, fn)(torch.ones(args[0][-1:]), *(torch.ones(s) for s in args[1:]), beta=beta)
        l = getattr(lucid, fn)(lucid.ones(args[0][-1:]), *(lucid.ones(s) for s in args[1:]), beta=beta)
        assert l.tolist() == t.tolist()
