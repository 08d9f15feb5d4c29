"""Creation and random ops: determinism under a seed, generator state round trips, offsets,
distribution statistics, argument validation (sizes, dtype, device, requires_grad)."""
import math

import numpy as np
import pytest
import torch

import lucid
from harness import assert_close

N = 200_000


def _np(t):
    return t.detach().float().numpy().astype(np.float64) if t.dtype == lucid.bfloat16 else t.detach().numpy().astype(np.float64)


RANDOM_CALLS = {
    "rand": lambda g=None: lucid.rand(1000, generator=g),
    "rand64": lambda g=None: lucid.rand(1000, dtype=lucid.float64, generator=g),
    "randn": lambda g=None: lucid.randn(999, generator=g),
    "randn64": lambda g=None: lucid.randn(3, 5, dtype=lucid.float64, generator=g),
    "randint": lambda g=None: lucid.randint(-5, 50, (1000,), generator=g),
    "normal_": lambda g=None: lucid.empty(1000).normal_(1.0, 2.0, generator=g),
    "uniform_": lambda g=None: lucid.empty(1000).uniform_(-1.0, 3.0, generator=g),
    "bernoulli_": lambda g=None: lucid.empty(1000).bernoulli_(0.4, generator=g),
    "normal": lambda g=None: lucid.normal(0.0, 1.0, (1000,), generator=g),
    "randperm": lambda g=None: lucid.randperm(1000, generator=g),
    "bernoulli": lambda g=None: lucid.bernoulli(lucid.full((1000,), 0.5), generator=g),
}


@pytest.mark.parametrize("name", list(RANDOM_CALLS))
def test_same_seed_same_numbers_and_calls_differ(name):
    f = RANDOM_CALLS[name]
    lucid.manual_seed(1234)
    a, b = f(), f()
    lucid.manual_seed(1234)
    c, d = f(), f()
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    np.testing.assert_array_equal(b.numpy(), d.numpy())
    assert not np.array_equal(a.numpy(), b.numpy())
    lucid.manual_seed(4321)
    assert not np.array_equal(f().numpy(), a.numpy())
    # A private generator with the same seed gives the default generator's stream.
    g = lucid.Generator().manual_seed(1234)
    np.testing.assert_array_equal(f(g).numpy(), a.numpy())
    np.testing.assert_array_equal(f(g).numpy(), b.numpy())


def test_generator_state_round_trip_and_offsets():
    g = lucid.Generator()
    g.manual_seed(7)
    assert g.initial_seed() == 7 and g._offset == 0
    lucid.rand(10, generator=g)
    assert g._offset == 12  # 10 draws, rounded up to a whole Philox block
    lucid.rand(10, dtype=lucid.float64, generator=g)
    assert g._offset == 12 + 20
    lucid.randn(5, generator=g)  # 3 pairs x 2 draws
    assert g._offset == 32 + 8
    state = g.get_state()
    assert state.dtype == lucid.uint8 and state.numel() == 16
    a = lucid.randn(100, generator=g)
    g.set_state(state)
    np.testing.assert_array_equal(lucid.randn(100, generator=g).numpy(), a.numpy())
    # Default generator through lucid.random.
    lucid.manual_seed(99)
    s = lucid.random.get_rng_state()
    x = lucid.rand(50)
    lucid.random.set_rng_state(s)
    np.testing.assert_array_equal(lucid.rand(50).numpy(), x.numpy())
    with lucid.random.fork_rng():
        lucid.rand(1000)
    np.testing.assert_array_equal(lucid.rand(50).numpy(), _second_after(s))
    assert lucid.initial_seed() == 99
    assert isinstance(lucid.manual_seed(3), lucid.Generator)
    with pytest.raises(TypeError, match="set_state"):
        g.set_state(lucid.zeros(4))


def _second_after(state):
    # The second rand(50) drawn from `state`.
    g = lucid.Generator()
    g.set_state(state)
    lucid.rand(50, generator=g)
    return lucid.rand(50, generator=g).numpy()


