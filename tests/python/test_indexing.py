"""Tensor.__getitem__ / __setitem__ against PyTorch (forward and gradients) over many index
patterns, view-ness of basic indexing and view ops (shared storage, data_ptr arithmetic,
writes through views), and the errors bad indices raise."""
import numpy as np
import pytest
import torch

import lucid
from harness import assert_close

A = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5) / 7.0 - 3.0
MASK_3 = np.array([True, False, True])
MASK_23 = np.array([[True, False, True], [False, False, True]])


def both(idx):
    """The index in lucid form and torch form (np arrays become tensors of each library)."""
    def conv(e, lib):
        if isinstance(e, np.ndarray):
            if lib == "t":
                return torch.from_numpy(e.copy())
            return lucid.tensor(e)
        if isinstance(e, tuple):
            return tuple(conv(x, lib) for x in e)
        return e
    return conv(idx, "l"), conv(idx, "t")


GET_PATTERNS = [
    0, -1, 1, (1, 2), (1, 2, 3, 4), (-1, -2, -3, -4), slice(None), slice(1, None), slice(None, -1),
    (slice(None), 1), (slice(None), slice(1, 3)), (slice(None), slice(None, None, 2)),
    (slice(0, 2), slice(-2, None), slice(1, 4, 2)), (Ellipsis, 1), (Ellipsis, slice(1, 3)), (1, Ellipsis, 2),
    (None,), (None, 1), (slice(None), None, 1), (Ellipsis, None), (1, None, Ellipsis, None, 2),
    (slice(5, 10),), (slice(-100, 100),), (slice(2, 1),), (),
    np.array([1, 0, 1]), np.array([[0], [1]]), (slice(None), np.array([2, 0])), (Ellipsis, np.array([4, 0, 4])),
    (np.array([0, 1]), np.array([2, 0])), (np.array([0, 1]), slice(None), np.array([1, 3])),
    (np.array([0, 1, 1]), slice(None), slice(1, 3)), (slice(None), np.array([0, 2]), slice(1, 3), np.array([4, 0])),
    (1, np.array([0, 2])), (1, slice(None), np.array([0, 2, 3])), (np.array([0, 1]), 2, np.array([3, 1])),
    (slice(None), np.array([[0, 1], [2, 2]]), np.array([1, 3])), (None, np.array([0, 1]), None, np.array([0, 2])),
    (np.array([0]), slice(None), None, np.array([1])), (np.array([-1, -2]),), np.array(1), (slice(None), np.array(2)),
    np.array([True, False]), (slice(None), MASK_3), (MASK_23,), (MASK_23, slice(1, 3)), (1, MASK_3, 2),
    (Ellipsis, np.array([True, False, False, True, True])), (slice(None), np.array([], dtype=np.int64)),
    np.array([0, 1], dtype=np.int32), [0, 1, 1], [[0, 1], [1, 0]], [True, False], True, (0, False),
    (slice(None), slice(None), slice(None), slice(None)), (np.int64(1), slice(None)),
]


def _ids(p):
    return repr(p).replace(" ", "")[:60]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("idx", GET_PATTERNS, ids=_ids)
def test_getitem_forward_and_grad(idx):
    li, ti = both(idx)
    x = lucid.tensor(A, requires_grad=True)
    tx = torch.tensor(A, requires_grad=True)
    lo, to = x[li], tx[ti]
    assert tuple(lo.shape) == tuple(to.shape), f"{idx}: shape {lo.shape} vs torch {tuple(to.shape)}"
    assert_close(lo, to, 0, 0, f"getitem {idx}")
    w = np.random.default_rng(0).standard_normal(tuple(to.shape))
    (lo * lucid.tensor(w)).sum().backward()
    (to * torch.from_numpy(w)).sum().backward()
    assert_close(x.grad, tx.grad, 1e-12, 1e-12, f"grad of getitem {idx}")


def test_numpy_indices():
    a = np.arange(12.0).reshape(3, 4)
    x, tx = lucid.tensor(a), torch.tensor(a)
    for idx in [np.array([0, 2]), (np.array([[1], [2]]), np.array([0, 3])), np.array(1), np.int64(2),
                (slice(None), np.array([True, False, True, True]))]:
        assert_close(x[idx], tx[idx], 0, 0, f"numpy index {idx}")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool"])
