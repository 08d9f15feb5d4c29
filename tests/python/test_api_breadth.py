"""The torch.* / Tensor breadth names that are not ops of the spec table (tests/python/specs/extra.py
and elementwise_math.py hold those): aliases being the very same objects, the generic in-place
form's checks (dtype cast rule, leaf, shape, version counter, gradients), random fills, small
properties, predicates and factories, the counting ops (data-dependent output sizes) and the
bad-input errors. Expected values come from torch."""
import math

import numpy as np
import pytest
import torch

import lucid


def L(a, **k):
    return lucid.tensor(np.asarray(a), **k)


def T(a, **k):
    return torch.tensor(np.asarray(a), **k)


def close(lo, to, atol=1e-6):
    lo = lo.detach().float() if lo.dtype == lucid.bfloat16 else lo.detach()
    np.testing.assert_allclose(np.asarray(lo.numpy(), dtype=np.float64),
                               to.detach().double().numpy(), atol=atol, rtol=1e-6, equal_nan=True)


# ---- aliases are the same objects ----
FUNCTION_ALIASES = [("arccos", "acos"), ("arcsin", "asin"), ("arctan", "atan"), ("arctan2", "atan2"),
                    ("arccosh", "acosh"), ("arcsinh", "asinh"), ("arctanh", "atanh"), ("fix", "trunc"),
                    ("clip", "clamp"), ("concat", "cat"), ("concatenate", "cat"), ("swapaxes", "transpose"),
                    ("swapdims", "transpose"), ("moveaxis", "movedim"), ("row_stack", "vstack"),
                    ("ger", "outer"), ("trapz", "trapezoid"), ("absolute", "abs"), ("divide", "div"),
                    ("true_divide", "div"), ("subtract", "sub"), ("greater", "gt"), ("less_equal", "le"),
                    ("not_equal", "ne"), ("unsafe_chunk", "chunk"), ("unsafe_split", "split")]
METHOD_ALIASES = [("absolute", "abs"), ("absolute_", "abs_"), ("arccos", "acos"), ("arccos_", "acos_"),
                  ("arctan2", "atan2"), ("arctan2_", "atan2_"), ("arctanh_", "atanh_"), ("divide", "div"),
                  ("divide_", "div_"), ("multiply", "mul"), ("multiply_", "mul_"), ("subtract_", "sub_"),
                  ("true_divide_", "div_"), ("greater", "gt"), ("greater_equal_", "ge_"), ("less", "lt"),
                  ("less_equal", "le"), ("not_equal_", "ne_"), ("negative_", "neg_"), ("fix", "trunc"),
                  ("fix_", "trunc_"), ("sgn", "sign"), ("unsafe_chunk", "chunk")]


@pytest.mark.parametrize("alias,name", FUNCTION_ALIASES)
def test_function_alias_is_the_same_object(alias, name):
    assert getattr(lucid, alias) is getattr(lucid, name)


@pytest.mark.parametrize("alias,name", METHOD_ALIASES)
def test_method_alias_is_the_same_object(alias, name):
    assert getattr(lucid.Tensor, alias) is getattr(lucid.Tensor, name)


# ---- the generic in-place form ----
def test_inplace_integer_result_must_be_castable():
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.tensor([1, 2]).logit_()
    with pytest.raises(TypeError, match=r"logit_: result type float32 can't be cast to the desired output type int64"):
        L([1, 2]).logit_()
    with pytest.raises(TypeError, match="sqrt_: result type float32 can't be cast"):
        L([1, 2]).sqrt_()  # an op with a C++ in-place form: the same rule


def test_inplace_same_kind_cast_is_allowed_as_in_torch():
    t = T([0.1, 0.9], dtype=torch.float16).logit_()
    lt = L([0.1, 0.9]).to(lucid.float16).logit_()
    assert lt.dtype == lucid.float16
    close(lt, t, 2e-3)
    t = T([1, 5]).fmod_(3)
    lt = L([1, 5]).fmod_(3)
    assert lt.dtype == lucid.int64 and lt.tolist() == t.tolist()


