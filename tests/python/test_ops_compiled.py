"""Compiled equals eager, for every row of the op-spec table (op_specs): each sample of each op,
in every dtype the row lists, is run eagerly and through lucid.compile(strict=True) (so nothing
may fall back), twice (the second call runs the cached executable with fresh values), and the
outputs must agree: integers and booleans exactly, floats within a few ulps (compiled may fuse,
which can round differently) with NaN and infinities at eager's positions. For the rows with
gradients, the backward through the compiled forward must give eager's gradients (float64).

Why: test_ops.py checks eager against PyTorch op by op; the compile tests check hand-picked
programs. Without this suite a new op can be added with a forward and a gradient test and still
miscompile (a wrong lowering, a kernel that ignores strides the planner gives it, an attribute
lost in the IR), which is the silent wrong answer the project forbids.

Non-tensor arguments of a sample (dims, scalars, shapes) are closed over by the compiled function,
as a user's constants would be; only array arguments are inputs.

A row's op compiled on its own runs as its own kernel (a group of one node stays a node), so the
elementwise rows (every op they cover lowers as Elementwise) are also compiled inside a
FusedElementwise group: the function returns the op's result y and y * 2, which joins y's group,
so the block interpreter, not the op's kernel, computes y, and that must equal eager too.
"""
import numpy as np
import pytest

import lucid
from harness import flat, ir_fused_results, to_lucid
from op_specs import all_specs

SPECS = all_specs()
# Rows whose op reads tensor values on the host by definition: the output shape depends on data
# (boolean-mask selection) or the op validates data and raises as PyTorch does. These run eagerly
# with the host read named as the reason (torch.compile graph-breaks on the same ops); the test
# checks the reason and the values. Any other row must compile with no fallback.
HOST_READ = {
    "masked_select": "nonzero()",
    "getitem_index": "nonzero()",   # its samples include x[bool_mask]
    "gaussian_nll_loss": "bool()",  # raises for a negative var, as torch
    "equal": "item()",              # returns a Python bool, as torch.equal
    "allclose": "allclose()",       # returns a Python bool
    "unique": "unique()",           # the output shape depends on the data
    "unique_method_nan": "unique()",
    "unique_consecutive": "unique_consecutive()",
    # Not host reads: the fused optimizer steps write their input lists in place, which a trace
    # cannot record, so they run eagerly saying so (OpDef::writes_inputs).
    "fused_adam": "writes its inputs in place",
    "fused_sgd": "writes its inputs in place",
}
# ulps-level tolerance on values scaled by the output's magnitude (see harness.scaled_err)
TOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-6, "float64": 1e-13}


def _cases():
    for s in SPECS:
        for dt in s.dtypes:
            yield pytest.param(s, dt, id=f"{s.name}-{dt}")


def _split(sample):
    """Positions of the array arguments: the compiled function's inputs."""
    return [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]


def _call(spec, sample, pos, tensors):
    args = list(sample.args)
    for i, t in zip(pos, tensors):
        args[i] = t
    return spec.lucid_fn(lucid, *args, **sample.kwargs)


def _compiled(spec, sample, pos):
    return lucid.compile(lambda *ts: _call(spec, sample, pos, ts), strict=spec.name not in HOST_READ)


def _check_fallbacks(spec, fn):
    reasons = list(fn.cache_info()["eager_only"].values())
    if spec.name not in HOST_READ:
        assert not reasons, f"{spec.name}: fell back: {reasons}"
    else:
        assert all(HOST_READ[spec.name] in r for r in reasons), f"{spec.name}: unexpected reasons {reasons}"


def _compare(got, want, dtype, what):
    got, want = flat(got), flat(want)
    assert len(got) == len(want), f"{what}: {len(got)} outputs vs eager {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if not isinstance(w, lucid.Tensor):
            assert g == w, f"{what} output {k}: {g!r} vs eager {w!r}"
            continue
        assert isinstance(g, lucid.Tensor), f"{what} output {k}: {type(g).__name__} vs eager Tensor"
        assert tuple(g.shape) == tuple(w.shape), f"{what} output {k}: shape {tuple(g.shape)} vs eager {tuple(w.shape)}"
        assert g.dtype == w.dtype, f"{what} output {k}: dtype {g.dtype} vs eager {w.dtype}"
        gn = g.detach().float().numpy() if w.dtype in (lucid.float16, lucid.bfloat16) else g.detach().numpy()
        wn = w.detach().float().numpy() if w.dtype in (lucid.float16, lucid.bfloat16) else w.detach().numpy()
        if not w.dtype.is_floating_point:
            np.testing.assert_array_equal(gn, wn, err_msg=f"{what} output {k}")
            continue
        fin = np.isfinite(wn)
        np.testing.assert_array_equal(np.isfinite(gn), fin, err_msg=f"{what} output {k}: non-finite positions")
        np.testing.assert_array_equal(gn[~fin], wn[~fin], err_msg=f"{what} output {k}: non-finite values")
        if fin.any():
            scale = max(float(np.abs(wn[fin]).max()), 1.0)
            err = float(np.abs(gn[fin] - wn[fin]).max()) / scale
            assert err <= TOL.get(dtype, TOL["float64"]), f"{what} output {k}: max scaled err {err:.3g}\ncompiled {gn}\neager {wn}"