def test_getitem_dtypes(dtype):
    a = (np.arange(60).reshape(3, 4, 5) % 7).astype(np.int64)
    x = lucid.tensor(a).to(getattr(lucid, dtype))
    tx = torch.tensor(a).to(getattr(torch, dtype))
    for idx in [(1, slice(None, None, 2)), (np.array([2, 0, 2]), slice(1, 3)), (slice(None), np.array([1, 3]), 0),
                np.array([True, False, True])]:
        li, ti = both(idx)
        assert_close(x[li], tx[ti], 0, 0, f"{dtype} {idx}")


SET_PATTERNS = [
    (0, ()), (-1, (5,)), ((1, 2), (1, 5)), ((1, 2, 3, 4), ()), (slice(1, None), (3, 4, 5)),
    ((slice(None), slice(None, None, 2)), (1, 4, 5)), ((Ellipsis, 1), (4,)), ((1, Ellipsis, slice(1, 3)), (2,)),
    ((None, 1), (3, 4, 5)), ((), (3, 4, 5)), (Ellipsis, (5,)), ((0, slice(2, 1)), ()),
    (np.array([1, 0]), (3, 4, 5)), (np.array([1, 1]), ()), ((slice(None), np.array([2, 0])), (2, 4, 5)),
    ((np.array([0, 1]), np.array([2, 0])), (4, 5)), ((np.array([0, 1]), slice(None), np.array([1, 3])), (2, 3, 5)),
    ((slice(None), np.array([0, 2]), slice(None), np.array([4, 0])), (2, 4)), (MASK_23, ()), (MASK_23, (4, 5)),
    ((slice(None), MASK_3), (1, 4, 5)), (np.array([True, False]), ()), ((1, np.array([0, 2])), (4, 5)),
    ((slice(None), slice(1, 3), np.array([0, 3])), (2, 2, 2, 5)), ((0, slice(None), np.array([[1], [2]]), 1), ()),
]


@pytest.mark.parametrize("idx,vshape", SET_PATTERNS, ids=[_ids(p) for p in SET_PATTERNS])
def test_setitem_forward_and_grad(idx, vshape):
    li, ti = both(idx)
    rng = np.random.default_rng(3)
    v = rng.standard_normal(vshape)
    x = lucid.tensor(A, requires_grad=True)
    tx = torch.tensor(A, requires_grad=True)
    lv = lucid.tensor(v, requires_grad=True)
    tv = torch.tensor(v, requires_grad=True)
    ly = x * 1.0
    ty = tx * 1.0
    ly[li] = lv
    ty[ti] = tv
    assert_close(ly, ty, 0, 0, f"setitem {idx}")
    w = rng.standard_normal(A.shape)
    (ly * lucid.tensor(w)).sum().backward()
    (ty * torch.from_numpy(w)).sum().backward()
    assert_close(x.grad, tx.grad, 1e-12, 1e-12, f"grad of x in setitem {idx}")
    assert_close(lv.grad, tv.grad, 1e-12, 1e-12, f"grad of value in setitem {idx}")


@pytest.mark.parametrize("value", [2, 2.7, True, -1.5])
@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "uint8", "bool", "float16"])
def test_setitem_scalar_no_grad(dtype, value):
    if dtype == "uint8" and value < 0:
        pytest.skip("torch rejects negative values for uint8 (an overflow check lucid does not make)")
    a = (np.arange(24).reshape(2, 3, 4) % 5).astype(np.int64)
    x = lucid.tensor(a).to(getattr(lucid, dtype))
    tx = torch.tensor(a).to(getattr(torch, dtype))
    for idx in [1, (slice(None), 2), (Ellipsis, np.array([0, 3])), (np.array([1, 0]), slice(1, 3), 1),
                a % 2 == 0, (0, a[0] > 2)]:
        li, ti = both(idx)
        x[li] = value
        tx[ti] = value
        assert_close(x, tx, 0, 0, f"{dtype} x[{idx}] = {value}")