def test_inplace_leaf_requiring_grad_raises():
    with pytest.raises(RuntimeError, match="leaf"):
        torch.ones(2, requires_grad=True).xlogy_(2.0)
    with pytest.raises(RuntimeError, match="xlogy_: a leaf tensor that requires grad"):
        lucid.ones(2, requires_grad=True).xlogy_(2.0)
    with lucid.no_grad():
        w = lucid.ones(2, requires_grad=True)
        w.xlogy_(2.0)  # allowed without grad, as torch
    np.testing.assert_allclose(w.detach().numpy(), np.log(2.0) * np.ones(2), rtol=1e-6)


def test_inplace_shape_must_match_self():
    with pytest.raises(RuntimeError):
        torch.ones(3, 1).hypot_(torch.ones(3, 4))
    with pytest.raises(ValueError, match=r"hypot_: output with shape \[3, 1\] doesn't match the broadcast shape"):
        lucid.ones(3, 1).hypot_(lucid.ones(3, 4))


def test_inplace_returns_self_and_bumps_version():
    x = L([0.2, 0.5])
    v = x._version
    assert x.logit_() is x
    assert x._version > v
    close(x, T([0.2, 0.5]).logit_())


def test_inplace_gradient_through_a_graph_matches_torch():
    a = np.array([0.2, 0.4, 0.7])
    lx = L(a, requires_grad=True)
    tx = T(a, requires_grad=True)
    ly = lx * 1.0
    ty = tx * 1.0
    ly.logit_().sinc_().mul_(2.0)
    ty.logit_().sinc_().mul_(2.0)
    (ly * L([1.0, 2.0, 3.0])).sum().backward()
    (ty * T([1.0, 2.0, 3.0])).sum().backward()
    close(ly, ty)
    close(lx.grad, tx.grad)


def test_float_power_inplace_needs_float64():
    with pytest.raises(RuntimeError, match="float_power_"):
        torch.ones(2).float_power_(2)
    with pytest.raises(TypeError, match="float_power_: the base given to float_power_ has dtype float32"):
        lucid.ones(2).float_power_(2)
    close(lucid.ones(2, dtype=lucid.float64).mul_(3).float_power_(2), torch.full((2,), 9.0, dtype=torch.float64))


def test_torch_level_inplace_functions():
    x = L([0.5, 2.0])
    assert lucid.exp_(x) is x
    close(x, torch.exp_(T([0.5, 2.0])))
    y = L([0.25, 0.5])
    lucid.logit_(y)
    close(y, torch.logit_(T([0.25, 0.5])))
    with pytest.raises(TypeError, match="exp_: argument 'input' expected a Tensor"):
        lucid.exp_(1.0)


def test_elementwise_math_inplace_with_integer_tensor_raises():
    with pytest.raises(TypeError, match="tan_: result type float32 can't be cast"):
        L([1, 2]).tan_()


# ---- random fills ----
FILLS = [("exponential_", (2.0,), lambda x: abs(x.mean() - 0.5) < 0.02 and x.min() >= 0),
         ("cauchy_", (1.0, 0.5), lambda x: abs(np.median(x) - 1.0) < 0.05),
         ("log_normal_", (0.0, 0.5), lambda x: abs(np.log(x).mean()) < 0.02 and abs(np.log(x).std() - 0.5) < 0.02),
         ("geometric_", (0.25,), lambda x: abs(x.mean() - 4.0) < 0.15 and x.min() >= 1 and np.all(x == np.round(x))),
         ("random_", (3, 9), lambda x: x.min() == 3 and x.max() == 8 and np.all(x == np.round(x)))]


@pytest.mark.parametrize("name,args,ok", FILLS, ids=[f[0] for f in FILLS])
def test_random_fill_distribution_and_seed(name, args, ok):
    lucid.manual_seed(3)
    a = getattr(lucid.empty(20000, dtype=lucid.float64), name)(*args)
    assert a.dtype == lucid.float64 and ok(a.numpy())
    lucid.manual_seed(3)
    b = getattr(lucid.empty(20000, dtype=lucid.float64), name)(*args)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    g1, g2 = lucid.Generator().manual_seed(7), lucid.Generator().manual_seed(7)
    c = getattr(lucid.empty(50), name)(*args, generator=g1)
    d = getattr(lucid.empty(50), name)(*args, generator=g2)
    np.testing.assert_array_equal(c.numpy(), d.numpy())
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(lucid.ones(3, requires_grad=True), name)(*args)


