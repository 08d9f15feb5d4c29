"""Spec rows for the torch.* breadth composites written in Python (lucid/_ops_math.py,
_ops_matrix.py, _ops_reduce_extra.py, _ops_movement_extra.py) and for the generic in-place forms
of lucid/_tensor_methods.py. They cover no registry op of their own (ops=[]): they are checked
against torch (forward per dtype, gradients in float64, finite differences) and, through
test_ops_compiled.py, compiled against eager. Samples include ties, zeros, NaN and infinities
where the composite has a special case for them."""
import numpy as np

from op_specs import OpSpec, Sample, arr

FLOATS = ("float32", "float64", "float16", "bfloat16")
F32_64 = ("float32", "float64")
INTS = ("int64", "int32")


def R(name, lfn, tfn, samples, dtypes=F32_64, **kw):
    return OpSpec(name, [], lfn, tfn, samples, dtypes=dtypes, **kw)


def T(name, samples, dtypes=F32_64, **kw):
    """lucid.name(*args) against torch.name(*args)."""
    return R(name, lambda m, *a, **k: getattr(m, name)(*a, **k), lambda m, *a, **k: getattr(m, name)(*a, **k),
             samples, dtypes, **kw)


def M(name, samples, dtypes=F32_64, **kw):
    """x.name(*args) (a Tensor method) against torch's."""
    return R(name + "_method", lambda m, x, *a, **k: getattr(x, name)(*a, **k),
             lambda m, x, *a, **k: getattr(x, name)(*a, **k), samples, dtypes, **kw)


def I(name, samples, dtypes=F32_64, **kw):
    """The in-place method x.clone().name_(*args): values and gradients through the generic form."""
    return R(name + "_inplace", lambda m, x, *a, **k: getattr(x.clone(), name + "_")(*a, **k),
             lambda m, x, *a, **k: getattr(x.clone(), name + "_")(*a, **k), samples, dtypes, **kw)


def S(name, samples, dtypes=F32_64, **kw):
    """lucid.special.name(*args) against torch.special.name(*args)."""
    return R("special_" + name, lambda m, *a, **k: getattr(m.special, name)(*a, **k),
             lambda m, *a, **k: getattr(m.special, name)(*a, **k), samples, dtypes, **kw)


def _entr(rng, dt):
    a = arr(rng, (3, 4), dt, -0.5, 2)
    a[0, 0] = 0
    # torch's gradient at x <= 0 is -(1 + log x) (inf or NaN); gradients are compared for x > 0
    return [Sample([arr(rng, (3, 4), dt, 0.1, 2)]), Sample([a], grad_args=[])]


def _un(low=-2.0, high=2.0):
    return lambda rng, dt: [Sample([arr(rng, (3, 4), dt, low, high)]), Sample([arr(rng, (), dt, low, high)])]


def _same(low=-2.0, high=2.0):
    return lambda rng, dt: [Sample([arr(rng, (3, 4), dt, low, high), arr(rng, (3, 4), dt, low, high)]),
                            Sample([arr(rng, (3, 4), dt, low, high), arr(rng, (4,), dt, low, high)])]


def _bin(low=-2.0, high=2.0):
    return lambda rng, dt: [Sample([arr(rng, (3, 4), dt, low, high), arr(rng, (3, 4), dt, low, high)]),
                            Sample([arr(rng, (2, 1, 4), dt, low, high), arr(rng, (3, 1), dt, low, high)])]


def _logaddexp(rng, dt):
    a, b = arr(rng, (3, 4), dt, -3, 3), arr(rng, (3, 4), dt, -3, 3)
    b[0, 0] = a[0, 0]  # a tie: each side gets half the gradient
    big = np.array([-100.0, 50.0, 0.0], dtype=a.dtype)
    return [Sample([a, b]), Sample([big, big[::-1].copy()])]


def _logaddexp_inf(rng, dt):
    a = np.array([np.inf, -np.inf, np.inf, 1.0, -np.inf], dtype=np.float32)
    b = np.array([np.inf, -np.inf, 2.0, -np.inf, 3.0], dtype=np.float32)
    return [Sample([a, b])]


def _xlogy(rng, dt):
    x, y = arr(rng, (3, 4), dt, -2, 2), arr(rng, (3, 4), dt, 0.5, 2)
    x[0, :2] = 0
    return [Sample([x, y]), Sample([arr(rng, (4,), dt, 0.5, 2), 3.0])]


