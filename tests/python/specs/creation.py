"""Spec rows for the creation ops (Empty, Arange, Linspace, Eye, Fill through zeros/ones/full,
and the random ops Uniform, Normal, RandInt, Bernoulli). Random values cannot match PyTorch's
streams, so their rows compare shape and dtype (values times zero); test_creation_random.py
checks their statistics."""
from op_specs import OpSpec, Sample, arr

ALL = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "int8", "bool")
NUM = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "int8")
FLOATS = ("float32", "float64", "float16", "bfloat16")


def _dt(mod, name):
    return getattr(mod, name)


def _none(rng, dt):
    return [Sample([dt])]


SPECS = [
    OpSpec("zeros", ["Fill"], lambda l, dt: l.zeros(2, 3, dtype=_dt(l, dt)), lambda t, dt: t.zeros(2, 3, dtype=_dt(t, dt)),
           _none, dtypes=ALL, grad=False),
    OpSpec("ones_tuple", ["Fill"], lambda l, dt: l.ones((2, 3), dtype=_dt(l, dt)), lambda t, dt: t.ones((2, 3), dtype=_dt(t, dt)),
           _none, dtypes=ALL, grad=False),
    OpSpec("zeros_default", ["Fill"], lambda l: (l.zeros([4]), l.ones(size=(1, 2)), l.zeros(())),
           lambda t: (t.zeros([4]), t.ones(size=(1, 2)), t.zeros(())), lambda rng, dt: [Sample([])],
           dtypes=("float32",), grad=False),
    OpSpec("full_infer", ["Fill"], lambda l: (l.full((2, 2), 3), l.full((2,), 1.5), l.full((3,), True), l.full((2,), 2, dtype=l.float64)),
           lambda t: (t.full((2, 2), 3), t.full((2,), 1.5), t.full((3,), True), t.full((2,), 2, dtype=t.float64)),
           lambda rng, dt: [Sample([])], dtypes=("float32",), grad=False),
    OpSpec("empty", ["Empty"], lambda l, dt: (l.empty(2, 3, dtype=_dt(l, dt)).shape, str(l.empty(2, dtype=_dt(l, dt)).dtype).split(".")[-1]),
           lambda t, dt: (t.empty(2, 3, dtype=_dt(t, dt)).shape, str(t.empty(2, dtype=_dt(t, dt)).dtype).split(".")[-1]),
           _none, dtypes=ALL, grad=False),
    OpSpec("like", ["Fill", "Empty"],
           lambda l, a: (l.zeros_like(a), l.ones_like(a), l.full_like(a, 7), l.zeros_like(a, dtype=l.float64), l.empty_like(a).shape),
           lambda t, a: (t.zeros_like(a), t.ones_like(a), t.full_like(a, 7), t.zeros_like(a, dtype=t.float64), t.empty_like(a).shape),
           lambda rng, dt: [Sample([arr(rng, (2, 3), dt)])], dtypes=NUM, grad=False),
    OpSpec("arange", ["Arange"], lambda l, *a, **k: l.arange(*a, **k), lambda t, *a, **k: t.arange(*a, **k),
           lambda rng, dt: [Sample([5]), Sample([1, 7, 2]), Sample([0, 1, 0.1]), Sample([-1.5, 2.5, 0.5]),
                            Sample([10, 0, -3]), Sample([0.5]), Sample([2, 2]), Sample([0, 5], {"step": 2}),
                            Sample([], {"end": 4}), Sample([0, 1, 0.125], {"dtype": None})],
           dtypes=("float32",), grad=False),
    OpSpec("arange_dtype", ["Arange"], lambda l, dt: l.arange(0, 10, 3, dtype=_dt(l, dt)),
           lambda t, dt: t.arange(0, 10, 3, dtype=_dt(t, dt)), _none, dtypes=NUM, grad=False),
    OpSpec("linspace", ["Linspace"], lambda l, *a, **k: l.linspace(*a, **k), lambda t, *a, **k: t.linspace(*a, **k),
           lambda rng, dt: [Sample([0, 1, 7]), Sample([-2, 5, 10]), Sample([3, 3, 1]), Sample([0, 1, 0]),
                            Sample([1, -1, 6])], dtypes=("float32",), grad=False),
    OpSpec("linspace_dtype", ["Linspace"], lambda l, dt: l.linspace(0, 10, 4, dtype=_dt(l, dt)),
           lambda t, dt: t.linspace(0, 10, 4, dtype=_dt(t, dt)), _none, dtypes=NUM, grad=False),
    OpSpec("eye", ["Eye"], lambda l, dt: (l.eye(3, dtype=_dt(l, dt)), l.eye(2, 4, dtype=_dt(l, dt)), l.eye(3, 1, dtype=_dt(l, dt))),
           lambda t, dt: (t.eye(3, dtype=_dt(t, dt)), t.eye(2, 4, dtype=_dt(t, dt)), t.eye(3, 1, dtype=_dt(t, dt))),
           _none, dtypes=ALL, grad=False),
    # Random ops: shape and dtype against PyTorch (values times zero).
    OpSpec("rand_meta", ["Uniform"], lambda l, dt: (l.rand(3, 4, dtype=_dt(l, dt)) * 0, l.rand((2,), dtype=_dt(l, dt)) * 0),
           lambda t, dt: (t.rand(3, 4, dtype=_dt(t, dt)) * 0, t.rand((2,), dtype=_dt(t, dt)) * 0),
           _none, dtypes=FLOATS, grad=False),
    OpSpec("randn_meta", ["Normal"], lambda l, dt: (l.randn(3, 5, dtype=_dt(l, dt)) * 0, l.randn_like(l.zeros(2, dtype=_dt(l, dt))) * 0),
           lambda t, dt: (t.randn(3, 5, dtype=_dt(t, dt)) * 0, t.randn_like(t.zeros(2, dtype=_dt(t, dt))) * 0),
           _none, dtypes=FLOATS, grad=False),
    OpSpec("randint_meta", ["RandInt"], lambda l, dt: (l.randint(0, 5, (3, 4), dtype=_dt(l, dt)) * 0, l.randint(7, (2,)) * 0),
           lambda t, dt: (t.randint(0, 5, (3, 4), dtype=_dt(t, dt)) * 0, t.randint(7, (2,)) * 0),
           _none, dtypes=NUM, grad=False),
    OpSpec("randperm_meta", ["RandPerm"], lambda l, dt: (l.randperm(6, dtype=_dt(l, dt)) * 0, l.randperm(0) * 0),
           lambda t, dt: (t.randperm(6, dtype=_dt(t, dt)) * 0, t.randperm(0) * 0), _none,
           dtypes=("int64", "int32", "float32"), grad=False),
    OpSpec("inplace_random_meta", ["Uniform", "Normal", "Bernoulli"],
           lambda l, dt: (l.zeros(3, 2, dtype=_dt(l, dt)).uniform_(-1, 1) * 0, l.zeros(4, dtype=_dt(l, dt)).normal_(2, 3) * 0,
                          l.zeros(4, dtype=_dt(l, dt)).bernoulli_(0.5) * 0, l.bernoulli(l.full((5,), 0.5, dtype=_dt(l, dt))) * 0),
           lambda t, dt: (t.zeros(3, 2, dtype=_dt(t, dt)).uniform_(-1, 1) * 0, t.zeros(4, dtype=_dt(t, dt)).normal_(2, 3) * 0,
                          t.zeros(4, dtype=_dt(t, dt)).bernoulli_(0.5) * 0, t.bernoulli(t.full((5,), 0.5, dtype=_dt(t, dt))) * 0),
           _none, dtypes=("float32", "float64"), grad=False),
]