def test_seed_is_random_and_negative_seeds_wrap():
    g = lucid.Generator()
    s1 = g.seed()
    s2 = g.seed()
    assert s1 != s2 and g.initial_seed() == s2
    g.manual_seed(-1)
    assert g.initial_seed() == 2**64 - 1


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_uniform_statistics(dtype):
    lucid.manual_seed(0)
    x = _np(lucid.rand(N, dtype=getattr(lucid, dtype)))
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.01
    assert abs(x.std() - math.sqrt(1 / 12)) < 0.01
    hist = np.histogram(x, bins=8, range=(0, 1))[0] / N
    assert np.all(np.abs(hist - 1 / 8) < 0.01)
    y = _np(lucid.empty(N, dtype=getattr(lucid, dtype)).uniform_(-3, 5))
    assert y.min() >= -3 and y.max() <= 5 and abs(y.mean() - 1) < 0.05


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_normal_statistics(dtype):
    lucid.manual_seed(1)
    x = _np(lucid.randn(N + 1, dtype=getattr(lucid, dtype)))  # odd: the last pair is half used
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01
    assert abs(np.mean(np.abs(x) < 1) - 0.6827) < 0.01
    assert abs(np.mean(np.abs(x) < 2) - 0.9545) < 0.01
    assert abs(np.mean(x ** 3)) < 0.05 and abs(np.mean(x ** 4) - 3) < 0.1  # skew 0, kurtosis 3
    assert np.isfinite(x).all()
    y = _np(lucid.empty(N, dtype=getattr(lucid, dtype)).normal_(2.0, 3.0))
    assert abs(y.mean() - 2) < 0.05 and abs(y.std() - 3) < 0.05
    z = _np(lucid.normal(-1.0, 0.5, (N,), dtype=getattr(lucid, dtype)))
    assert abs(z.mean() + 1) < 0.01 and abs(z.std() - 0.5) < 0.01


def test_normal_with_tensor_mean_and_std():
    lucid.manual_seed(2)
    mean = lucid.tensor([0.0, 10.0, -10.0]).reshape(3, 1).expand(3, 50000)
    z = lucid.normal(mean, 2.0).numpy()
    np.testing.assert_allclose(z.mean(1), [0, 10, -10], atol=0.05)
    np.testing.assert_allclose(z.std(1), [2, 2, 2], atol=0.05)


def test_randint_bounds_and_statistics():
    lucid.manual_seed(3)
    x = lucid.randint(-3, 7, (N,)).numpy()
    assert x.dtype == np.int64 and x.min() == -3 and x.max() == 6
    counts = np.bincount(x + 3) / N
    assert np.all(np.abs(counts - 0.1) < 0.01)
    y = lucid.randint(5, (1000,), dtype=lucid.int32).numpy()
    assert y.dtype == np.int32 and y.min() == 0 and y.max() == 4
    big = lucid.randint(-2**62, 2**62, (N,)).numpy()
    assert big.min() < -2**61 and big.max() > 2**61  # more than 32 random bits
    assert abs(big.astype(np.float64).mean()) / 2**62 < 0.01
    z = lucid.randint(low=2, high=4, size=(3, 2)).numpy()
    assert z.shape == (3, 2) and set(np.unique(z)) <= {2, 3}
    w = lucid.randint_like(lucid.zeros(100, dtype=lucid.int32), 3).numpy()
    assert w.dtype == np.int32 and w.max() <= 2
    with pytest.raises(ValueError, match="randint"):
        lucid.randint(5, 5, (2,))


def test_bernoulli_statistics():
    lucid.manual_seed(4)
    x = lucid.empty(N).bernoulli_(0.3).numpy()
    assert set(np.unique(x)) == {0.0, 1.0} and abs(x.mean() - 0.3) < 0.01
    p = lucid.tensor(np.repeat([[0.1], [0.9]], 50000, axis=1).astype(np.float32))
    y = lucid.bernoulli(p).numpy()
    np.testing.assert_allclose(y.mean(1), [0.1, 0.9], atol=0.01)
    assert lucid.bernoulli(p, 0.5).numpy().mean() == pytest.approx(0.5, abs=0.01)
    mask = lucid.empty(N, dtype=lucid.bool).bernoulli_(0.8)  # a dropout keep-mask
    assert mask.dtype == lucid.bool and abs(mask.numpy().mean() - 0.8) < 0.01
    assert lucid.zeros(10).bernoulli_(0.0).numpy().sum() == 0
    assert lucid.zeros(10).bernoulli_(1.0).numpy().sum() == 10
    with pytest.raises(ValueError, match="bernoulli"):
        lucid.zeros(3).bernoulli_(1.5)