def _with_zero(rng, dt):
    a = arr(rng, (3, 4), dt)
    a[1, 1] = 0
    return [Sample([a])]


def _fmod(rng, dt):
    if "float" in dt:
        return [Sample([arr(rng, (3, 4), dt, -5, 5), arr(rng, (3, 4), dt, 0.5, 2)]),
                Sample([arr(rng, (3, 4), dt, -5, 5), -1.5])]
    a = rng.integers(-9, 10, size=(3, 4)).astype(dt)
    b = rng.integers(1, 4, size=(3, 4)).astype(dt) * np.where(rng.random((3, 4)) < 0.5, -1, 1).astype(dt)
    return [Sample([a, b]), Sample([a, 4])]


def _fmax(rng, dt):
    a, b = arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)
    b[0, 0] = a[0, 0]
    a[1, 1] = np.nan
    b[2, 2] = np.nan
    a[2, 3] = b[2, 3] = np.nan
    return [Sample([a, b])]


def _specials(rng, dt):
    a = arr(rng, (3, 4), dt)
    a[0, 0], a[1, 1], a[2, 2] = np.nan, np.inf, -np.inf
    return a


def _nan_inf(rng, dt):
    return [Sample([_specials(rng, dt)]), Sample([_specials(rng, dt)], {"nan": 1.5, "posinf": 9.0, "neginf": -9.0})]


def _one_special(rng, dt):
    return [Sample([_specials(rng, dt)])]


def _heaviside(rng, dt):
    a = arr(rng, (3, 4), dt)
    a[0, :2] = 0
    return [Sample([a, arr(rng, (3, 4), dt)]), Sample([a, arr(rng, (4,), dt)])]


def _signbit(rng, dt):
    a = arr(rng, (3, 4), dt)
    if "float" in dt:
        a[0, 0], a[0, 1] = 0.0, -0.0
    return [Sample([a])]


def _isin(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (5,), dt)]), Sample([arr(rng, (6,), dt), arr(rng, (2, 2), dt)],
                                                                       {"invert": True})]


def _ldexp(rng, dt):
    # torch's gradient is 0 for negative integer exponents (it takes 2 ** e in integers): compared for e >= 0
    return [Sample([arr(rng, (3, 4), dt), rng.integers(0, 4, size=(3, 4)).astype(np.int64)]),
            Sample([arr(rng, (3, 4), dt), rng.integers(-3, 4, size=(3, 4)).astype(np.int64)], grad_args=[])]


def _fpow(rng, dt):
    return [Sample([arr(rng, (3, 4), dt, 0.5, 2), arr(rng, (3, 4), dt, -2, 2)]),
            Sample([arr(rng, (4,), dt, 0.5, 2), 2.5])]


# ---- matrix products ----
def _vv(n=5, m=4):
    return lambda rng, dt: [Sample([arr(rng, (n,), dt), arr(rng, (m,), dt)])]


def _inner(rng, dt):
    return [Sample([arr(rng, (2, 3, 4), dt), arr(rng, (5, 4), dt)]), Sample([arr(rng, (4,), dt), arr(rng, (4,), dt)]),
            Sample([arr(rng, (), dt), arr(rng, (3, 2), dt)])]


def _addmv(rng, dt):
    return [Sample([arr(rng, (3,), dt), arr(rng, (3, 4), dt), arr(rng, (4,), dt)]),
            Sample([arr(rng, (3,), dt), arr(rng, (3, 4), dt), arr(rng, (4,), dt)], {"beta": 0.5, "alpha": 2.0}),
            Sample([arr(rng, (1,), dt), arr(rng, (3, 4), dt), arr(rng, (4,), dt)], {"beta": 0.0})]


def _addr(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (3,), dt), arr(rng, (4,), dt)]),
            Sample([arr(rng, (4,), dt), arr(rng, (3,), dt), arr(rng, (4,), dt)], {"beta": 2.0, "alpha": -1.0})]


def _baddbmm(rng, dt):
    return [Sample([arr(rng, (2, 3, 5), dt), arr(rng, (2, 3, 4), dt), arr(rng, (2, 4, 5), dt)]),
            Sample([arr(rng, (3, 5), dt), arr(rng, (2, 3, 4), dt), arr(rng, (2, 4, 5), dt)], {"beta": 0.5, "alpha": 3.0})]