def test_random_fill_defaults_and_integer_tensors():
    x = lucid.empty(1000, dtype=lucid.int64).random_(5)
    assert x.dtype == lucid.int64 and 0 <= x.numpy().min() and x.numpy().max() <= 4
    u8 = lucid.empty(4000, dtype=lucid.uint8).random_()
    assert u8.numpy().max() > 200  # the whole uint8 range
    f = lucid.empty(1000).random_()
    assert f.numpy().min() >= 0 and f.numpy().max() <= 2 ** 24 and np.all(f.numpy() == np.round(f.numpy()))
    with pytest.raises(ValueError, match="exponential_: expects lambda > 0.0"):
        lucid.empty(3).exponential_(-1.0)
    with pytest.raises(ValueError, match="geometric_: expects p to be in"):
        lucid.empty(3).geometric_(1.5)
    with pytest.raises(ValueError, match="random_: expects 'from' to be less than 'to'"):
        lucid.empty(3).random_(5, 2)
    with pytest.raises(TypeError, match="cauchy_: expects a floating-point tensor"):
        lucid.empty(3, dtype=lucid.int64).cauchy_()


def test_random_fill_compiles_with_fresh_draws():
    f = lucid.compile(lambda x: x * 0 + lucid.empty(4).exponential_(), strict=True)
    a, b = f(lucid.zeros(4)), f(lucid.zeros(4))
    assert not np.array_equal(a.numpy(), b.numpy())
    assert a.numpy().min() >= 0


# ---- properties and helpers ----
def test_small_properties():
    x = lucid.zeros(3, 4, dtype=lucid.float64)
    t = torch.zeros(3, 4, dtype=torch.float64)
    assert (x.nbytes, x.itemsize, x.ndimension(), x.nelement()) == (t.nbytes, t.itemsize, t.ndimension(), t.nelement())
    assert x.is_cpu and not x.is_sparse and not x.is_quantized and not x.is_meta and not x.is_complex()
    assert x.is_signed() and not L([1]).byte().is_signed()
    assert L([1.7, -2.2]).byte().dtype == lucid.uint8 and L([1.7, -2.2]).char().tolist() == [1, -2]
    m = L(np.arange(6.0).reshape(2, 3))
    assert tuple(m.H.shape) == (3, 2) and tuple(m.mH.shape) == (3, 2)
    b = L(np.arange(24.0).reshape(2, 3, 4))
    np.testing.assert_array_equal(b.mH.numpy(), T(np.arange(24.0).reshape(2, 3, 4)).mH.numpy())
    with pytest.raises(ValueError, match="Tensor.H"):
        b.H


def test_new_tensor_and_new_empty_strided():
    x = lucid.zeros(2, dtype=lucid.float64)
    n = x.new_tensor([1, 2])
    assert n.dtype == lucid.float64 and n.tolist() == [1.0, 2.0]
    src = lucid.ones(2, requires_grad=True)
    c = x.new_tensor(src)
    assert not c.requires_grad and c.dtype == lucid.float32
    e = x.new_empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == (2, 3) and tuple(e.stride()) == (1, 2) and e.dtype == lucid.float64


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((3, 5), False), ((7, 3), False), ((7, 3), True),
                                        ((3, 3, 3), False)])
def test_fill_diagonal(shape, wrap):
    lt = lucid.zeros(*shape).fill_diagonal_(5.0, wrap)
    tt = torch.zeros(*shape).fill_diagonal_(5.0, wrap)
    np.testing.assert_array_equal(lt.numpy(), tt.numpy())


def test_apply_and_map():
    a = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(L(a).apply_(lambda v: v * v + 1).numpy(), T(a).apply_(lambda v: v * v + 1).numpy())
    np.testing.assert_array_equal(L(a).map_(L([10.0]), lambda u, v: u - v).numpy(),
                                  T(a).map_(T([10.0]), lambda u, v: u - v).numpy())