def test_setitem_tensor_values_and_casts():
    x = lucid.zeros(3, 4) if hasattr(lucid, "zeros") else lucid.tensor(np.zeros((3, 4), np.float32))
    tx = torch.zeros(3, 4)
    x[1] = lucid.tensor([1, 2, 3, 4])  # int64 into float32
    tx[1] = torch.tensor([1, 2, 3, 4])
    x[:, 0] = lucid.tensor(9.5, dtype=lucid.float64)  # 0-d tensor
    tx[:, 0] = torch.tensor(9.5, dtype=torch.float64)
    x[[0, 2], 1:3] = lucid.tensor([[7.0], [8.0]])
    tx[[0, 2], 1:3] = torch.tensor([[7.0], [8.0]])
    assert_close(x, tx, 0, 0, "setitem with tensors")
    xi = lucid.tensor(np.zeros((2, 3), np.int64))
    ti = torch.zeros(2, 3, dtype=torch.int64)
    xi[0] = lucid.tensor([1.9, -2.7, 3.2])
    ti[0] = torch.tensor([1.9, -2.7, 3.2])
    assert_close(xi, ti, 0, 0, "float values into int tensor")


def test_setitem_duplicates_accumulate_vs_overwrite():
    x = lucid.tensor(np.zeros(4))
    x.index_put_((lucid.tensor([0, 0, 2]),), lucid.tensor([1.0, 2.0, 3.0]), accumulate=True)
    tx = torch.zeros(4, dtype=torch.float64)
    tx.index_put_((torch.tensor([0, 0, 2]),), torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), accumulate=True)
    assert_close(x, tx, 0, 0, "index_put_ accumulate")


# ---- views ------------------------------------------------------------------------------
def _x():
    return lucid.tensor(np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5))


VIEW_FNS = {
    "int": lambda x: x[1], "slice": lambda x: x[:, 1:3], "step": lambda x: x[..., ::2], "none": lambda x: x[None],
    "ellipsis": lambda x: x[..., 1], "mixed": lambda x: x[1, None, 1:, ..., 2], "all": lambda x: x[:],
    "empty_tuple": lambda x: x[()], "view": lambda x: x.view(6, 20), "view_infer": lambda x: x.view(-1, 5),
    "flatten": lambda x: x.flatten(), "flatten_part": lambda x: x.flatten(1, 2), "unflatten": lambda x: x.unflatten(3, (5, 1)),
    "squeeze": lambda x: x[:, :1].squeeze(), "squeeze_dim": lambda x: x[:, :1].squeeze(1), "unsqueeze": lambda x: x.unsqueeze(2),
    "narrow": lambda x: x.narrow(2, 1, 2), "select": lambda x: x.select(3, 4), "t": lambda x: x[0, 0].t(),
    "mT": lambda x: x.mT, "transpose": lambda x: x.transpose(0, 3), "permute": lambda x: x.permute(3, 2, 1, 0),
    "split": lambda x: x.split(2, 2)[1], "chunk": lambda x: x.chunk(2, 3)[1], "unbind": lambda x: x.unbind(1)[2],
    "unfold": lambda x: x.unfold(3, 2, 1), "movedim": lambda x: x.movedim(0, -1), "swapaxes": lambda x: x.swapaxes(1, 2),
    "expand": lambda x: x[:, :, :, :1].expand(2, 3, 4, 7),
}


@pytest.mark.parametrize("name", sorted(VIEW_FNS))
def test_view_ops_share_storage(name):
    x = _x()
    tx = torch.from_numpy(x.numpy().copy())
    fn = VIEW_FNS[name]
    v = fn(x)
    tv = fn(tx)
    assert v._same_storage(x), f"{name} copied"
    assert tuple(v.shape) == tuple(tv.shape), f"{name}: shape differs from torch"
    # Strides of size-1 dims carry no meaning (and differ with the order torch applies None in).
    assert [s for s, n in zip(v.stride(), v.shape) if n != 1] == [s for s, n in zip(tv.stride(), tv.shape) if n != 1], \
        f"{name}: strides {v.stride()} vs torch {tv.stride()}"
    assert v.storage_offset() == tv.storage_offset()
    assert v.data_ptr() == x.data_ptr() + 4 * tv.storage_offset()
    assert_close(v, tv, 0, 0, name)