def _addbmm(rng, dt):
    return [Sample([arr(rng, (3, 5), dt), arr(rng, (2, 3, 4), dt), arr(rng, (2, 4, 5), dt)]),
            Sample([arr(rng, (5,), dt), arr(rng, (2, 3, 4), dt), arr(rng, (2, 4, 5), dt)], {"beta": 2.0, "alpha": 0.5})]


def _chain(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (4, 2), dt), arr(rng, (2, 5), dt)])]


def _tensordot(rng, dt):
    return [Sample([arr(rng, (3, 4, 5), dt), arr(rng, (4, 5, 2), dt)]),
            Sample([arr(rng, (3, 4, 5), dt), arr(rng, (5, 3), dt)], {"dims": ([0, 2], [1, 0])}),
            Sample([arr(rng, (3, 4), dt), arr(rng, (2, 5), dt)], {"dims": 0})]


def _kron(rng, dt):
    return [Sample([arr(rng, (2, 3), dt), arr(rng, (3, 2), dt)]), Sample([arr(rng, (3,), dt), arr(rng, (2, 2), dt)])]


def _block_diag(rng, dt):
    return [Sample([arr(rng, (2, 3), dt), arr(rng, (3,), dt), arr(rng, (), dt), arr(rng, (1, 2), dt)])]


def _cart(rng, dt):
    return [Sample([arr(rng, (3,), dt), arr(rng, (2,), dt), arr(rng, (2,), dt)])]


def _mesh(rng, dt):
    return [Sample([arr(rng, (3,), dt), arr(rng, (4,), dt)], {"indexing": "ij"}),
            Sample([arr(rng, (3,), dt), arr(rng, (4,), dt), arr(rng, (2,), dt)], {"indexing": "xy"})]


def _comb(rng, dt):
    return [Sample([arr(rng, (4,), dt)]), Sample([arr(rng, (4,), dt)], {"r": 3}),
            Sample([arr(rng, (3,), dt)], {"with_replacement": True})]


def _square(rng, dt):
    return [Sample([arr(rng, (4, 4), dt)]), Sample([arr(rng, (3, 5), dt)])]


def _cdist(p):
    return lambda rng, dt: [Sample([arr(rng, (4, 3), dt), arr(rng, (5, 3), dt)], {"p": p}),
                            Sample([arr(rng, (2, 3, 3), dt), arr(rng, (2, 4, 3), dt)], {"p": p})]


def _cov(rng, dt):
    fw = rng.integers(1, 4, size=(6,)).astype(np.int64)
    aw = rng.uniform(0.5, 2, size=(6,)).astype(np.float64 if dt == "float64" else np.float32)
    return [Sample([arr(rng, (3, 6), dt)]), Sample([arr(rng, (3, 6), dt)], {"correction": 0}),
            Sample([arr(rng, (6,), dt)]), Sample([arr(rng, (3, 6), dt), fw], grad_args=[0]),
            Sample([arr(rng, (3, 6), dt), None, aw], grad_args=[0]),
            Sample([arr(rng, (3, 6), dt), fw, aw], {"correction": 2}, grad_args=[0])]


def _cov_call(m, x, fw=None, aw=None, **k):
    return m.cov(x, fweights=fw, aweights=aw, **k)


def _vander(rng, dt):
    return [Sample([arr(rng, (4,), dt)]), Sample([arr(rng, (3,), dt)], {"N": 5, "increasing": True})]


# ---- reductions and scans ----
def _nan(rng, dt):
    a = arr(rng, (3, 4, 5), dt)
    a[0, 0, 0] = a[1, 2, 3] = np.nan
    return [Sample([a]), Sample([a], {"dim": 1}), Sample([a], {"dim": (0, 2), "keepdim": True})]


def _nonzero(rng, dt):
    a = arr(rng, (3, 4), dt)
    a[0, :2] = 0
    return [Sample([a]), Sample([a], {"dim": 1})]


def _aminmax(rng, dt):
    return [Sample([arr(rng, (3, 4), dt)]), Sample([arr(rng, (3, 4), dt)], {"dim": 1}),
            Sample([arr(rng, (3, 4), dt)], {"dim": 0, "keepdim": True})]


def _scan(rng, dt):
    a = arr(rng, (3, 6), dt)
    if "float" in dt:
        b = arr(rng, (7,), dt)
        b[2] = b[5] = np.nan
        extra = [Sample([b, 0])]
    else:
        a = rng.integers(-2, 3, size=(3, 6)).astype(dt)  # ties: the last index wins
        extra = []
    return [Sample([a, 1]), Sample([a, 0]), *extra]