# ---- predicates, dtype queries, factories ----
DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def test_can_cast_matches_torch():
    for a in DTYPES:
        for b in DTYPES:
            assert lucid.can_cast(getattr(lucid, a), getattr(lucid, b)) == torch.can_cast(getattr(torch, a),
                                                                                         getattr(torch, b)), (a, b)


def test_predicates():
    assert lucid.is_tensor(lucid.ones(1)) and not lucid.is_tensor(np.ones(1))
    assert lucid.is_floating_point(lucid.ones(1)) and not lucid.is_floating_point(L([1]))
    assert lucid.is_nonzero(L([2])) and not lucid.is_nonzero(L([0.0]))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        lucid.is_nonzero(lucid.ones(2))
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        lucid.is_nonzero(lucid.ones(0))
    assert lucid.equal(L([1, 2]), L([1.0, 2.0])) == torch.equal(T([1, 2]), T([1.0, 2.0]))
    assert not lucid.equal(L([1, 2]), L([1, 3])) and not lucid.equal(L([1, 2]), L([[1, 2]]))
    assert lucid.numel(lucid.ones(2, 3)) == 6 and lucid.is_same_size(lucid.ones(2), lucid.zeros(2))
    assert lucid.typename(lucid.ones(1)) == "lucid.FloatTensor" and lucid.typename(L([1])) == "lucid.LongTensor"
    assert not lucid.is_complex(lucid.ones(1)) and lucid.is_signed(lucid.ones(1))
    x = lucid.ones(2, requires_grad=True)
    assert lucid.clone(x).requires_grad and not lucid.detach(x).requires_grad
    assert lucid.fill(lucid.ones(2), 3).tolist() == [3.0, 3.0]
    s = lucid.scalar_tensor(2)
    assert s.ndim == 0 and s.dtype == lucid.float32


def test_range_logspace():
    with pytest.warns(UserWarning):
        want = torch.range(0, 1, 0.3)
    close(lucid.range(0, 1, 0.3), want)
    close(lucid.logspace(0, 2, 5), torch.logspace(0, 2, 5))
    close(lucid.logspace(0, 3, 4, base=2.0), torch.logspace(0, 3, 4, base=2.0))
    assert lucid.logspace(0, 2, 3, dtype=lucid.int64).tolist() == torch.logspace(0, 2, 3, dtype=torch.int64).tolist()


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
@pytest.mark.parametrize("n", [0, 1, 2, 8, 11])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, n, periodic):
    close(getattr(lucid, name)(n, periodic), getattr(torch, name)(n, periodic), 1e-6)
    assert getattr(lucid, name)(n, dtype=lucid.float64).dtype == lucid.float64


def test_empty_strided():
    e = lucid.empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == (2, 3) and tuple(e.stride()) == (1, 2)
    assert tuple(lucid.empty_strided((0, 3), (3, 1)).shape) == (0, 3)


def test_global_switches():
    assert not lucid.are_deterministic_algorithms_enabled()
    lucid.use_deterministic_algorithms(True, warn_only=True)
    assert lucid.are_deterministic_algorithms_enabled() and lucid.is_deterministic_algorithms_warn_only_enabled()
    lucid.use_deterministic_algorithms(False)
    assert not lucid.are_deterministic_algorithms_enabled()
    for mode, want in [("warn", 1), ("error", 2), (0, 0)]:
        lucid.set_deterministic_debug_mode(mode)
        torch.set_deterministic_debug_mode(mode)
        assert lucid.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == want
    with pytest.raises(ValueError, match="set_deterministic_debug_mode"):
        lucid.set_deterministic_debug_mode("loud")
    x = lucid.ones(3)
    assert lucid.get_device(x) == torch.get_device(torch.ones(3)) == -1 and x.const_data_ptr() == x.data_ptr()
    np.testing.assert_array_equal(np.from_dlpack(_Capsule(lucid.to_dlpack(x))), np.ones(3))
    lucid.set_float32_matmul_precision("high")
    assert lucid.get_float32_matmul_precision() == "high"
    lucid.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match="set_float32_matmul_precision"):
        lucid.set_float32_matmul_precision("fast")


class _Capsule:
    """A DLPack producer around a capsule (numpy.from_dlpack takes producers)."""
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


