"""copy.deepcopy and pickle of tensors, Parameters, Modules and state dicts, against torch: values,
dtype, requires_grad, .grad, Parameter-ness, the best-model checkpoint idiom, TransformerEncoder with
a gelu activation (its layers are deep-copied), and Tensor.data / type_as."""
import copy
import pickle

import numpy as np
import pytest
import torch

import lucid
from harness import LUCID_DTYPES, TORCH_DTYPES, as_numpy

DTYPES = list(TORCH_DTYPES)


def _pair(dtype, shape=(3, 4)):
    rng = np.random.default_rng(0)
    a = np.asarray(rng.standard_normal(shape) * 5)
    if dtype == "bool":
        a = a > 0
    elif dtype in ("int8", "int32", "int64", "uint8"):
        a = np.abs(a).astype(np.int64)
    t = torch.from_numpy(np.asarray(a)).to(TORCH_DTYPES[dtype])
    return lucid.tensor(as_numpy(t)).to(LUCID_DTYPES[dtype]), t


def _same(lo, to):
    assert lo.shape == tuple(to.shape) and str(lo.dtype).split(".")[1] == str(to.dtype).split(".")[1]
    np.testing.assert_array_equal(as_numpy(lo), as_numpy(to))
    assert lo.requires_grad == to.requires_grad


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["plain", "0-d", "zero-size", "transposed", "strided"])
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_tensor_round_trip_matches_torch(dtype, kind, how):
    lo, to = _pair(dtype, {"0-d": (), "zero-size": (0, 3)}.get(kind, (3, 4)))
    if kind == "transposed":
        lo, to = lo.t(), to.t()
    elif kind == "strided":
        lo, to = lo[:, ::2], to[:, ::2]
    fn = (lambda x: pickle.loads(pickle.dumps(x))) if how == "pickle" else copy.deepcopy
    lc, tc = fn(lo), fn(to)
    _same(lc, tc)
    assert not lc._same_storage(lo)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_requires_grad_and_grad_follow_torch(how):
    fn = (lambda x: pickle.loads(pickle.dumps(x))) if how == "pickle" else copy.deepcopy
    lo, to = lucid.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    lo.grad, to.grad = lucid.full((2,), 3.0), torch.full((2,), 3.0)
    lc, tc = fn(lo), fn(to)
    _same(lc, tc)
    assert (lc.grad is None) == (tc.grad is None)  # deepcopy keeps .grad, pickle drops it (torch)
    if tc.grad is not None:
        _same(lc.grad, tc.grad)


def test_tensors_and_parameters_cross_process_boundaries():
    import multiprocessing
    import operator
    ctx = multiprocessing.get_context("spawn")
    t = lucid.tensor([[1.5, -2.0], [3.25, 0.5]]).to(lucid.bfloat16).t()
    with ctx.Pool(1) as pool:
        got = pool.apply(operator.neg, (t,))
    _same(got, -torch.tensor([[1.5, -2.0], [3.25, 0.5]], dtype=torch.bfloat16).t())
    queue = ctx.Queue()
    queue.put(lucid.nn.Parameter(lucid.ones(2)))
    p = queue.get(timeout=60)
    assert isinstance(p, lucid.nn.Parameter) and p.requires_grad


def test_deepcopy_of_non_leaf_raises_like_torch():
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(torch.ones(2, requires_grad=True) * 2)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(lucid.ones(2, requires_grad=True) * 2)


def test_deepcopy_memo_keeps_identity():
    t = lucid.ones(2)
    a, b = copy.deepcopy([t, t])
    assert a is b


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_parameter_round_trip_stays_a_parameter(how, requires_grad):
    fn = (lambda x: pickle.loads(pickle.dumps(x))) if how == "pickle" else copy.deepcopy
    lp = lucid.nn.Parameter(lucid.tensor([1.0, 2.0]), requires_grad=requires_grad)
    tp = torch.nn.Parameter(torch.tensor([1.0, 2.0]), requires_grad=requires_grad)
    lc, tc = fn(lp), fn(tp)
    assert isinstance(lc, lucid.nn.Parameter) and isinstance(tc, torch.nn.Parameter)
    _same(lc, tc)