def _lcse(rng, dt):
    a = arr(rng, (3, 6), dt, -3, 3)
    a[0, 0] = -200.0  # a value far below the rest stays finite (no global max shift)
    return [Sample([a, 1]), Sample([a, 0])]


def _diff(rng, dt):
    return [Sample([arr(rng, (3, 6), dt)]), Sample([arr(rng, (3, 6), dt)], {"n": 2, "dim": 0}),
            Sample([arr(rng, (3, 6), dt), 1, -1, arr(rng, (3, 1), dt), arr(rng, (3, 2), dt)])]


def _trapz(rng, dt):
    x = np.sort(arr(rng, (5,), dt, 0, 3))
    return [Sample([arr(rng, (3, 5), dt)]), Sample([arr(rng, (3, 5), dt)], {"dx": 0.5}),
            Sample([arr(rng, (3, 5), dt), x], grad_args=[0]), Sample([arr(rng, (5, 3), dt)], {"dim": 0})]


# ---- movement ----
def _split(rng, dt):
    return [Sample([arr(rng, (4, 6, 2), dt), 2]), Sample([arr(rng, (4, 6, 2), dt), [1, 3]])]


def _diag_scatter(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (3,), dt)]),
            Sample([arr(rng, (3, 4), dt), arr(rng, (3,), dt)], {"offset": 1}),
            Sample([arr(rng, (2, 3, 3), dt), arr(rng, (2, 2), dt)], {"offset": -1, "dim1": 1, "dim2": 2})]


def _index_copy(rng, dt):
    return [Sample([arr(rng, (5, 3), dt), 0, np.array([4, 0, 2]), arr(rng, (3, 3), dt)]),
            Sample([arr(rng, (2, 5), dt), 1, np.array([1, 3]), arr(rng, (2, 2), dt)])]


def _masked_scatter(rng, dt):
    mask = rng.random((3, 4)) < 0.5
    return [Sample([arr(rng, (3, 4), dt), mask, arr(rng, (12,), dt)]),
            Sample([arr(rng, (3, 4), dt), mask[0], arr(rng, (3, 5), dt)])]


def _put(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), np.array([0, 5, -1]), arr(rng, (3,), dt)]),
            Sample([arr(rng, (3, 4), dt), np.array([[1, 1], [2, -12]]), arr(rng, (2, 2), dt)], {"accumulate": True})]


def _sum_to(rng, dt):
    return [Sample([arr(rng, (2, 3, 4), dt), (3, 1)]), Sample([arr(rng, (2, 3, 4), dt), (1, 3, 4)])]



# ---- second wave: integer math, cross/dist, searching ----
def _ints(rng, dt):
    a = rng.integers(-30, 31, size=(3, 4)).astype(dt)
    b = rng.integers(-12, 13, size=(3, 4)).astype(dt)
    a[0, 0] = b[0, 0] = 0
    return [Sample([a, b]), Sample([a, b[0]])]


def _shifts(rng, dt):
    a = rng.integers(-50, 51, size=(3, 4)).astype(dt)
    b = rng.integers(0, 8, size=(3, 4)).astype(dt)
    return [Sample([a, b]), Sample([a, 3])]


def _frexp(rng, dt):
    a = arr(rng, (3, 4), dt, -100, 100)
    a[0, 0], a[0, 1], a[0, 2] = 0.0, 8.0, 0.5
    return [Sample([a])]


def _cross(rng, dt):
    return [Sample([arr(rng, (4, 3), dt), arr(rng, (4, 3), dt)], {"dim": 1}),
            Sample([arr(rng, (3, 5), dt), arr(rng, (3, 1), dt)]),
            Sample([arr(rng, (2, 3, 4), dt), arr(rng, (2, 3, 4), dt)], {"dim": -2})]


def _dist(p):
    return lambda rng, dt: [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)], {"p": p}),
                            Sample([arr(rng, (3, 4), dt), arr(rng, (4,), dt)], {"p": p})]


def _renorm(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), 2, 0, 1.0]), Sample([arr(rng, (3, 4, 2), dt), 1, 1, 1.5]),
            Sample([arr(rng, (3, 4), dt), 3, -1, 0.8])]


