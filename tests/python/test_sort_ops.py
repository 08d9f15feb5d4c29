"""The sort family, cumprod, multinomial, log2/log10 and isclose/allclose beyond the spec table:
bad input (the same exception type as torch, with a message naming the argument), zero-size
inputs, return types, cumprod's double backward with zeros, multinomial's distribution and RNG
stream (eager and compiled), WeightedRandomSampler, and every op under lucid.compile (compiled
== eager, or a recorded fallback where the output size depends on the data)."""
import pickle

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from harness import as_numpy
from lucid.utils.data import WeightedRandomSampler


def close(a, b, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(as_numpy(a), as_numpy(b), rtol=rtol, atol=atol)


def both_raise(lucid_call, torch_call, exc, *words):
    """lucid and torch raise the same exception type; lucid's message names `words`."""
    with pytest.raises(exc):
        torch_call(torch)
    with pytest.raises(exc) as info:
        lucid_call(lucid)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"


X3 = [3.0, 1.0, 2.0]


# ---- bad input ------------------------------------------------------------------------------------
def test_topk_k_beyond_the_dim_size_raises():
    both_raise(lambda m: m.topk(m.tensor(X3), 4), lambda t: t.topk(t.tensor(X3), 4), RuntimeError, "topk", "'k'", "k=4")


def test_topk_negative_k_raises():
    both_raise(lambda m: m.topk(m.tensor(X3), -1), lambda t: t.topk(t.tensor(X3), -1), RuntimeError, "topk", "'k'")


def test_topk_dim_out_of_range_raises():
    both_raise(lambda m: m.topk(m.tensor(X3), 1, dim=2), lambda t: t.topk(t.tensor(X3), 1, dim=2), IndexError, "topk",
               "'dim'")


def test_topk_of_bool_raises_as_torch():
    both_raise(lambda m: m.topk(m.tensor([True, False]), 1), lambda t: t.topk(t.tensor([True, False]), 1), RuntimeError,
               "topk", "bool")


def test_sort_and_argsort_dim_out_of_range_raise():
    both_raise(lambda m: m.sort(m.ones(2, 3), dim=2), lambda t: t.sort(t.ones(2, 3), dim=2), IndexError, "sort", "'dim'")
    both_raise(lambda m: m.argsort(m.ones(2, 3), dim=-3), lambda t: t.argsort(t.ones(2, 3), dim=-3), IndexError, "sort")


def test_median_over_an_empty_dim_raises_and_of_bool_is_not_implemented():
    both_raise(lambda m: m.median(m.zeros(2, 0), 1), lambda t: t.median(t.zeros(2, 0), 1), IndexError, "median",
               "non-zero size")
    both_raise(lambda m: m.nanmedian(m.zeros(0, 3), 0), lambda t: t.nanmedian(t.zeros(0, 3), 0), IndexError, "nanmedian")
    both_raise(lambda m: m.median(m.tensor([True])), lambda t: t.median(t.tensor([True])), NotImplementedError, "median",
               "bool")


@pytest.mark.parametrize("weights", [[1.0, -1.0], [1.0, float("inf")], [float("nan"), 1.0], [[1.0, 2.0], [0.5, -0.1]]])
def test_multinomial_rejects_negative_or_non_finite_weights(weights):
    both_raise(lambda m: m.multinomial(m.tensor(weights), 1), lambda t: t.multinomial(t.tensor(weights), 1),
               RuntimeError, "multinomial", "'input'", "non-negative")


@pytest.mark.parametrize("weights", [[0.0, 0.0], [[1.0, 2.0], [0.0, 0.0]]])
def test_multinomial_rejects_all_zero_weights(weights):
    both_raise(lambda m: m.multinomial(m.tensor(weights), 1, True), lambda t: t.multinomial(t.tensor(weights), 1, True),
               RuntimeError, "multinomial", "'input'", "all-zero")


def test_multinomial_bad_num_samples_shape_and_dtype_raise():
    w = [1.0, 2.0, 3.0]
    both_raise(lambda m: m.multinomial(m.tensor(w), 4), lambda t: t.multinomial(t.tensor(w), 4), RuntimeError,
               "multinomial", "'num_samples'", "without replacement")
    both_raise(lambda m: m.multinomial(m.tensor(w), 0), lambda t: t.multinomial(t.tensor(w), 0), RuntimeError,
               "'num_samples'", "positive")
    both_raise(lambda m: m.multinomial(m.ones(2, 2, 2), 1), lambda t: t.multinomial(t.ones(2, 2, 2), 1), RuntimeError,
               "'input'", "1 or 2 dim")
    both_raise(lambda m: m.multinomial(m.tensor(1.0), 1), lambda t: t.multinomial(t.tensor(1.0), 1), RuntimeError,
               "'input'")
    both_raise(lambda m: m.multinomial(m.ones(3, dtype=m.int64), 1), lambda t: t.multinomial(t.ones(3, dtype=t.int64), 1),
               RuntimeError, "'input'", "floating")


def test_multinomial_error_draws_nothing():
    lucid.manual_seed(3)
    state = lucid.get_rng_state()
    with pytest.raises(RuntimeError):
        lucid.multinomial(lucid.tensor([1.0, 2.0]), 3)
    assert lucid.get_rng_state().numpy().tolist() == state.numpy().tolist()


def test_isclose_bad_arguments_raise():
    both_raise(lambda m: m.isclose(m.tensor([1, 2]), m.tensor([1.0, 2.0])),
               lambda t: t.isclose(t.tensor([1, 2]), t.tensor([1.0, 2.0])), RuntimeError, "isclose", "same dtype")
    both_raise(lambda m: m.isclose(m.ones(2), m.ones(2), rtol=-1.0), lambda t: t.isclose(t.ones(2), t.ones(2), rtol=-1.0),
               RuntimeError, "'rtol'")
    both_raise(lambda m: m.allclose(m.ones(2), m.ones(2), atol=-1.0), lambda t: t.allclose(t.ones(2), t.ones(2), atol=-1.0),
               RuntimeError, "'atol'")


def test_unique_and_cumprod_bad_dims_raise():
    both_raise(lambda m: m.unique(m.tensor(3), dim=0), lambda t: t.unique(t.tensor(3), dim=0), IndexError, "unique",
               "'dim'")
    both_raise(lambda m: m.unique(m.ones(2), dim=1), lambda t: t.unique(t.ones(2), dim=1), IndexError, "unique", "'dim'")
    both_raise(lambda m: m.cumprod(m.ones(2), 1), lambda t: t.cumprod(t.ones(2), 1), IndexError, "cumprod", "'dim'")
    both_raise(lambda m: m.unique(m.ones(3, 0), dim=0), lambda t: t.unique(t.ones(3, 0), dim=0), RuntimeError, "unique",
               "0 sized")


# ---- zero-size inputs and return types --------------------------------------------------------------------
def test_zero_size_inputs_behave_as_torch():
    for lib in (lucid, torch):
        assert lib.multinomial(lib.ones(0, 3), 2).shape == (0, 2)
        assert lib.sort(lib.zeros(2, 0)).values.shape == (2, 0)
        assert lib.topk(lib.zeros(0, 4), 0).indices.shape == (0, 0)
        assert lib.median(lib.zeros(0, 4), 1).values.shape == (0,)
        assert lib.cumprod(lib.zeros(0, 4), 1).shape == (0, 4)
    assert np.isnan(lucid.median(lucid.zeros(0)).item()) and np.isnan(torch.median(torch.zeros(0)).item())
    assert lucid.unique(lucid.zeros(0, 3), dim=0, return_counts=True)[0].shape == (0, 3)


def test_results_are_named_tuples_that_unpack_and_pickle():
    x = lucid.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    for r, name in [(x.topk(2), "topk"), (x.sort(), "sort"), (x.median(1), "median"), (x.nanmedian(0), "nanmedian")]:
        assert isinstance(r, tuple) and len(r) == 2
        values, indices = r
        assert values is r.values and indices is r.indices and r[0] is values
        assert type(r) is getattr(lucid.return_types, name)
        assert repr(r).startswith(f"{name}(values=")
        back = pickle.loads(pickle.dumps(r))
        close(back.values, r.values)
        assert type(back) is type(r)
    assert type(x.max(1)) is lucid.return_types.max


def test_unique_returns_a_tensor_or_a_plain_tuple():
    x = lucid.tensor([2, 1, 2])
    assert isinstance(lucid.unique(x), lucid.Tensor)
    r = lucid.unique(x, return_counts=True)
    assert type(r) is tuple and len(r) == 2


def test_indices_outputs_carry_no_gradient_and_values_do():
    x = lucid.tensor([3.0, 1.0, 2.0], requires_grad=True)
    v, i = x.topk(2)
    assert v.requires_grad and not i.requires_grad and i.dtype == lucid.int64
    assert not lucid.argsort(x).requires_grad
    assert not lucid.unique(x).requires_grad


# ---- gradients beyond the spec table ------------------------------------------------------------------------
def test_cumprod_double_backward_with_zeros_matches_torch():
    data = np.array([[2.0, 0.0, 3.0, 0.0, 4.0], [0.5, 1.5, -2.0, 0.0, 3.0], [0.0, 2.0, 3.0, 1.0, 0.5]])
    w = np.random.default_rng(0).standard_normal(data.shape)
    grads = []
    for lib in (lucid, torch):
        x = lib.tensor(data, dtype=lib.float64, requires_grad=True)
        y = lib.cumprod(x, 1)
        (g,) = lib.autograd.grad([(y * lib.tensor(w)).sum()], [x], create_graph=True)
        (gg,) = lib.autograd.grad([(g * g).sum()], [x])
        grads.append((g, gg))
    close(grads[0][0], grads[1][0], 1e-12, 1e-12)
    close(grads[0][1], grads[1][1], 1e-12, 1e-12)


def test_sort_topk_median_double_backward_match_torch():
    data = np.random.default_rng(1).permutation(20).reshape(4, 5).astype(np.float64) * 0.5
    res = []
    for lib in (lucid, torch):
        x = lib.tensor(data, requires_grad=True)
        out = x.sort(1).values[:, :3].sum() + (x.topk(2, 0).values ** 2).sum() + (x.median(1).values ** 3).sum()
        (g,) = lib.autograd.grad([out], [x], create_graph=True)
        (gg,) = lib.autograd.grad([(g * x).sum()], [x])
        res.append((g, gg))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


# ---- multinomial --------------------------------------------------------------------------------------------
def test_multinomial_with_replacement_follows_the_weights():
    lucid.manual_seed(0)
    w = np.array([1.0, 0.0, 2.0, 3.0, 4.0])
    n = 40000
    s = lucid.multinomial(lucid.tensor(w), n, replacement=True).numpy()
    assert s.dtype == np.int64 and s.shape == (n,)
    freq = np.bincount(s, minlength=5) / n
    p = w / w.sum()
    assert freq[1] == 0
    assert np.all(np.abs(freq - p) < 4 * np.sqrt(p * (1 - p) / n) + 1e-12), freq


def test_multinomial_without_replacement_draws_distinct_categories_in_weight_order():
    lucid.manual_seed(1)
    w = lucid.tensor([[1.0, 0.0, 3.0, 6.0], [5.0, 1.0, 0.0, 0.0]])
    firsts = np.zeros((2, 4))
    for _ in range(3000):
        s = lucid.multinomial(w, 4).numpy()
        for r in range(2):
            assert sorted(s[r]) == [0, 1, 2, 3]
        assert s[0, 3] == 1 and set(s[1, 2:]) == {2, 3}  # zero weights come last
        firsts[0, s[0, 0]] += 1
        firsts[1, s[1, 0]] += 1
    p = w.numpy() / w.numpy().sum(1, keepdims=True)
    assert np.all(np.abs(firsts / 3000 - p) < 0.04), firsts / 3000
    # The second draw of row 0 given a first of 3 is 2 with probability 3 / 4 (the race's law).


def test_multinomial_is_seeded_advances_the_generator_and_takes_a_generator():
    w = lucid.tensor([0.2, 0.3, 0.5, 1.0, 2.0])
    lucid.manual_seed(5)
    a, b = lucid.multinomial(w, 50, True), w.multinomial(50, True)
    lucid.manual_seed(5)
    close(lucid.multinomial(w, 50, True), a)
    assert not np.array_equal(a.numpy(), b.numpy())
    g1, g2 = lucid.Generator(), lucid.Generator()
    g1.manual_seed(9)
    g2.manual_seed(9)
    state = lucid.get_rng_state().numpy().tolist()
    close(lucid.multinomial(w, 5, generator=g1), w.multinomial(5, generator=g2))
    assert lucid.get_rng_state().numpy().tolist() == state  # a private generator leaves the default one alone


def test_multinomial_compiled_advances_the_stream_as_eager():
    w = lucid.tensor([[1.0, 2.0, 3.0, 4.0], [4.0, 0.0, 1.0, 1.0]])

    def fn(x):
        return lucid.multinomial(x, 3), lucid.multinomial(x[0], 6, True), lucid.rand(2)

    f = lucid.compile(fn, strict=True)
    lucid.manual_seed(11)
    eager = [fn(w) for _ in range(4)]
    lucid.manual_seed(11)
    comp = [f(w) for _ in range(4)]  # call 0 traces, calls 1-3 run the executable
    for e, c in zip(eager, comp):
        for a, b in zip(e, c):
            close(a, b)
    assert f.cache_info()["entries"] == 1 and f.cache_info()["eager_only"] == {}
    assert "rng_draws" in f.ir()
    assert not all(np.array_equal(comp[1][1].numpy(), comp[k][1].numpy()) for k in (2, 3))


def test_multinomial_compiled_checks_the_weights_at_every_call():
    f = lucid.compile(lambda x: lucid.multinomial(x, 1), strict=True)
    f(lucid.tensor([1.0, 2.0]))
    f(lucid.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="non-negative"):
        f(lucid.tensor([1.0, -2.0]))


# ---- WeightedRandomSampler -----------------------------------------------------------------------------------
def test_weighted_random_sampler_draws_by_weight_reproducibly():
    lucid.manual_seed(0)
    s = WeightedRandomSampler([0.1, 0.0, 0.9, 2.0], 2000)
    a = list(s)
    assert len(s) == 2000 and len(a) == 2000 and all(isinstance(i, int) for i in a)
    assert 1 not in a and a.count(3) > a.count(2) > a.count(0)
    lucid.manual_seed(0)
    assert list(s) == a
    assert list(s) != a  # the default generator advanced


def test_weighted_random_sampler_without_replacement_and_with_a_generator():
    g = lucid.Generator()
    g.manual_seed(4)
    s = WeightedRandomSampler(lucid.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), 5, replacement=False, generator=g)
    assert sorted(s) == [0, 1, 2, 3, 4]
    g.manual_seed(4)
    first = list(s)
    g.manual_seed(4)
    assert list(s) == first
    loader = lucid.utils.data.DataLoader(list(range(5)), batch_size=5, sampler=s)
    assert sorted(next(iter(loader)).tolist()) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("kwargs", [dict(weights=[1.0, 2.0], num_samples=0), dict(weights=[1.0, 2.0], num_samples=2.5),
                                    dict(weights=[1.0, 2.0], num_samples=2, replacement=1),
                                    dict(weights=[[1.0, 2.0]], num_samples=2)])
