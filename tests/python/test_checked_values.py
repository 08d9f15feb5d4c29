"""Values that don't fit what they are converted to, and integer division by zero, raise as in
PyTorch instead of wrapping or returning 0: full()/fill_() with a value out of the dtype's range,
integer // and % by zero, bernoulli probabilities outside [0, 1], Python ints beyond int64 in
lucid.tensor, and the NumPy arrays lucid.from_numpy can't share (object dtype, read-only).
The reference for every table is PyTorch run on the same call: it raises <=> lucid raises, and
when neither raises the values are equal."""
import itertools
import warnings

import numpy as np
import pytest
import torch

import lucid


def outcome(fn):
    try:
        r = fn()
    except (RuntimeError, ValueError, TypeError, ZeroDivisionError) as e:
        return ("raise", type(e).__name__, str(e))
    return ("ok", r.tolist() if hasattr(r, "tolist") else r)


def same_outcome(make):
    t, lu = outcome(lambda: make(torch)), outcome(lambda: make(lucid))
    assert t[0] == lu[0], f"torch: {t}, lucid: {lu}"
    if t[0] == "ok":
        np.testing.assert_array_equal(np.asarray(lu[1], dtype=np.float64), np.asarray(t[1], dtype=np.float64))
    return lu


# ---- full / fill_ with values out of range --------------------------------------------------
FILL_VALUES = [0, 1, -1, 127, 128, -128, -129, 255, 256, -255, -256, 300, 300.5, 1.5, -1.5, 2**31 - 1, 2**31,
               -(2**31), -(2**31) - 1, 2**62, 65504.0, 65520.0, 1e6, 1e39, -1e39, float("inf"), float("-inf")]
FILL_DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64"]


@pytest.mark.parametrize("value,dtype", list(itertools.product(FILL_VALUES, FILL_DTYPES)))
def test_full_value_out_of_range(value, dtype):
    lu = same_outcome(lambda M: M.full((3,), value, dtype=getattr(M, dtype)))
    if lu[0] == "raise":
        assert "without overflow" in lu[2] and dtype in lu[2]


@pytest.mark.parametrize("value,dtype", [(300, "int8"), (-1, "uint8"), (256, "uint8"), (2**31, "int32"), (1e6, "float16")])
def test_fill_value_out_of_range(value, dtype):
    same_outcome(lambda M: M.zeros(2, dtype=getattr(M, dtype)).fill_(value))


# ---- integer // and % by zero -----------------------------------------------------------------
DIV_DTYPES = ["uint8", "int8", "int32", "int64", "float32"]
DIVISORS = ["scalar0", "scalar2", "tensor_with_0", "tensor_nonzero", "broadcast_0"]


def divide(M, op, dtype, divisor):
    a = M.tensor([7, -3, 5, 0], dtype=getattr(M, dtype)) if dtype != "uint8" else M.tensor([7, 3, 5, 0], dtype=M.uint8)
    b = {"scalar0": 0, "scalar2": 2, "tensor_with_0": M.tensor([1, 2, 0, 3], dtype=getattr(M, dtype)),
         "tensor_nonzero": M.tensor([1, 2, 4, 3], dtype=getattr(M, dtype)),
         "broadcast_0": M.tensor([0], dtype=getattr(M, dtype))}[divisor]
    if op == "floordiv":
        return a // b
    if op == "remainder":
        return M.remainder(a, b)
    if op == "ifloordiv":
        a //= b
        return a
    a %= b
    return a


@pytest.mark.parametrize("op,dtype,divisor",
                         list(itertools.product(["floordiv", "remainder", "ifloordiv", "imod"], DIV_DTYPES, DIVISORS)))
def test_integer_division_by_zero(op, dtype, divisor):
    lu = same_outcome(lambda M: divide(M, op, dtype, divisor))
    if lu[0] == "raise":
        assert "ZeroDivisionError" in lu[2]


def test_division_by_zero_writes_nothing():
    x = lucid.tensor([4, 6])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        x //= lucid.tensor([2, 0])
    assert x.tolist() == [4, 6]


# ---- bernoulli probabilities ------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 2.0, -0.1, 1.0000001, float("nan")])
@pytest.mark.parametrize("form", ["tensor", "scalar_inplace", "tensor_inplace", "p_kw"])
def test_bernoulli_probability_range(p, form):
    def make(M):
        if form == "tensor":
            return M.bernoulli(M.tensor([p, 0.5]))
        if form == "scalar_inplace":
            return M.ones(2).bernoulli_(p)
        if form == "p_kw":
            return M.bernoulli(M.ones(2), p=p)
        return M.ones(2).bernoulli_(M.tensor([p, 0.0]))

    t, lu = outcome(lambda: make(torch)), outcome(lambda: make(lucid))
    assert t[0] == lu[0], f"torch: {t}, lucid: {lu}"  # draws differ between the libraries


# ---- Python ints beyond int64 and NumPy arrays from_numpy can't share -------------------------
@pytest.mark.parametrize("data", [[2**70], [2**63], [-(2**63) - 1], [[1, 2], [3, 2**64]], [1, 2**100, 3]])
def test_tensor_of_ints_beyond_int64(data):
    with pytest.raises(ValueError, match="Overflow when unpacking long"):
        torch.tensor(data)
    with pytest.raises(ValueError, match=r"Overflow when unpacking long: value -?\d+ does not fit int64"):
        lucid.tensor(data)


def test_uint64_array_beyond_int64():
    # lucid has no uint64 (PyTorch has): values that int64 can't hold raise instead of wrapping.
    with pytest.raises(ValueError, match="value 9223372036854775808 does not fit int64"):
        lucid.tensor(np.array([2**63], dtype=np.uint64))


def test_tensor_of_int64_limits_still_works():
    assert lucid.tensor([-(2**63), 2**63 - 1]).tolist() == [-(2**63), 2**63 - 1]
    assert lucid.tensor(np.array([2**63 - 1], dtype=np.uint64)).tolist() == [2**63 - 1]


def test_from_numpy_object_array():
    a = np.array([1, "a"], dtype=object)
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.object_"):
        torch.from_numpy(a)
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.object_"):
        lucid.from_numpy(a)
    with pytest.raises(TypeError, match="expected np.ndarray"):
        lucid.from_numpy([1.0, 2.0])


def test_from_numpy_read_only_array_is_copied_with_a_warning():
    a = np.arange(4.0)
    a.setflags(write=False)
    with pytest.warns(UserWarning, match="not writable"):
        t = lucid.from_numpy(a)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    t.add_(1.0)  # writes the copy, never the read-only buffer
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # lucid.tensor copies anyway: no warning
        assert lucid.tensor(a).tolist() == [0.0, 1.0, 2.0, 3.0]
    w = np.arange(3.0)
    s = lucid.from_numpy(w)  # writable arrays are still shared
    s.add_(1.0)
    assert w.tolist() == [1.0, 2.0, 3.0]