def _sorted(rng, dt, shape):
    return np.sort(arr(rng, shape, dt, -3, 3), axis=-1)


def _search(rng, dt):
    seq = _sorted(rng, dt, (6,))
    v = arr(rng, (3, 4), dt, -4, 4)
    v[0, :2] = seq[1], seq[4]  # values equal to boundaries: left and right differ
    batched = _sorted(rng, dt, (2, 5))
    return [Sample([seq, v]), Sample([seq, v], {"right": True}), Sample([seq, v], {"side": "right"}),
            Sample([batched, arr(rng, (2, 3), dt, -4, 4)]), Sample([seq, v], {"out_int32": True})]


def _search_sorter(rng, dt):
    seq = arr(rng, (6,), dt, -3, 3)
    return [Sample([seq, arr(rng, (5,), dt, -4, 4), np.argsort(seq, kind="stable").astype(np.int64)])]


def _bucketize(rng, dt):
    b = _sorted(rng, dt, (5,))
    v = arr(rng, (3, 4), dt, -4, 4)
    v[1, 1] = b[2]
    return [Sample([v, b]), Sample([v, b], {"right": True})]


def _histogram(rng, dt):
    edges = np.array([-2.0, -0.5, 0.0, 1.0, 2.5], dtype=np.float32)
    return [Sample([arr(rng, (40,), dt)], {"bins": 5, "range": (-1.5, 1.5)}),
            Sample([arr(rng, (40,), dt), edges]),
            Sample([arr(rng, (40,), dt)], {"bins": 4, "range": (-2.0, 2.0), "density": True})]


def _scatter_reduce(reduce):
    def gen(rng, dt):
        idx0 = rng.integers(0, 4, size=(5, 3)).astype(np.int64)
        idx1 = rng.integers(0, 3, size=(4, 2)).astype(np.int64)
        return [Sample([arr(rng, (4, 3), dt), 0, idx0, arr(rng, (5, 3), dt), reduce]),
                Sample([arr(rng, (4, 3), dt), 0, idx0, arr(rng, (5, 3), dt), reduce], {"include_self": False}),
                Sample([arr(rng, (5, 3), dt), 1, idx1, arr(rng, (4, 2), dt), reduce]),
                # src larger than index (only its leading block is used): torch's backward fails here
                Sample([arr(rng, (5, 3), dt), 1, idx1, arr(rng, (4, 4), dt), reduce], grad_args=[])]
    return gen


def _index_reduce(reduce):
    def gen(rng, dt):
        return [Sample([arr(rng, (4, 3), dt), 0, np.array([3, 1, 3]), arr(rng, (3, 3), dt), reduce]),
                Sample([arr(rng, (4, 3), dt), 1, np.array([0, 2]), arr(rng, (4, 2), dt), reduce],
                       {"include_self": False})]
    return gen


def _gradient(rng, dt):
    return [Sample([arr(rng, (4, 5), dt)]), Sample([arr(rng, (4, 5), dt)], {"spacing": 2.0, "dim": 1}),
            Sample([arr(rng, (6,), dt)], {"spacing": [0.5]})]