def test_in_place_random_on_a_strided_view():
    base = lucid.zeros(6, 4)
    v = base.transpose(0, 1)
    lucid.manual_seed(5)
    v.normal_()
    assert (base.numpy() != 0).all()
    lucid.manual_seed(5)
    c = lucid.zeros(4, 6).normal_()
    np.testing.assert_array_equal(v.numpy(), c.numpy())  # logical element order, not memory order
    assert base._version > 0


def test_random_argument_validation():
    with pytest.raises(TypeError, match="rand"):
        lucid.rand(3, dtype=lucid.int64)
    with pytest.raises(TypeError, match="normal"):
        lucid.zeros(3, dtype=lucid.int64).normal_()
    with pytest.raises(ValueError, match="std"):
        lucid.zeros(3).normal_(0, -1)
    with pytest.raises(ValueError, match="uniform_"):
        lucid.zeros(3).uniform_(2, 1)


FACTORIES = {
    "zeros": lambda **k: lucid.zeros(2, 3, **k),
    "ones": lambda **k: lucid.ones((2, 3), **k),
    "empty": lambda **k: lucid.empty(2, **k),
    "full": lambda **k: lucid.full((2,), 1.5, **k),
    "arange": lambda **k: lucid.arange(0.0, 3.0, **k),
    "linspace": lambda **k: lucid.linspace(0, 1, 5, **k),
    "eye": lambda **k: lucid.eye(3, **k),
    "rand": lambda **k: lucid.rand(3, **k),
    "randn": lambda **k: lucid.randn(3, **k),
    "zeros_like": lambda **k: lucid.zeros_like(lucid.ones(2), **k),
    "ones_like": lambda **k: lucid.ones_like(lucid.ones(2), **k),
    "full_like": lambda **k: lucid.full_like(lucid.ones(2), 3.0, **k),
    "empty_like": lambda **k: lucid.empty_like(lucid.ones(2), **k),
    "rand_like": lambda **k: lucid.rand_like(lucid.ones(2), **k),
    "randn_like": lambda **k: lucid.randn_like(lucid.ones(2), **k),
}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_factory_device_and_requires_grad(name):
    f = FACTORIES[name]
    assert f(device="cpu").device == "cpu"
    if lucid.cuda.is_available():
        assert f(device="cuda").device == "cuda:0" and f(device="cuda:0").device == "cuda:0"
    else:  # no backend (CPU-only build: NotImplementedError) or no device (RuntimeError)
        with pytest.raises((NotImplementedError, RuntimeError), match="cuda"):
            f(device="cuda")
        with pytest.raises((NotImplementedError, RuntimeError)):
            f(device="cuda:0")
    with pytest.raises(ValueError, match="device"):
        f(device="tpu")
    t = f(requires_grad=True)
    assert t.requires_grad and t.is_leaf
    assert not f().requires_grad
    with pytest.raises(TypeError, match="unexpected keyword"):
        f(colour="red")


def test_factory_sizes_and_dtypes_match_torch():
    for args in [(2, 3), ((2, 3),), ([2, 3],), ((),), (0,), (np.int64(2), 3)]:
        assert lucid.zeros(*args).shape == tuple(torch.zeros(*args).shape)
        assert lucid.ones(*args).dtype == lucid.float32
    assert lucid.zeros(size=(4, 1)).shape == (4, 1)
    assert lucid.arange(5).dtype == lucid.int64
    assert lucid.arange(5.0).dtype == lucid.float32
    assert lucid.arange(0, 5, 0.5).dtype == lucid.float32
    assert lucid.arange(lucid.tensor(4)).dtype == lucid.int64
    assert_close(lucid.arange(lucid.tensor(1.5), 4), torch.arange(torch.tensor(1.5), 4), 0, 0)
    lucid.set_default_dtype(lucid.float64)
    try:
        assert lucid.arange(1.0).dtype == lucid.float64
        assert lucid.zeros(2).dtype == lucid.float64
        assert lucid.rand(2).dtype == lucid.float64
        assert lucid.full((1,), 2.5).dtype == lucid.float64
    finally:
        lucid.set_default_dtype(lucid.float32)
    assert lucid.ones(2).new_zeros(3, dtype=lucid.int32).dtype == lucid.int32
    assert lucid.ones(2, dtype=lucid.float64).new_full((2,), 4).dtype == lucid.float64
    assert lucid.ones(2, dtype=lucid.float16).new_ones((1, 2)).shape == (1, 2)
    assert lucid.ones(2).new_empty(5).shape == (5,)
    for name in ("zeros", "ones", "empty", "rand", "randn"):
        with pytest.raises(ValueError, match=f"{name}: argument 'size'"):
            getattr(lucid, name)(-1, 2)
    with pytest.raises(ValueError, match="full: argument 'size'"):
        lucid.full((2, -3), 1.0)
    with pytest.raises(ValueError, match="randint: argument 'size'"):
        lucid.randint(3, (-1,))
    with pytest.raises(TypeError, match="zeros"):
        lucid.zeros(2.5)
    with pytest.raises(TypeError, match="requires_grad_"):
        lucid.zeros(2, dtype=lucid.int64, requires_grad=True)