def test_weighted_random_sampler_bad_arguments_raise_as_torch(kwargs):
    with pytest.raises(ValueError):
        torch.utils.data.WeightedRandomSampler(**kwargs)
    with pytest.raises(ValueError, match="WeightedRandomSampler"):
        WeightedRandomSampler(**kwargs)


# ---- lucid.compile --------------------------------------------------------------------------------------
def _inputs():
    rng = np.random.default_rng(3)
    x = lucid.tensor(rng.permutation(24).reshape(4, 6).astype(np.float32) * 0.5 - 3.0)
    z = lucid.tensor(np.array([[2.0, 0.0, 3.0], [1.0, 2.0, 0.5]], dtype=np.float32))
    return x, z


def _all_ops(x, z):
    v, i = x.sort(1, descending=True)
    tv, ti = lucid.topk(x, 3, dim=0, largest=False)
    mv, mi = x.median(1)
    return (v, i, lucid.argsort(x, 0, stable=True), lucid.msort(x), tv, ti, x.median(), mv, mi,
            lucid.nanmedian(x), lucid.cumprod(z, 1), x.abs().log2(), lucid.log10(x.abs() + 1),
            lucid.isclose(x, x + 1e-6), lucid.isclose(x, x.sort(0).values, equal_nan=True))


def test_every_op_compiles_and_matches_eager():
    x, z = _inputs()
    f = lucid.compile(_all_ops, strict=True)
    eager = _all_ops(x, z)
    for _ in range(2):  # trace, then the cached executable
        for a, b in zip(f(x, z), eager):
            assert a.dtype == b.dtype
            close(a, b)
    assert f.cache_info()["entries"] == 1 and f.cache_info()["eager_only"] == {}
    for op in ("Sort", "TopK", "Median", "MedianDim", "Cumprod", "Log2", "Log10"):
        assert op in f.ir(), op


class SortNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 8)

    def forward(self, x):
        h = self.lin(x)
        top = h.topk(3, dim=1).values
        srt = h.sort(dim=1, descending=True).values[:, :2]
        med = h.median(1).values.unsqueeze(1) + h.median() + h.nanmedian(0).values.sum()
        cp = (h.tanh() * 0.5).cumprod(1)[:, -3:]
        return lucid.cat([top, srt, med, cp, h.abs().log2()[:, :1], (h.abs() + 1).log10()[:, :1]], 1)


def test_compiled_training_step_through_the_sort_ops_matches_eager():
    lucid.manual_seed(0)
    m, ref = SortNet(), SortNet()
    ref.load_state_dict(m.state_dict())
    step = lucid.compile.make_step(m, lambda out, y: ((out - y) ** 2).mean(), strict=True)
    for _ in range(3):
        x, y = lucid.randn(5, 6), lucid.randn(5, 11)
        loss = step(x, y)
        lr = ((ref(x) - y) ** 2).mean()
        loss.backward()
        lr.backward()
        close(loss, lr, 1e-5, 1e-6)
    for (n, p), q in zip(m.named_parameters(), ref.parameters()):
        close(p.grad, q.grad, 1e-4, 1e-6)


def test_unique_and_allclose_under_compile_fall_back_to_eager_with_a_reason():
    x = lucid.tensor([3, 1, 3, 2, 1])

    def fn(t):
        u, inv, cnt = lucid.unique(t, return_inverse=True, return_counts=True)
        return u * 2, inv, cnt, lucid.unique_consecutive(t)

    f = lucid.compile(fn)
    with pytest.warns(UserWarning):
        out = f(x)
    for a, b in zip(out, fn(x)):
        close(a, b)
    assert "unique" in next(iter(f.cache_info()["eager_only"].values()))
    g = lucid.compile(lambda a, b: lucid.tensor(1.0) if lucid.allclose(a, b) else lucid.tensor(0.0))
    with pytest.warns(UserWarning):
        assert g(lucid.ones(3), lucid.ones(3)).item() == 1.0
    assert g(lucid.ones(3), lucid.zeros(3)).item() == 0.0
    assert "allclose" in next(iter(g.cache_info()["eager_only"].values()))


def test_in_place_scans_match_torch():
    data = np.array([[1.0, 2.0, 0.5], [3.0, 0.0, 2.0]])
    res = []
    for lib in (lucid, torch):
        x = lib.tensor(data, requires_grad=True)
        y = x * 1
        assert y.cumprod_(1) is y
        z = (y * 2).cumsum_(0)
        n = lib.tensor([[1, 2], [3, 4]], dtype=lib.int32)
        n.cumsum_(1)
        (g,) = lib.autograd.grad([(z * z).sum()], [x])
        res.append((y, z, n, g))
    for a, b in zip(*res):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        close(a, b)