@pytest.mark.parametrize("spec,dtype", list(_cases()))
def test_compiled_forward_equals_eager(spec, dtype):
    for n, sample in enumerate(spec.samples(np.random.default_rng(0), dtype)):
        pos = _split(sample)
        if not pos:
            continue  # creation ops with no array input: nothing to feed (test_compile covers them)
        fn = _compiled(spec, sample, pos)
        # two calls: the trace, then the cached executable with new values of the same signature
        for call, rng_seed in enumerate((0, 1)):
            s2 = sample
            if call:
                fresh = spec.samples(np.random.default_rng(rng_seed + 100), dtype)
                if n < len(fresh) and len(fresh[n].args) == len(sample.args) and all(
                        isinstance(fresh[n].args[i], np.ndarray) and fresh[n].args[i].shape == sample.args[i].shape
                        and fresh[n].args[i].dtype == sample.args[i].dtype for i in pos):
                    s2 = fresh[n]
            ts = [to_lucid(s2.args[i], dtype) for i in pos]
            want = _call(spec, sample, pos, ts)
            got = fn(*ts)
            _compare(got, want, dtype, f"{spec.name}[{n}] {dtype} call {call}")
        _check_fallbacks(spec, fn)


ELEMENTWISE_LOWERING = 0  # Lowering::Elementwise (ops/op_def.h)
_LOWERING = {o["name"]: o["lowering"] for o in lucid._C._op_registry()}
# Ops that lower as Elementwise but stay kernel instructions for integer dtypes: integer // and %
# raise on a zero divisor, which a fused block can't (compile/passes/ew_group.cpp). Their integer
# samples are still compared with eager; nothing is fused for them to check.
_KERNEL_FOR_INTEGERS = {"FloorDivide", "Remainder"}


def _elementwise_cases():
    for s in SPECS:
        if s.ops and s.name not in HOST_READ and all(_LOWERING.get(op) == ELEMENTWISE_LOWERING for op in s.ops):
            for dt in s.dtypes:
                yield pytest.param(s, dt, id=f"{s.name}-{dt}")


@pytest.mark.parametrize("spec,dtype", list(_elementwise_cases()))
def test_elementwise_row_inside_a_fused_group_equals_eager(spec, dtype):
    kernel_only = dtype not in TOL and set(spec.ops) <= _KERNEL_FOR_INTEGERS
    for n, sample in enumerate(spec.samples(np.random.default_rng(0), dtype)):
        pos = _split(sample)
        if not pos:
            continue

        def in_group(*ts):
            ys = flat(_call(spec, sample, pos, ts))
            return tuple(ys) + tuple(y * 2 for y in ys)

        fn = lucid.compile(in_group, strict=True)
        ts = [to_lucid(sample.args[i], dtype) for i in pos]
        want = in_group(*ts)
        got = fn(*ts)
        _compare(got, want, dtype, f"{spec.name}[{n}] {dtype} in a fused group")
        if kernel_only:
            continue
        fused, returned = ir_fused_results(fn.ir())
        ys = returned[:len(returned) // 2]
        assert set(ys) <= fused, f"{spec.name}[{n}] {dtype}: {ys} not computed in a fused group\n{fn.ir()}"


def _grad_cases():
    for s in SPECS:
        if s.grad:
            yield pytest.param(s, id=s.name)


@pytest.mark.parametrize("spec", list(_grad_cases()))
def test_backward_through_compiled_equals_eager(spec):
    rng = np.random.default_rng(1)
    for n, sample in enumerate(spec.samples(rng, "float64")):
        pos = _split(sample)
        idx = list(sample.grad_args) if sample.grad_args is not None else \
            [i for i in pos if sample.args[i].dtype.kind == "f"]
        if not idx:
            continue
        fn = _compiled(spec, sample, pos)
        grads = []
        for compiled in (False, True):
            ts = [to_lucid(sample.args[i], "float64", i in idx) for i in pos]
            outs = flat(fn(*ts) if compiled else _call(spec, sample, pos, ts))
            outs = [o for o in outs if isinstance(o, lucid.Tensor) and o.dtype.is_floating_point and o.requires_grad]
            if not outs:
                break
            w_rng = np.random.default_rng(7)
            loss = sum(((o * lucid.tensor(w_rng.standard_normal(tuple(o.shape)))).sum() for o in outs),
                       lucid.tensor(0.0, dtype=lucid.float64))
            inputs = [t for i, t in zip(pos, ts) if i in idx]
            grads.append(lucid.autograd.grad([loss], inputs, allow_unused=True))
        if len(grads) < 2:
            continue
        for k, (g, w) in enumerate(zip(grads[1], grads[0])):
            if w is None:
                assert g is None or not np.any(g.numpy()), f"{spec.name}[{n}] grad {k}: compiled gave one, eager none"
                continue
            assert g is not None, f"{spec.name}[{n}] grad {k}: compiled gave none"
            _compare(g, w, "float64", f"{spec.name}[{n}] grad {k}")
        _check_fallbacks(spec, fn)