def _models():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    lm = lucid.nn.Sequential(lucid.nn.Linear(4, 8), lucid.nn.BatchNorm1d(8), lucid.nn.ReLU(), lucid.nn.Linear(8, 2))
    lm.load_state_dict({k: lucid.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return lm, tm


def _train_step(m, opt, x, y, F):
    opt.zero_grad()
    loss = F.mse_loss(m(x), y)
    loss.backward()
    opt.step()


def test_best_model_checkpoint_idiom_matches_torch():
    lm, tm = _models()
    lo, to = lucid.optim.SGD(lm.parameters(), lr=0.1), torch.optim.SGD(tm.parameters(), lr=0.1)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((16, 4)).astype(np.float32), rng.standard_normal((16, 2)).astype(np.float32)
    lx, ly, tx, ty = lucid.tensor(x), lucid.tensor(y), torch.from_numpy(x), torch.from_numpy(y)
    _train_step(lm, lo, lx, ly, lucid.nn.functional)
    _train_step(tm, to, tx, ty, torch.nn.functional)
    lbest, tbest = copy.deepcopy(lm.state_dict()), copy.deepcopy(tm.state_dict())
    for _ in range(3):
        _train_step(lm, lo, lx, ly, lucid.nn.functional)
        _train_step(tm, to, tx, ty, torch.nn.functional)
    lm.load_state_dict(lbest)
    tm.load_state_dict(tbest)
    for (k, lv), (tk, tv) in zip(lm.state_dict().items(), tm.state_dict().items()):
        assert k == tk
        np.testing.assert_allclose(as_numpy(lv), as_numpy(tv), rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_module_round_trip_is_independent(how):
    fn = (lambda x: pickle.loads(pickle.dumps(x))) if how == "pickle" else copy.deepcopy
    lm, tm = _models()
    lm.eval(), tm.eval()
    lc, tc = fn(lm), fn(tm)
    x = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(lc(lucid.tensor(x)).detach().numpy(), tc(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert isinstance(lc[0].weight, lucid.nn.Parameter) and lc[0].weight.requires_grad
    with lucid.no_grad():
        lc[0].weight.fill_(0.0)
    assert float(lm[0].weight.abs().sum()) > 0


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_transformer_encoder_with_functional_activation_copies(activation):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation)
    tm = torch.nn.TransformerEncoder(tl, 2, enable_nested_tensor=False).eval()
    ll = lucid.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation)
    lm = lucid.nn.TransformerEncoder(ll, 2).eval()
    lm.load_state_dict({k: lucid.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((3, 1, 8)).astype(np.float32)
    want = tm(torch.from_numpy(x)).detach().numpy()
    for m in (lm, copy.deepcopy(lm), pickle.loads(pickle.dumps(lm))):
        np.testing.assert_allclose(m(lucid.tensor(x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)


def test_engine_functions_copy_by_reference():
    f = lucid.nn.functional.gelu
    assert copy.deepcopy(f) is f and pickle.loads(pickle.dumps(f)) is f


def test_data_get_is_a_detached_alias_like_torch():
    lp, tp = lucid.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    ld, td = lp.data, tp.data
    assert ld.requires_grad == td.requires_grad and ld.is_leaf == td.is_leaf
    ld[0] = 5.0
    td[0] = 5.0
    _same(lp.detach(), tp.detach())


def test_data_set_replaces_contents_like_torch():
    lp, tp = lucid.nn.Parameter(lucid.zeros(3)), torch.nn.Parameter(torch.zeros(3))
    lp.data = lucid.tensor([1.0, 2.0, 3.0])
    tp.data = torch.tensor([1.0, 2.0, 3.0])
    assert isinstance(lp, lucid.nn.Parameter)
    _same(lp, tp)
    with pytest.raises(TypeError, match="data"):
        lp.data = 3


def test_data_set_with_another_shape_and_dtype_rebinds_like_torch():
    lp, tp = lucid.nn.Parameter(lucid.zeros(3)), torch.nn.Parameter(torch.zeros(3))
    lsrc, tsrc = lucid.arange(12.0).reshape(3, 4), torch.arange(12.0).reshape(3, 4)
    lp.data, tp.data = lsrc[:, 1], tsrc[:, 1]  # a strided view: p takes its geometry
    _same(lp, tp)
    assert lp.stride() == tp.stride() and lp.storage_offset() == tp.storage_offset()
    assert lp.is_leaf and not lp._is_view and isinstance(lp, lucid.nn.Parameter)
    assert lp.data_ptr() == lsrc[:, 1].data_ptr()  # shares the source's storage, as torch
    with lucid.no_grad():
        lp.mul_(10)
    with torch.no_grad():
        tp.mul_(10)
    np.testing.assert_array_equal(as_numpy(lsrc), as_numpy(tsrc))
    lp.data, tp.data = lucid.ones(2, 5, dtype=lucid.float64), torch.ones(2, 5, dtype=torch.float64)
    _same(lp, tp)
    for p, v in ((lp, lucid.ones(4, dtype=lucid.int64)), (tp, torch.ones(4, dtype=torch.int64))):
        with pytest.raises(RuntimeError, match="floating point"):
            p.data = v
    lb, tb = lucid.zeros(2), torch.zeros(2)  # no grad: any dtype, as torch
    lb.data, tb.data = lucid.ones(5, dtype=lucid.int32), torch.ones(5, dtype=torch.int32)
    _same(lb, tb)


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_optimizer_built_before_a_data_swap_updates_the_new_data_like_torch(opt):
    lp, tp = lucid.nn.Parameter(lucid.zeros(3)), torch.nn.Parameter(torch.zeros(3))
    lopt = getattr(lucid.optim, opt)([lp], lr=0.1)
    topt = getattr(torch.optim, opt)([tp], lr=0.1)
    init = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    lp.data, tp.data = lucid.tensor(init.copy()), torch.tensor(init.copy())
    w = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    for _ in range(3):
        for p, o, mod in ((lp, lopt, lucid), (tp, topt, torch)):
            o.zero_grad()
            ((p * mod.tensor(w)) ** 2).sum().backward()
            o.step()
    assert lp.shape == (2, 4) and lp.grad.shape == (2, 4)
    np.testing.assert_allclose(as_numpy(lp), as_numpy(tp), rtol=1e-6, atol=1e-6)
    assert not np.array_equal(as_numpy(lp), init)


@pytest.mark.parametrize("src, dst", [("float32", "int64"), ("int32", "float64"), ("float64", "bfloat16"),
                                      ("bool", "float16")])
def test_type_as_matches_torch(src, dst):
    lo, to = _pair(src)
    lother, tother = _pair(dst)
    _same(lo.type_as(lother), to.type_as(tother))
    with pytest.raises(TypeError, match="type_as"):
        lo.type_as(lucid.float32)


def test_compiled_model_sees_a_data_swap_of_another_shape():
    m = lucid.nn.Linear(3, 2)
    fast = lucid.compile(m)
    with lucid.no_grad():
        fast(lucid.ones(4, 3))
        m.weight.data = lucid.full((2, 3), 0.5)  # same shape, new storage: the entry reads it
        x = lucid.randn(4, 3)
        np.testing.assert_allclose(as_numpy(fast(x)), as_numpy(m(x)), rtol=1e-6)
        m.weight.data = lucid.arange(10.0).reshape(2, 5)  # another shape: traced again
        x = lucid.randn(4, 5)
        np.testing.assert_allclose(as_numpy(fast(x)), as_numpy(m(x)), rtol=1e-6)