def test_writes_through_views():
    x = lucid.tensor(np.zeros((4, 5), np.float32))
    tx = torch.zeros(4, 5)
    for f in (lambda t: t[1:3], lambda t: t[:, 2], lambda t: t.view(2, 10), lambda t: t.t()):
        v, tv = f(x), f(tx)
        v[0] = 3.0
        tv[0] = 3.0
        v[..., -1] += 1.0 if False else 0.0
    v = x[1:]
    v[[0, 2], [1, 4]] = 7.0  # IndexPut on a view writes into the base
    tv = tx[1:]
    tv[[0, 2], [1, 4]] = 7.0
    x[2][1] = -1.0
    tx[2][1] = -1.0
    assert_close(x, tx, 0, 0, "writes through views")


def test_advanced_indexing_copies():
    x = _x()
    for f in (lambda t: t[[0, 1]], lambda t: t[lucid.tensor(t.numpy() > 3)], lambda t: t[:, [1]], lambda t: t.index_select(0, lucid.tensor([1]))):
        assert not f(x)._same_storage(x)


def test_version_counter_bumped_by_setitem():
    x = _x()
    v0 = x._version
    x[0] = 1.0
    x[[0], [1]] = 2.0
    assert x._version == v0 + 2


def test_view_non_viewable_raises():
    x = _x().transpose(0, 3)
    with pytest.raises(RuntimeError, match="view"):
        x.view(-1)
    assert tuple(x.reshape(-1).shape) == (120,)