# ---- counting ops (data-dependent sizes) and index helpers ----
@pytest.mark.parametrize("kw", [{}, {"minlength": 10}, {"weights": [0.5, 1.0, 2.0, 0.25, 1.0, 3.0]},
                                {"weights": [1, 2, 3, 4, 5, 6]}])
def test_bincount(kw):
    x = [1, 3, 3, 0, 7, 1]
    lw = {k: (L(v) if k == "weights" else v) for k, v in kw.items()}
    tw = {k: (T(v) if k == "weights" else v) for k, v in kw.items()}
    lo, to = lucid.bincount(L(x), **lw), torch.bincount(T(x), **tw)
    assert str(lo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1]
    np.testing.assert_allclose(lo.numpy(), to.numpy())
    assert lucid.bincount(lucid.zeros(0, dtype=lucid.int64), minlength=3).tolist() == [0, 0, 0]


def test_bincount_bad_input():
    with pytest.raises(ValueError, match="bincount: input must contain only non-negative values"):
        lucid.bincount(L([1, -1]))
    with pytest.raises(ValueError, match="bincount: only 1-D integer tensors"):
        lucid.bincount(L([1.0, 2.0]))


def test_bincount_under_compile_falls_back_naming_the_read():
    f = lucid.compile(lambda x: lucid.bincount(x))
    np.testing.assert_array_equal(f(L([0, 2, 2])).numpy(), [1, 0, 2])
    assert any("item" in r for r in f.cache_info()["eager_only"].values())


@pytest.mark.parametrize("kw", [{}, {"bins": 4}, {"bins": 5, "min": -1, "max": 1}, {"bins": 3, "min": 0.5, "max": 0.5}])
def test_histc(kw):
    a = np.random.default_rng(0).uniform(-2, 2, 50).astype(np.float32)
    a[:3] = [1.0, -1.0, 0.5]
    np.testing.assert_array_equal(lucid.histc(L(a), **kw).numpy(), torch.histc(T(a), **kw).numpy())
    with pytest.raises(ValueError, match="histc: max must be larger than min"):
        lucid.histc(L(a), min=2, max=1)


def test_unravel_index_and_tri_indices():
    for got, want in zip(lucid.unravel_index(L([0, 5, 11, 7]), (3, 4)), torch.unravel_index(T([0, 5, 11, 7]), (3, 4))):
        assert got.tolist() == want.tolist()
    for args in [(3, 3), (4, 3, 1), (3, 5, -1), (0, 2)]:
        assert lucid.tril_indices(*args).tolist() == torch.tril_indices(*args).tolist()
        assert lucid.triu_indices(*args).tolist() == torch.triu_indices(*args).tolist()


