"""Compiled calls whose arguments alias each other or the module's state, with in-place writes:
random programs and random alias patterns, compiled against eager, call after call.

Why: an argument that is a view of another argument, of a buffer or of a parameter read stale
data on cached calls after an in-place write (issue 9: `f(a, b): a.add_(1); return b * 1`
called as `cf(x, x[1:3])` was right on the first call only). The graph holds each argument and
bound tensor as an independent value, so which ones overlap is part of the call's key (between
arguments, and between arguments and every bound tensor of the compiled module), and a trace
whose writes meet an overlap runs eagerly with the reason recorded.

Each example draws a program (in-place writes to the arguments, to the buffer and to views of
them, reads before and after the writes) and a sequence of 4 calls, each with its own alias
pattern (fresh tensors, views of one shared base with overlapping or disjoint windows, the same
tensor twice, views of the module's buffer, the buffer itself). The same calls run on an eager
twin; after every call the outputs, the buffer, and the base tensors the views came from must be
equal, or both runs raise the same exception type.
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import lucid
import lucid.nn as nn

SCALE = float(os.environ.get("LUCID_FUZZ_SCALE", "1"))
N = 4  # every argument is a length-4 vector; the base and the buffer have 12 elements

# An argument: ("fresh",), ("base", start, step), ("buf", start, step), ("buf_whole",), or
# ("same", k) (the very tensor passed as argument k < this one).
windows = st.tuples(st.integers(0, 3), st.sampled_from([1, 2])).filter(lambda w: w[0] + (N - 1) * w[1] < 12)
arg_spec = st.one_of(st.just(("fresh",)), windows.map(lambda w: ("base",) + w), windows.map(lambda w: ("buf",) + w))

TARGETS = ["a", "b", "buf", "buf_view"]
write_op = st.tuples(st.just("write"), st.sampled_from(TARGETS),
                     st.sampled_from(["add_", "mul_", "fill_", "setitem", "copy_from_other"]),
                     st.sampled_from([0.5, 2.0, -1.0]))
read_op = st.tuples(st.just("read"), st.sampled_from(TARGETS), st.sampled_from(["mul", "sum"]), st.just(0.0))


class Prog(nn.Module):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops
        self.register_buffer("buf", lucid.arange(12.0) * 0.5 - 2.0)

    def forward(self, a, b):
        outs = []

        def target(name):
            return {"a": a, "b": b, "buf": self.buf[2:2 + N], "buf_view": self.buf[5:5 + 2 * N:2]}[name]

        for kind, name, op, c in self.ops:
            t = target(name)
            if kind == "read":
                outs.append(t * 1.5 if op == "mul" else t.sum())
            elif op == "add_":
                t.add_(c)
            elif op == "mul_":
                t.mul_(c)
            elif op == "fill_":
                t[1:3].fill_(c)
            elif op == "setitem":
                t[0] = c
            else:
                t.copy_(b if name != "b" else a)
        return tuple(outs) + (a * 1.0, b + 0.0, self.buf * 1.0)


def make_args(model, base, specs):
    out = []
    for s in specs:
        if s[0] == "fresh":
            out.append(lucid.arange(float(N)) + 10.0)
        elif s[0] == "same":
            out.append(out[s[1]])
        elif s[0] == "buf_whole":
            out.append(model.buf[:N] if len(out) else model.buf[:N])
        else:
            src = base if s[0] == "base" else model.buf
            out.append(src[s[1]:s[1] + (N - 1) * s[2] + 1:s[2]])
    return out


def run(model, fn, specs):
    base = lucid.arange(12.0) + 100.0
    args = make_args(model, base, specs)
    try:
        out = fn(*args)
    except Exception as e:  # noqa: BLE001 - compared by type with the other run
        return type(e)
    return [o.numpy().copy() for o in out] + [base.numpy().copy(), model.buf.numpy().copy()]


def check(ops, calls):
    with lucid.no_grad():
        eager = Prog(ops)
        comp = Prog(ops)
        cm = lucid.compile(comp)
        for k, specs in enumerate(calls):
            want, got = run(eager, eager, specs), run(comp, cm, specs)
            if isinstance(want, type) or isinstance(got, type):
                assert want == got, f"call {k} {specs}: eager {want}, compiled {got}"
                continue
            assert len(want) == len(got)
            for i, (w, g) in enumerate(zip(want, got)):
                np.testing.assert_array_equal(g, w, err_msg=f"call {k} {specs}, value {i} (ops {ops})")


call_specs = st.lists(arg_spec, min_size=2, max_size=2).flatmap(
    lambda l: st.sampled_from([l, [l[0], ("same", 0)], [("buf_whole",), l[1]]]))


@settings(max_examples=int(150 * SCALE), deadline=None, derandomize="LUCID_FUZZ_SEED" in os.environ,
          suppress_health_check=list(HealthCheck))
@given(ops=st.lists(st.one_of(write_op, read_op), min_size=1, max_size=5),
       calls=st.lists(call_specs, min_size=4, max_size=4))
def test_random_alias_patterns_with_inplace_writes(ops, calls):
    check(ops, calls)


def test_view_of_another_argument_is_not_stale():
    # The reported case: right on the first call, stale on every later one.
    def f(a, b):
        a.add_(1)
        return b * 1

    cf = lucid.compile(f)
    for _ in range(3):
        x, xe = lucid.arange(5.0), lucid.arange(5.0)
        assert cf(x, x[1:3]).tolist() == f(xe, xe[1:3]).tolist() == [2.0, 3.0]
        assert x.tolist() == xe.tolist()


@pytest.mark.parametrize("window", ["inner_view", "prefix_view", "the_buffer_itself"])
def test_buffer_passed_as_argument_after_calls_without_aliasing(window):
    # Traced and cached with fresh arguments, then called with the buffer (or a view of it):
    # the cached executable (which updates the buffer) must not serve that call.
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", lucid.zeros(6))

        def forward(self, x):
            self.b[:3].add_(1)
            return x * 1 + self.b.sum()

    pick = {"inner_view": lambda b: b[1:4], "prefix_view": lambda b: b[0:3], "the_buffer_itself": lambda b: b}[window]
    with lucid.no_grad():
        m, me = M(), M()
        cm = lucid.compile(m)
        for k in range(6):
            aliased = k in (2, 3)
            x, xe = (pick(m.b), pick(me.b)) if aliased else (lucid.ones(pick(m.b).shape),) * 2
            assert cm(x).tolist() == me(xe).tolist(), f"call {k}"
            assert m.b.tolist() == me.b.tolist(), f"call {k}"
        info = cm.cache_info()
        assert info["entries"] == 2  # the aliased signature is keyed apart
        # a view is a second value for the same memory: eager, with the reason; the buffer itself
        # is one value (the argument), so that trace compiles
        assert len(info["eager_only"]) == (0 if window == "the_buffer_itself" else 1)