def test_setitem_on_leaf_requiring_grad_raises():
    x = lucid.tensor(np.zeros(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x[0] = 1.0


# ---- errors -----------------------------------------------------------------------------
def test_negative_step_raises_value_error():
    with pytest.raises(ValueError, match="step"):
        _x()[::-1]
    with pytest.raises(ValueError, match="step"):
        _x()[:, 3:0:-1] = 1.0


@pytest.mark.parametrize("idx,dim,val", [(5, 0, 5), ((0, -4), 1, -4), ((0, 0, 0, 9), 3, 9)])
def test_int_index_out_of_bounds(idx, dim, val):
    with pytest.raises(IndexError, match=rf"index {val} is out of bounds for dimension {dim}"):
        _x()[idx]


def test_tensor_index_out_of_bounds():
    x = _x()
    with pytest.raises(IndexError, match=r"index: index 7 is out of bounds for dimension 1 with size 3"):
        x[:, lucid.tensor([0, 7])]
    with pytest.raises(IndexError, match=r"index_put: index -9"):
        x[:, :, lucid.tensor([-9])] = 0.0
    with pytest.raises(IndexError, match=r"gather: index 4"):
        lucid.gather(lucid.tensor(np.zeros((2, 4))), 1, lucid.tensor([[4]]))
    with pytest.raises(IndexError, match=r"scatter_add: index -1"):
        lucid.scatter_add(lucid.tensor(np.zeros((2, 4))), 0, lucid.tensor([[-1]]), lucid.tensor(np.ones((1, 1))))


def test_bad_index_types_and_shapes():
    x = _x()
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0, 0]
    with pytest.raises(IndexError, match="valid indices"):
        x[1.5]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[lucid.tensor([1.0])]
    with pytest.raises(IndexError, match="mask"):
        x[lucid.tensor(np.ones((3, 3), bool))]
    with pytest.raises(IndexError, match="broadcast"):
        x[:, [0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(ValueError, match="shape mismatch"):
        x[0] = lucid.tensor(np.ones((2, 4, 5)))
    with pytest.raises(ValueError, match="shape mismatch"):
        x[[0, 1]] = lucid.tensor(np.ones(3))


def test_op_argument_errors():
    a, b = lucid.tensor(np.zeros((2, 3))), lucid.tensor(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="dimension 0"):
        lucid.cat([a, b], 1 - 1)
    with pytest.raises(ValueError, match="except in dimension 0"):
        lucid.cat([a, b])
    lucid.cat([a, b], 1)
    with pytest.raises(ValueError, match="same number of dimensions"):
        lucid.cat([a, lucid.tensor(np.zeros((2, 3, 1)))])
    with pytest.raises(ValueError, match="non-empty"):
        lucid.cat([])
    with pytest.raises(TypeError, match="Tensors"):
        lucid.cat([a, 1])
    with pytest.raises(ValueError, match="equal size"):
        lucid.stack([a, b])
    with pytest.raises(ValueError, match="sum to"):
        a.split([1, 1], 1)
    with pytest.raises(IndexError, match="dim"):
        a.squeeze(3)
    with pytest.raises(IndexError, match="dim"):
        a.unsqueeze(4)
    with pytest.raises(ValueError, match="exceeds"):
        a.narrow(1, 2, 2)
    with pytest.raises(IndexError, match="select: index 3"):
        a.select(1, 3)
    with pytest.raises(ValueError, match="1-D"):
        a.index_select(0, lucid.tensor([[0]]))
    with pytest.raises(ValueError, match="at least 2"):
        lucid.tril(lucid.tensor(np.zeros(3)))
    with pytest.raises(ValueError, match="smaller"):
        a.repeat(2)
    with pytest.raises(ValueError, match="same number of dimensions"):
        lucid.gather(a, 0, lucid.tensor([0]))
    with pytest.raises(TypeError, match="int64 or int32"):
        lucid.gather(a, 0, lucid.tensor([[0.0]]))
    from lucid._ops_movement import pad
    with pytest.raises(ValueError, match="divisible by 2"):
        pad(a, (1,))
    with pytest.raises(ValueError, match="less than"):
        pad(lucid.tensor(np.zeros((1, 2, 3))), (3, 0), mode="reflect")
    with pytest.raises(ValueError, match="mode"):
        pad(a, (1, 1), mode="wrap")
    with pytest.raises(ValueError, match="same non-zero length"):
        lucid.roll(a, (1, 2), (0,))
    with pytest.raises(ValueError, match="more than once|multiple times"):
        lucid.flip(a, (0, 0))


# ---- more ops against torch ---------------------------------------------------------------
def test_inplace_variants_match_torch():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 5))
    x, tx = lucid.tensor(a), torch.tensor(a)
    idx = rng.integers(0, 4, (3, 5))
    src = rng.standard_normal((3, 5))
    x.scatter_add_(0, lucid.tensor(idx), lucid.tensor(src))
    tx.scatter_add_(0, torch.tensor(idx), torch.tensor(src))
    x.tril_(1)
    tx.tril_(1)
    x.triu_(-1)
    tx.triu_(-1)
    x.scatter_(1, lucid.tensor([[0], [2], [4], [1]]), 5.0)
    tx.scatter_(1, torch.tensor([[0], [2], [4], [1]]), 5.0)
    assert_close(x, tx, 1e-12, 1e-12, "in-place movement ops")


def test_hstack_vstack_concat_aliases():
    a, b = np.ones((2, 3)), np.zeros((2, 2))
    assert_close(lucid.hstack([lucid.tensor(a), lucid.tensor(b)]), torch.hstack([torch.tensor(a), torch.tensor(b)]), 0, 0)
    c = np.arange(3.0)
    assert_close(lucid.vstack([lucid.tensor(c), lucid.tensor(c)]), torch.vstack([torch.tensor(c), torch.tensor(c)]), 0, 0)
    assert_close(lucid.concat([lucid.tensor(a), lucid.tensor(a)], 1), torch.concat([torch.tensor(a)] * 2, 1), 0, 0)


def test_empty_and_zero_size_cases():
    for f in (lambda L, x: x[2:2], lambda L, x: x[:, []], lambda L, x: L.cat([x[:0], x[:0]]),
              lambda L, x: x.split(3, 0)[0][:0], lambda L, x: L.flip(x[:, :0], (1,)), lambda L, x: x[L.tensor(np.zeros((3, 4), bool))],
              lambda L, x: L.tril(x[:0]), lambda L, x: x[:0].repeat(2, 2)):
        a = np.arange(12.0).reshape(3, 4)
        assert_close(f(lucid, lucid.tensor(a)), f(torch, torch.tensor(a)), 0, 0)


def test_chunk_and_split_shapes_match_torch():
    a = np.zeros((7, 0, 5))
    for args in [(3, 0), (2, 2), (4, 1)]:
        lo = [tuple(t.shape) for t in lucid.tensor(a).chunk(*args)]
        to = [tuple(t.shape) for t in torch.tensor(a).chunk(*args)]
        assert lo == to, (args, lo, to)
    for args in [(3, 0), (2, 2), ([3, 4], 0), (1, 1)]:
        lo = [tuple(t.shape) for t in lucid.tensor(a).split(*args)]
        to = [tuple(t.shape) for t in torch.tensor(a).split(*args)]
        assert lo == to, (args, lo, to)


def test_double_backward_through_indexing():
    a = np.random.default_rng(7).standard_normal((4, 3))
    x = lucid.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    for lib, t in ((lucid, x), (torch, tx)):
        y = (t[[0, 2, 2]] ** 2 if hasattr(t, "__pow__") and lib is torch else t[[0, 2, 2]] * t[[0, 2, 2]]).sum()
        (g,) = lib.autograd.grad(y, t, create_graph=True)
        (g[1:, ::2] * g[1:, ::2]).sum().backward()
    assert_close(x.grad, tx.grad, 1e-10, 1e-10, "double backward through indexing")


# ---- random index patterns ---------------------------------------------------------------
def _random_index(rng, shape):
    items, d, nd, ell = [], 0, len(shape), False
    for _ in range(int(rng.integers(1, nd + 2))):
        r = rng.random()
        if r < 0.1 and not ell:
            items.append(Ellipsis)
            ell, d = True, nd
            continue
        if r < 0.18:
            items.append(None)
            continue
        if d >= nd:
            break
        size = shape[d]
        if r < 0.35:
            items.append(int(rng.integers(-size, size)))
            d += 1
        elif r < 0.6:
            a, b = (int(v) for v in rng.integers(-size - 2, size + 2, 2))
            items.append(slice(a if rng.random() < .7 else None, b if rng.random() < .7 else None, int(rng.integers(1, 4))))
            d += 1
        elif r < 0.85:
            shp = tuple(int(s) for s in rng.integers(1, 3, rng.integers(1, 3))) if rng.random() < .3 else (int(rng.integers(0, 4)),)
            items.append(rng.integers(-size, size, shp))
            d += 1
        else:
            k = min(int(rng.integers(1, 3)), nd - d)
            items.append(rng.random(shape[d:d + k]) < 0.5)
            d += k
    return tuple(items)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("seed", range(6))
def test_random_index_patterns_match_torch(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(40):
        shape = tuple(int(s) for s in rng.integers(1, 5, int(rng.integers(1, 5))))
        a = rng.standard_normal(shape)
        idx = _random_index(rng, shape)
        li, ti = both(idx)
        x, tx = lucid.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        try:
            to = tx[ti]
        except (IndexError, RuntimeError, ValueError):
            with pytest.raises((IndexError, ValueError)):
                x[li]
            continue
        lo = x[li]
        assert_close(lo, to, 0, 0, f"random getitem {shape} {idx}")
        w = rng.standard_normal(tuple(to.shape))
        (lo * lucid.tensor(w)).sum().backward()
        (to * torch.from_numpy(w)).sum().backward()
        assert_close(x.grad, tx.grad, 1e-12, 1e-12, f"random getitem grad {shape} {idx}")
        v = rng.standard_normal(tuple(to.shape))
        ly, ty = lucid.tensor(a), torch.tensor(a)
        ty[ti] = torch.from_numpy(v)
        ly[li] = lucid.tensor(v) if v.ndim else float(v)
        ok = np.allclose(ly.numpy(), ty.numpy())
        dup = any(isinstance(e, np.ndarray) and e.dtype != bool for e in idx)
        assert ok or dup, f"random setitem {shape} {idx}"


def test_nonzero_argwhere_and_repeat_interleave_index_form():
    a = np.array([[0, 1.5, 0], [2, 0, -1]])
    x, tx = lucid.tensor(a), torch.tensor(a)
    assert_close(lucid.nonzero(x), torch.nonzero(tx), 0, 0, "nonzero")
    assert_close(x.argwhere(), tx.argwhere(), 0, 0, "argwhere")
    for lo, to in zip(lucid.nonzero(x, as_tuple=True), torch.nonzero(tx, as_tuple=True)):
        assert_close(lo, to, 0, 0, "nonzero as_tuple")
    assert tuple(lucid.nonzero(lucid.tensor(np.zeros((2, 0)))).shape) == (0, 2)
    r = np.array([2, 0, 3])
    assert_close(lucid.repeat_interleave(lucid.tensor(r)), torch.repeat_interleave(torch.tensor(r)), 0, 0)
    assert lucid.broadcast_shapes((3, 1), (2, 1, 4)) == tuple(torch.broadcast_shapes((3, 1), (2, 1, 4)))
    assert lucid.diagonal(x)._same_storage(x)


def test_iteration_yields_views_of_rows():
    a = np.arange(6.0).reshape(3, 2)
    x = lucid.tensor(a)
    rows = list(x)
    assert len(rows) == 3 and all(r._same_storage(x) for r in rows)
    for r, tr in zip(rows, torch.tensor(a)):
        assert_close(r, tr, 0, 0)
    a0, b0 = x[0]
    assert float(a0) == 0.0 and float(b0) == 1.0
    with pytest.raises(TypeError, match="0-d"):
        iter(lucid.tensor(np.ones(2))[0])


# x[mask] = v with a bool mask over x's leading dims and a one-element v runs as a where() of x's
# shape (no nonzero(), so it compiles): values, dtypes and gradients must still be torch's.
@pytest.mark.parametrize("xdtype,value", [("float64", 2.5), ("float64", "t0"), ("float64", "t1"), ("int64", 3.7),
                                          ("float32", float("-inf")), ("float64", "grad")])
@pytest.mark.parametrize("mshape", [(2, 3, 4, 5), (2, 3), (2,), (0,)])
def test_setitem_bool_mask_fill_matches_torch(xdtype, value, mshape):
    rng = np.random.default_rng(0)
    base = A if mshape != (0,) else np.zeros((0, 3))
    mask = rng.random(mshape) > 0.5
    outs = []
    for lib in (torch, lucid):
        x = lib.tensor(base.astype(xdtype), requires_grad=xdtype == "float64")
        v = {"t0": lib.tensor(-1.0, dtype=lib.float64), "t1": lib.tensor([4.0], dtype=lib.float64),
             "grad": lib.tensor(7.0, dtype=lib.float64, requires_grad=True)}.get(value, value)
        y = x * 1 if x.requires_grad else x.clone()
        y[lib.tensor(mask)] = v
        grads = None
        if y.requires_grad:
            w = lib.tensor(np.arange(y.numel(), dtype=np.float64).reshape(tuple(y.shape)))
            inputs = [x] + ([v] if value == "grad" else [])
            grads = lib.autograd.grad([(y * w).sum()], inputs)
        outs.append((y, grads))
    (ty, tg), (ly, lg) = outs
    assert str(ly.dtype).split(".")[-1] == str(ty.dtype).split(".")[-1]
    np.testing.assert_array_equal(ly.detach().numpy(), ty.detach().numpy())
    if tg is not None:
        for a, b in zip(lg, tg):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_setitem_bool_mask_fill_compiles_and_keeps_rejecting_leaves():
    a = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)

    def mask_logits(x, thresh):
        y = x * 1
        y[y < thresh] = float("-inf")  # nanoGPT's top-k sampling idiom
        return y.softmax(-1)

    f = lucid.compile(mask_logits, strict=True)
    for t in (0.0, 0.5):
        got = f(lucid.tensor(a), lucid.tensor(t))
        want = mask_logits(torch.tensor(a), torch.tensor(t))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    leaf = lucid.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf[leaf > 0] = 0.0