def test_arange_linspace_eye_errors():
    with pytest.raises(ValueError, match="step"):
        lucid.arange(0, 5, 0)
    with pytest.raises(ValueError, match="arange: upper bound"):
        lucid.arange(5, 0, 1)
    with pytest.raises(ValueError, match="linspace"):
        lucid.linspace(0, 1, -1)
    with pytest.raises(ValueError, match="eye"):
        lucid.eye(-1)
    with pytest.raises(TypeError, match="arange"):
        lucid.arange()


def test_arange_long_float_ranges_match_torch():
    # PyTorch's vectorised kernel rounds in the output type per SIMD lane group; we compute in
    # double and round once, so the results agree to an ulp of the largest value.
    for args in [(0, 1, 0.001), (-3.3, 7.7, 0.37), (1e6, 1e6 + 100, 0.7)]:
        for dt, eps in (("float32", 2**-23), ("float64", 2**-52)):
            tol = 2 * eps * max(abs(args[0]), abs(args[1]))
            assert_close(lucid.arange(*args, dtype=getattr(lucid, dt)), torch.arange(*args, dtype=getattr(torch, dt)), tol, 0)
    assert_close(lucid.linspace(-7, 3, 1001), torch.linspace(-7, 3, 1001), 1e-6, 0)
    assert_close(lucid.linspace(-7, 3, 1001, dtype=lucid.float64), torch.linspace(-7, 3, 1001, dtype=torch.float64), 1e-14, 0)


def test_randperm_is_a_uniform_permutation():
    lucid.manual_seed(6)
    for n in (0, 1, 2, 17, 1000):
        p = lucid.randperm(n).numpy()
        assert p.dtype == np.int64
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    first = np.array([lucid.randperm(4)[0].item() if hasattr(lucid.Tensor, "__getitem__") else lucid.randperm(4).numpy()[0]
                      for _ in range(8000)])
    np.testing.assert_allclose(np.bincount(first, minlength=4) / 8000, 0.25, atol=0.02)
    assert lucid.randperm(5, dtype=lucid.float32).dtype == lucid.float32
    with pytest.raises(ValueError, match="randperm"):
        lucid.randperm(-1)


def test_bernoulli_in_place_with_probability_tensor():
    lucid.manual_seed(7)
    x = lucid.zeros(2, 50000)
    x.bernoulli_(lucid.tensor([[0.2], [0.7]]))
    np.testing.assert_allclose(x.numpy().mean(1), [0.2, 0.7], atol=0.01)
    with pytest.raises(ValueError, match="bernoulli"):
        lucid.zeros(3).bernoulli_(lucid.tensor([0.5, 0.5]))


def test_random_ops_are_non_differentiable_random_lowering_ops():
    reg = {o["name"]: o for o in lucid._C._op_registry()}
    for name in ("Uniform", "Normal", "RandInt", "Bernoulli", "RandPerm"):
        assert reg[name]["lowering"] == 4, name  # Lowering::Random
        assert not reg[name]["differentiable"], name
    for name in ("Empty", "Arange", "Linspace", "Eye", "Argmax", "Argmin", "All", "Any"):
        assert not reg[name]["differentiable"], name


def test_random_ops_under_grad_mode_do_not_record_history():
    w = lucid.zeros(3, 3, requires_grad=True)
    with lucid.no_grad():
        w.normal_()
        w.uniform_(-1, 1)
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    x = lucid.rand(3, requires_grad=True)
    assert x.grad_fn is None and x.requires_grad
