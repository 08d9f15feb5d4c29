"""NVRTC-fused elementwise kernels on CUDA (backends/cuda/compile/fused_kernels.h): a compiled
function's elementwise/broadcast chains run as one generated kernel per group, inside the CUDA
graph. What is checked, on a table of chains: compiled equals lucid eager on the same GPU (float32 to an ulp:
each op's result is rounded as eager stores it, no FMA across ops; 16-bit within one rounding), with broadcast inputs, Python scalars, NaN and inf, zero-size
tensors, views and non-contiguous arguments, bool intermediates, casts, integer chains and
groups with several outputs; that the groups really became kernels (the executable's
`fused_kernels`: kernels, groups run op by op and why, where the code came from) and that replays
still happen; the op-by-op fallback (LUCID_CUDA_FUSED=0, a group of host scalars) with its
recorded reason; and the cubin cache: a second process compiling the same function reads the
cubin from the persistent compile cache (code "disk", no NVRTC), and a corrupt entry is compiled
again. The generator and NVRTC without a GPU: tests/cpp/cuda/test_fused_kernels.cpp.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import lucid
import lucid.nn.functional as F
from devices import requires_cuda

pytestmark = requires_cuda

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")


def exe_of(cf):
    (key,) = cf._keys()
    return cf._executable(key)


def host(t):
    return t.detach().cpu().numpy()


def arr(shape, seed, dtype=np.float32, special=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if special and a.size >= 6:
        flat = a.reshape(-1)
        flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30]
    return a.astype(dtype)


def dev(a, dtype=None):
    t = lucid.tensor(a)
    if dtype is not None:
        t = t.to(dtype)
    return t.to("cuda")


def as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


# (id, fn, inputs (numpy or (numpy, lucid dtype)), groups the compile should fuse into kernels)
CHAINS = [
    ("bias_gelu_residual", lambda x, b, r: F.gelu(x + b, approximate="tanh") + r,
     [arr((64, 96), 1), arr((96,), 2), arr((64, 96), 3)], 1),
    ("python_scalars", lambda x: (x * 0.5 + 2.0).exp() - 1.0 / (x.abs() + 1), [arr((33, 17), 4)], 1),
    ("nan_inf_signed_zero", lambda x, y: lucid.maximum(x.relu() * 2, y) + x.sigmoid() - y.tanh(),
     [arr((40, 40), 5, special=True), arr((40, 40), 6, special=True)], 1),
    ("zero_size", lambda x, y: (x + y).tanh() * 3, [arr((0, 7), 7), arr((7,), 8)], 1),
    ("transposed_view", lambda x, y: x.t() * 2 + y, [arr((48, 80), 9), arr((80, 48), 10)], 1),
    ("broadcast_both_3d", lambda x, y: (x * y).sin() + y, [arr((4, 1, 33), 11), arr((5, 1), 12)], 1),
    ("compare_where", lambda x, y: lucid.where(x > y, x - y, y * 0.25), [arr((30, 50), 13), arr((50,), 14)], 1),
    ("clamp_leaky_relu", lambda x: F.leaky_relu(x.clamp(-1.0, 2.0), 0.1) * x, [arr((1000,), 15)], 1),
    ("silu_softplus_erf", lambda x: F.silu(x) + F.softplus(x) * lucid.erf(x), [arr((257, 3), 16)], 1),
    ("float16", lambda x: (x * 1.5 + 0.25).sigmoid() * x, [(arr((64, 64), 17), lucid.float16)], 1),
    ("bfloat16", lambda x, y: (x - y).relu() * y + 1.0, [(arr((64, 64), 18), lucid.bfloat16),
                                                          (arr((64,), 19), lucid.bfloat16)], 1),
    ("two_outputs", lambda x: (x.exp(), x.exp() * 2 + 1), [arr((20, 30), 20)], 1),
    ("int32", lambda x: (x * 3 + 1).abs() - x, [(np.arange(-50, 50, dtype=np.int32).reshape(10, 10), None)], 1),
    ("cast_inside", lambda x: (x * 2).to(lucid.float16).float() + 1, [arr((16, 16), 21)], 1),
]


def make_inputs(spec):
    out = []
    for s in spec:
        a, dt = s if isinstance(s, tuple) else (s, None)
        out.append(dev(a, dt))
    return out


def assert_close(got, want, what):
    assert got.dtype == want.dtype, what
    g, w = host(got.float()).astype(np.float64), host(want.float()).astype(np.float64)
    # The generated kernel rounds every op's result as eager stores it (no FMA across ops): equal,
    # but for a transcendental inlined differently by a last ulp.
    tol = dict(rtol=1e-2, atol=1e-2) if want.dtype in (lucid.float16, lucid.bfloat16) else dict(rtol=2e-7, atol=0)
    np.testing.assert_allclose(g, w, equal_nan=True, err_msg=what, **tol)


@pytest.mark.parametrize("name,fn,spec,groups", CHAINS, ids=[c[0] for c in CHAINS])
def test_fused_chain_equals_eager_and_is_one_kernel(name, fn, spec, groups):
    cf = lucid.compile(fn, strict=True)
    for call in range(5):  # trace, warm-up, capture + replay, replays
        xs = make_inputs(spec)
        want = as_tuple(fn(*xs))
        got = as_tuple(cf(*xs))
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, f"{name} call {call} output {k}")
    exe = exe_of(cf)
    fk = exe.fused_kernels
    assert fk["kernels"] == groups and fk["per_op"] == 0, (fk, exe.ir)
    assert fk["code"] in ("nvrtc", "disk", "memory")
    assert exe.graph_fallback == "" and exe.graph_replays == 3, exe.graph_fallback


def test_non_contiguous_arguments_are_read_through_their_strides():
    # Without a graph (LUCID_CUDA_GRAPHS=0) the kernel reads the argument itself, a transposed
    # view and a sliced one: the strided path of the generated kernel.
    os.environ["LUCID_CUDA_GRAPHS"] = "0"
    try:
        lucid._C._clear_executable_cache()
        fn = lambda a, b: (a * 2 + b).relu() - a  # noqa: E731
        cf = lucid.compile(fn, strict=True)
        for k in range(3):
            a = dev(arr((37, 53), 30 + k)).t()            # [53, 37], transposed
            b = dev(arr((53, 74), 33 + k))[:, ::2]        # [53, 37], every other column
            np.testing.assert_allclose(host(cf(a, b)), host(fn(a, b)), rtol=2e-6, atol=1e-6)
        fk = exe_of(cf).fused_kernels
        assert fk["kernels"] == 1 and fk["per_op"] == 0, fk
    finally:
        del os.environ["LUCID_CUDA_GRAPHS"]
        lucid._C._clear_executable_cache()


def test_turned_off_groups_run_op_by_op_saying_why(monkeypatch):
    monkeypatch.setenv("LUCID_CUDA_FUSED", "0")
    lucid._C._clear_executable_cache()
    fn = lambda x, b: F.gelu(x + b) * 0.5  # noqa: E731
    cf = lucid.compile(fn, strict=True)
    x, b = dev(arr((24, 40), 40)), dev(arr((40,), 41))
    for _ in range(4):
        np.testing.assert_array_equal(host(cf(x, b)), host(fn(x, b)))  # the eager kernels, bit for bit
    fk = exe_of(cf).fused_kernels
    assert fk["kernels"] == 0 and fk["per_op"] == 1, fk
    assert "LUCID_CUDA_FUSED=0" in fk["fallback"] and "gelu" in fk["fallback"], fk
    lucid._C._clear_executable_cache()


def test_a_group_of_host_scalars_runs_on_the_cpu_op_by_op():
    x = dev(arr((5, 9), 42))
    s = lucid.tensor(0.75, dtype=lucid.float64)  # a CPU 0-d input: the chain s * 2 + 1 runs on the host
    fn = lambda a, t: a * (t * 2 + 1)  # noqa: E731
    cf = lucid.compile(fn, strict=True)
    for k in range(3):
        s.fill_(0.75 + k)
        np.testing.assert_array_equal(host(cf(x, s)), host(fn(x, s)))
    fk = exe_of(cf).fused_kernels
    assert fk["kernels"] == 0 and fk["per_op"] == 1 and "host value" in fk["fallback"], fk


WORKER = """
import json, sys
import numpy as np
import lucid
x = lucid.tensor(np.linspace(-3, 3, 4096, dtype=np.float32).reshape(64, 64)).to("cuda")
f = lucid.compile(lambda a: (a * 1.25 + 0.5).tanh() * a + 1.0, strict=True)
for _ in range(3):
    y = f(x)
(key,) = f._keys()
fk = f._executable(key).fused_kernels
print(json.dumps({"code": fk["code"], "kernels": fk["kernels"], "sum": float(y.sum().item())}))
"""


def run_worker(cache_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LUCID_")}
    env.update(PYTHONPATH=PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", ""), LUCID_COMPILE_CACHE_DIR=str(cache_dir))
    p = subprocess.run([sys.executable, "-c", WORKER], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_a_second_process_reads_the_cubin_from_the_compile_cache(tmp_path):
    first = run_worker(tmp_path)
    assert first["code"] == "nvrtc" and first["kernels"] == 1, first
    cubins = sorted((tmp_path / "cubin").glob("*.lcc"))
    assert len(cubins) == 1, cubins
    second = run_worker(tmp_path)
    assert second == dict(first, code="disk"), (first, second)  # no NVRTC call, the same result
    # A truncated entry is not trusted: compiled again, rewritten, same result.
    data = cubins[0].read_bytes()
    cubins[0].write_bytes(data[: len(data) // 2])
    third = run_worker(tmp_path)
    assert third == dict(first, code="nvrtc"), third
    assert cubins[0].stat().st_size == len(data)