SPECS = [
    # elementwise composites
    T("exp2", _un(), FLOATS + INTS),
    T("logaddexp", _logaddexp, FLOATS),
    R("logaddexp_inf", lambda m, a, b: m.logaddexp(a, b), lambda m, a, b: m.logaddexp(a, b), _logaddexp_inf,
      grad=False),
    T("logaddexp2", _logaddexp),
    T("xlogy", _xlogy, FLOATS, fd=False),  # torch's d/dx at x == 0 is log(y), not the one-sided limit
    T("hypot", _bin(), FLOATS),
    T("copysign", _bin(), FLOATS + INTS),
    T("sinc", _with_zero, FLOATS),
    T("logit", _un(0.05, 0.95), FLOATS),
    R("logit_eps", lambda m, a: m.logit(a, eps=0.2), lambda m, a: m.logit(a, eps=0.2), _un(0.0, 1.0)),
    T("deg2rad", _un(-200, 200), FLOATS + INTS),
    T("rad2deg", _un(), FLOATS + INTS),
    T("frac", _un(-5, 5), FLOATS),
    T("float_power", _fpow, ("float32", "float64", "int64")),
    T("fmod", _fmod, FLOATS + INTS),
    T("ldexp", _ldexp, FLOATS),
    T("fmax", _fmax, FLOATS, fd=False),  # NaN and ties in the sample: no finite differences
    T("fmin", _fmax, FLOATS, fd=False),
    T("nan_to_num", _nan_inf, FLOATS, fd=False),
    T("heaviside", _heaviside, FLOATS + INTS, grad=False),
    T("signbit", _signbit, FLOATS + INTS, grad=False),
    T("isin", _isin, ("float32", "int64"), grad=False),
    T("isposinf", _one_special, ("float32",), grad=False),
    T("isneginf", _one_special, ("float32",), grad=False),
    T("trapezoid", _trapz, F32_64),
    T("cumulative_trapezoid", _trapz, F32_64),
    S("expit", _un()),
    S("ndtr", _un(-4, 4), FLOATS),
    S("ndtri", _un(0.02, 0.98)),
    S("log_ndtr", _un(-4, 4)),
    S("entr", _entr),
    S("xlog1py", _xlogy, fd=False),
    S("sinc", _with_zero),
    # in-place forms of the composites (through the generic copy_ form)
    I("logit", _un(0.05, 0.95)),
    I("xlogy", _xlogy, fd=False),
    I("hypot", _same()),
    I("sinc", _with_zero),
    I("nan_to_num", _nan_inf, fd=False),
    I("addmv", lambda rng, dt: _addmv(rng, dt)[:2]),
    I("cumsum", lambda rng, dt: [Sample([arr(rng, (3, 4), dt), 1])]),
    I("index_copy", _index_copy),
    # matrix products
    T("outer", _vv()),
    T("ger", _vv(3, 6)),
    T("inner", _inner),
    T("vdot", _vv(5, 5)),
    T("addmv", _addmv),
    T("addr", _addr),
    T("baddbmm", _baddbmm),
    T("addbmm", _addbmm),
    T("chain_matmul", _chain),
    T("tensordot", _tensordot),
    T("kron", _kron, F32_64 + INTS),
    T("block_diag", _block_diag, F32_64 + INTS),
    T("cartesian_prod", _cart),
    T("meshgrid", _mesh),
    T("combinations", _comb),
    T("trace", _square, F32_64 + INTS),
    T("diagflat", lambda rng, dt: [Sample([arr(rng, (2, 3), dt)]), Sample([arr(rng, (3,), dt), -1])]),
    R("cdist_p2", lambda m, a, b, **k: m.cdist(a, b, **k), lambda m, a, b, **k: m.cdist(a, b, **k), _cdist(2.0)),
    R("cdist_p1", lambda m, a, b, **k: m.cdist(a, b, **k), lambda m, a, b, **k: m.cdist(a, b, **k), _cdist(1.0)),
    R("cdist_p3", lambda m, a, b, **k: m.cdist(a, b, **k), lambda m, a, b, **k: m.cdist(a, b, **k), _cdist(3.0)),
    R("cdist_pinf", lambda m, a, b, **k: m.cdist(a, b, **k), lambda m, a, b, **k: m.cdist(a, b, **k),
      _cdist(float("inf"))),
    R("cov", _cov_call, _cov_call, _cov),
    T("corrcoef", lambda rng, dt: [Sample([arr(rng, (3, 6), dt)])]),
    T("vander", _vander, F32_64 + ("int64",), grad=False),  # torch's own vander backward raises (in-place cumprod)
    # reductions and scans
    T("nansum", _nan, FLOATS),
    T("nanmean", _nan, F32_64),
    T("count_nonzero", _nonzero, F32_64 + INTS, grad=False),
    M("aminmax", _aminmax, F32_64 + INTS),
    T("cummax", _scan, F32_64 + INTS),
    T("cummin", _scan, F32_64 + INTS),
    T("logcumsumexp", _lcse),
    T("diff", _diff, F32_64 + INTS),
    # movement
    T("hsplit", _split),
    T("vsplit", _split),
    T("dsplit", lambda rng, dt: [Sample([arr(rng, (2, 3, 4), dt), 2]), Sample([arr(rng, (2, 3, 4), dt), [1]])]),
    T("ravel", lambda rng, dt: [Sample([arr(rng, (3, 4), dt).T.copy()])]),
    T("split_with_sizes", lambda rng, dt: [Sample([arr(rng, (6, 2), dt), [1, 2, 3]])]),
    T("narrow_copy", lambda rng, dt: [Sample([arr(rng, (4, 5), dt), 1, 1, 3])]),
    T("diagonal_scatter", _diag_scatter),
    T("index_copy", _index_copy, F32_64 + INTS),
    T("masked_scatter", _masked_scatter, F32_64 + INTS),
    T("put", _put, F32_64 + INTS),
    M("sum_to_size", _sum_to),
    # second wave
    T("gcd", _ints, INTS, grad=False),
    T("lcm", _ints, INTS, grad=False),
    T("bitwise_left_shift", _shifts, INTS, grad=False),
    T("bitwise_right_shift", _shifts, INTS, grad=False),
    R("shift_operators", lambda m, a, b: (a << b, a >> b), lambda m, a, b: (a << b, a >> b), _shifts, INTS,
      grad=False),
    T("frexp", _frexp, FLOATS, grad=False),
    T("cross", _cross),
    R("dist_p2", lambda m, a, b, **k: m.dist(a, b, **k), lambda m, a, b, **k: m.dist(a, b, **k), _dist(2)),
    R("dist_p1", lambda m, a, b, **k: m.dist(a, b, **k), lambda m, a, b, **k: m.dist(a, b, **k), _dist(1)),
    R("dist_p3", lambda m, a, b, **k: m.dist(a, b, **k), lambda m, a, b, **k: m.dist(a, b, **k), _dist(3.5)),
    R("dist_pinf", lambda m, a, b, **k: m.dist(a, b, **k), lambda m, a, b, **k: m.dist(a, b, **k),
      _dist(float("inf"))),
    T("renorm", _renorm),
    I("renorm", _renorm),
    T("adjoint", lambda rng, dt: [Sample([arr(rng, (2, 3, 4), dt)])]),
    T("constant_pad_nd", lambda rng, dt: [Sample([arr(rng, (2, 3), dt), [1, 2]]), Sample([arr(rng, (2, 3), dt), [0, 1, 2, 0], 1.5])]),
    T("searchsorted", _search, F32_64 + INTS, grad=False),
    R("searchsorted_sorter", lambda m, s, v, o: m.searchsorted(s, v, sorter=o),
      lambda m, s, v, o: m.searchsorted(s, v, sorter=o), _search_sorter, grad=False),
    T("bucketize", _bucketize, F32_64 + INTS, grad=False),
    T("histogram", _histogram, F32_64, grad=False),
    R("scatter_reduce_sum", lambda m, *a, **k: m.scatter_reduce(*a, **k), lambda m, *a, **k: m.scatter_reduce(*a, **k),
      _scatter_reduce("sum"), F32_64 + ("int64",)),
    R("scatter_reduce_prod", lambda m, *a, **k: m.scatter_reduce(*a, **k), lambda m, *a, **k: m.scatter_reduce(*a, **k),
      _scatter_reduce("prod"), F32_64 + ("int64",)),
    R("scatter_reduce_mean", lambda m, *a, **k: m.scatter_reduce(*a, **k), lambda m, *a, **k: m.scatter_reduce(*a, **k),
      _scatter_reduce("mean"), F32_64 + ("int64",)),
    R("scatter_reduce_amax", lambda m, *a, **k: m.scatter_reduce(*a, **k), lambda m, *a, **k: m.scatter_reduce(*a, **k),
      _scatter_reduce("amax"), F32_64 + ("int64",)),
    R("scatter_reduce_amin", lambda m, *a, **k: m.scatter_reduce(*a, **k), lambda m, *a, **k: m.scatter_reduce(*a, **k),
      _scatter_reduce("amin"), F32_64 + ("int64",)),
    R("index_reduce_prod", lambda m, x, *a, **k: x.index_reduce(*a, **k), lambda m, x, *a, **k: x.index_reduce(*a, **k),
      _index_reduce("prod")),
    R("index_reduce_mean", lambda m, x, *a, **k: x.index_reduce(*a, **k), lambda m, x, *a, **k: x.index_reduce(*a, **k),
      _index_reduce("mean")),
    R("index_reduce_amax", lambda m, x, *a, **k: x.index_reduce(*a, **k), lambda m, x, *a, **k: x.index_reduce(*a, **k),
      _index_reduce("amax")),
    R("index_reduce_amin", lambda m, x, *a, **k: x.index_reduce(*a, **k), lambda m, x, *a, **k: x.index_reduce(*a, **k),
      _index_reduce("amin")),
    T("gradient", _gradient),
]