def test_row_stack_and_split_helpers():
    a, b = np.arange(3.0), np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(lucid.row_stack([L(a), L(b)]).numpy(), torch.row_stack([T(a), T(b)]).numpy())
    x = np.arange(12.0).reshape(3, 4)
    for got, want in zip(lucid.unsafe_split(L(x), 2, 1), torch.unsafe_split(T(x), 2, 1)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for name in ["alias_copy", "t_copy", "detach_copy"]:
        np.testing.assert_array_equal(getattr(lucid, name)(L(x)).numpy(), getattr(torch, name)(T(x)).numpy())
    np.testing.assert_array_equal(lucid.transpose_copy(L(x), 0, 1).numpy(), torch.transpose_copy(T(x), 0, 1).numpy())
    np.testing.assert_array_equal(lucid.slice_copy(L(x), 1, 1, 4, 2).numpy(), torch.slice_copy(T(x), 1, 1, 4, 2).numpy())
    s = L(x)
    c = lucid.diagonal_copy(s)
    c.fill_(0.0)
    assert s.numpy()[1, 1] == 5.0  # fresh storage, not a view


# ---- bad input names the op and the argument ----
def test_bad_input_messages():
    with pytest.raises(ValueError, match="hsplit: attempted to split along dimension 1"):
        lucid.hsplit(lucid.ones(2, 5), 2)
    with pytest.raises(ValueError, match="vsplit: requires a tensor with at least 2 dimension"):
        lucid.vsplit(lucid.ones(4), 2)
    with pytest.raises(ValueError, match="split_with_sizes: expects split_sizes to sum exactly to 4"):
        lucid.split_with_sizes(lucid.ones(4), [1, 2])
    with pytest.raises(ValueError, match="tensordot: contracted dimensions need to match"):
        lucid.tensordot(lucid.ones(2, 3), lucid.ones(4, 2), dims=1)
    with pytest.raises(ValueError, match="outer: argument 'vec2' expected a 1-D tensor"):
        lucid.outer(lucid.ones(2), lucid.ones(2, 2))
    with pytest.raises(ValueError, match="cdist: x1 and x2 must have the same number of columns"):
        lucid.cdist(lucid.ones(2, 3), lucid.ones(2, 4))
    with pytest.raises(ValueError, match="cov: expected input to have two or fewer dimensions"):
        lucid.cov(lucid.ones(2, 2, 2))
    with pytest.raises(TypeError, match="heaviside: input and values must have the same dtype"):
        lucid.heaviside(lucid.ones(2), L([1, 1]))
    with pytest.raises(ValueError, match="diff: expects input to be at least one-dimensional"):
        lucid.diff(lucid.ones(()))
    with pytest.raises(TypeError, match="masked_scatter: argument 'mask' expected a bool tensor"):
        lucid.masked_scatter(lucid.ones(2), lucid.ones(2), lucid.ones(2))
    with pytest.raises(ValueError, match="put: expected source and index to have the same number of elements"):
        lucid.ones(3).put(L([0, 1]), lucid.ones(3))
    with pytest.raises(TypeError, match="xlogy: argument 'other' expected a Tensor or a number"):
        lucid.xlogy(lucid.ones(2), "a")
    with pytest.raises(ValueError, match="meshgrid: indexing must be 'ij' or 'xy'"):
        lucid.meshgrid(lucid.ones(2), indexing="yx")
    with pytest.raises(ValueError, match="sum_to_size: size \\[4\\] is not expandable"):
        lucid.ones(2, 3).sum_to_size(4)
    with pytest.raises(ValueError, match="block_diag: input 0 must have 2 or fewer dimensions"):
        lucid.block_diag(lucid.ones(1, 1, 1))


def test_erfinv_edges():
    x = [-1.0, 1.0, 1.5, 0.0]
    close(lucid.erfinv(L(x)), torch.erfinv(T(x)))
    assert math.isinf(lucid.erfinv(L([1.0])).item())


# ---- second wave ----
def test_nonzero_static():
    x = np.array([[0, 1, 0], [2, 0, 3]])
    for size in (2, 3, 5):
        np.testing.assert_array_equal(lucid.nonzero_static(L(x), size=size).numpy(),
                                      torch.nonzero_static(T(x), size=size).numpy())
    np.testing.assert_array_equal(lucid.nonzero_static(L(x), size=4, fill_value=9).numpy(),
                                  torch.nonzero_static(T(x), size=4, fill_value=9).numpy())


def test_asarray_frombuffer_empty_permuted():
    base = lucid.ones(3)
    assert lucid.asarray(base) is base
    assert lucid.asarray(base, copy=True) is not base
    assert lucid.asarray(base, dtype=lucid.float64).dtype == lucid.float64
    with pytest.raises(ValueError, match="asarray: can't convert"):
        lucid.asarray(base, dtype=lucid.float64, copy=False)
    arr = np.arange(4.0)
    shared = lucid.asarray(arr)
    arr[0] = 7.0
    assert shared.tolist()[0] == 7.0  # shares the NumPy memory, as torch.asarray
    buf = bytearray(np.arange(6, dtype=np.int32).tobytes())
    lt = lucid.frombuffer(buf, dtype=lucid.int32, count=4, offset=4)
    assert lt.tolist() == torch.frombuffer(bytearray(buf), dtype=torch.int32, count=4, offset=4).tolist()
    e = lucid.empty_permuted((2, 3, 4), (0, 2, 1))
    t = torch.empty_permuted((2, 3, 4), (0, 2, 1))
    assert tuple(e.shape) == tuple(t.shape) and tuple(e.stride()) == tuple(t.stride())
    with pytest.raises(ValueError, match="empty_permuted: physical_layout must be a permutation"):
        lucid.empty_permuted((2, 3), (0, 0))


def test_devices_and_modes():
    assert lucid.get_default_device() == lucid.device("cpu")
    lucid.set_default_device("cpu")
    if not lucid.cuda.is_available():  # no CUDA backend (NotImplementedError) or no device (RuntimeError)
        with pytest.raises((NotImplementedError, RuntimeError), match="'cuda' requested"):
            lucid.set_default_device("cuda")
    assert not lucid.is_inference_mode_enabled() and not lucid.ones(1).is_inference()


def test_real_conjugation_is_the_identity_and_flags():
    x = L([1.0, -2.0])
    assert lucid.conj(x) is x and x.conj() is x and x.resolve_conj() is x and lucid.resolve_neg(x) is x
    assert not x.is_conj() and not lucid.is_neg(x)
    c = x.conj_physical()
    assert c is not x and c.tolist() == torch.tensor([1.0, -2.0]).conj_physical().tolist()
    assert not (x.is_xpu or x.is_mps or x.is_xla or x.is_shared())
    assert x.to_dense() is x
    s = lucid.zeros(4)
    np.testing.assert_array_equal(s.as_strided((2,), (2,)).numpy(), torch.zeros(4).as_strided((2,), (2,)).numpy())
    np.testing.assert_array_equal(s.select_scatter(lucid.ones(()), 0, 1).numpy(),
                                  torch.zeros(4).select_scatter(torch.ones(()), 0, 1).numpy())
    t = lucid.ones(2, 3, 4).permute(2, 0, 1)
    assert t.dim_order() == torch.ones(2, 3, 4).permute(2, 0, 1).dim_order()


def test_bernoulli_method_and_integer_inplace():
    lucid.manual_seed(0)
    b = lucid.full((2000,), 0.3).bernoulli()
    assert set(np.unique(b.numpy())) <= {0.0, 1.0} and abs(b.numpy().mean() - 0.3) < 0.05
    x = L([12, 18, 7])
    assert x.gcd_(L([8, 12, 0])) is x and x.tolist() == [4, 6, 7]
    y = L([4, 6])
    lucid.lcm_(y, L([6, 4]))
    assert y.tolist() == [12, 12]
    z = L([1, -8])
    z <<= 2
    assert z.tolist() == [4, -32]
    z >>= L([1, 3])
    assert z.tolist() == [2, -4]
    with pytest.raises(TypeError, match="gcd: expected integer tensors"):
        lucid.gcd(L([1.0]), L([2.0]))


def test_search_and_cross_bad_input():
    with pytest.raises(ValueError, match="searchsorted: side can only be 'left' or 'right'"):
        lucid.searchsorted(L([1.0, 2.0]), L([1.0]), side="middle")
    with pytest.raises(ValueError, match="searchsorted: boundaries tensor should be 1 dimension or"):
        lucid.searchsorted(lucid.ones(2, 3), lucid.ones(3, 1))
    with pytest.raises(ValueError, match="bucketize: boundaries tensor must be 1 dimension"):
        lucid.bucketize(lucid.ones(2), lucid.ones(2, 2))
    assert lucid.searchsorted(L([1.0, 3.0]), 2.0).tolist() == torch.searchsorted(T([1.0, 3.0]), 2.0).tolist()
    with pytest.raises(ValueError, match="cross: inputs dimension 1 must have length 3"):
        lucid.cross(lucid.ones(3, 4), lucid.ones(3, 4), dim=1)
    with pytest.raises(ValueError, match="renorm: non-positive norm not supported"):
        lucid.renorm(lucid.ones(2, 2), 0, 0, 1.0)
    with pytest.raises(TypeError, match="frexp: expected a floating-point tensor"):
        lucid.frexp(L([1, 2]))


def test_histogram_from_the_data_range():
    a = np.random.default_rng(1).normal(size=60).astype(np.float32)
    lh, le = lucid.histogram(L(a), bins=7)
    th, te = torch.histogram(T(a), bins=7)
    np.testing.assert_allclose(le.numpy(), te.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(lh.numpy(), th.numpy())
    lw = lucid.histogram(L(a), bins=3, weight=L(np.abs(a)))
    tw = torch.histogram(T(a), bins=3, weight=T(np.abs(a)))
    np.testing.assert_allclose(lw.hist.numpy(), tw.hist.numpy(), rtol=1e-5)


def test_scatter_reduce_method_inplace_and_bad_input():
    idx = np.array([0, 2, 0, 1])
    src = np.array([1.0, 5.0, -3.0, 2.0])
    lt = lucid.zeros(3).scatter_reduce_(0, L(idx), L(src), "amax", include_self=False)
    tt = torch.zeros(3).scatter_reduce_(0, T(idx), T(src, dtype=torch.float32), "amax", include_self=False)
    np.testing.assert_array_equal(lt.numpy(), tt.numpy())
    with pytest.raises(ValueError, match="scatter_reduce: reduce argument must be one of"):
        lucid.zeros(3).scatter_reduce(0, L(idx), L(src), "max")
    with pytest.raises(TypeError, match="scatter_reduce: argument 'index' expected an int64 tensor"):
        lucid.zeros(3).scatter_reduce(0, L(src), L(src), "sum")


def test_mvlgamma_and_special_gamma_names():
    a = np.array([[1.5, 2.0], [3.25, 7.0]])
    for p in (1, 3):
        close(lucid.mvlgamma(L(a), p), torch.mvlgamma(T(a), p))
        close(L(a).mvlgamma(p), T(a).mvlgamma(p))
    with pytest.raises(ValueError, match=r"mvlgamma: all elements must be greater than \(p-1\)/2"):
        lucid.mvlgamma(L(a), 5)
    x = L(a, requires_grad=True)
    tx = T(a, requires_grad=True)
    lucid.special.multigammaln(x, 2).sum().backward()
    torch.special.multigammaln(tx, 2).sum().backward()
    close(x.grad, tx.grad)
    assert lucid.special.gammaln is lucid.lgamma and lucid.special.psi is lucid.digamma
    close(lucid.special.polygamma(1, L(a)), torch.special.polygamma(1, T(a)))
    with pytest.raises(ValueError, match="polygamma: argument 'n' must be non-negative"):
        lucid.polygamma(-1, L(a))


def test_legacy_new_index_reduce_and_gradient():
    x = lucid.zeros(2, dtype=lucid.float64)
    assert tuple(x.new(2, 3).shape) == (2, 3) and x.new(2, 3).dtype == lucid.float64
    assert x.new([1, 2]).tolist() == torch.zeros(2).new([1, 2]).tolist() and tuple(x.new().shape) == (0,)
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            a, s = np.arange(12.0).reshape(4, 3) - 5, np.arange(6.0).reshape(2, 3) * 1.5 - 2
            got = L(a).index_reduce(0, L([3, 1]), L(s), reduce, include_self=include_self)
            want = T(a).index_reduce(0, T([3, 1]), T(s), reduce, include_self=include_self)
            np.testing.assert_allclose(got.numpy(), want.numpy())
    y = L(a).index_reduce_(1, L([0, 0, 2]), L(np.ones((4, 3)) * 2), "prod")
    np.testing.assert_allclose(y.numpy(), T(a).index_reduce_(1, T([0, 0, 2]), T(np.ones((4, 3)) * 2), "prod").numpy())
    f = np.random.default_rng(0).normal(size=(4, 5))
    for kw in ({}, {"spacing": 2.0}, {"dim": 1}, {"spacing": [0.5, 3.0]}):
        for g, w in zip(lucid.gradient(L(f), **kw), torch.gradient(T(f), **kw)):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="gradient: only edge_order=1"):
        lucid.gradient(L(f), edge_order=2)


def test_composite_result_types_pickle():
    import pickle
    r = lucid.aminmax(L([[1.0, 5.0], [-2.0, 3.0]]), dim=1)
    assert type(r).__module__ == "lucid.return_types" and r.min.tolist() == [1.0, -2.0]
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is type(r) and back.max.tolist() == [5.0, 3.0]
    c = pickle.loads(pickle.dumps(lucid.cummax(L([1.0, 3.0, 2.0]), 0)))
    assert c.indices.tolist() == [0, 1, 1]
