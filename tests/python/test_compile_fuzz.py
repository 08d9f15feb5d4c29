"""Differential fuzz test of lucid.compile on model-like programs: hypothesis builds a random
nn.Module (a straight-line program over a list of values) out of the patterns the compile passes
rewrite and their near misses, and the compiled module (strict=True, so nothing falls back) must
give what the same module gives eagerly, call after call.

Why: the pass tests check each rewrite on hand-written IR, and test_compile_models.py checks a fixed
model set; a miscompile that needs an unusual combination (two convs meeting in one residual Add
was one) slips through both. Patterns generated here:
- Linear / Conv1d / Conv2d with or without bias, groups (depthwise included), stride, padding,
  dilation; followed by optional BatchNorm (eval: folded into the conv; train: batch statistics,
  running statistics updated in place) and activations (relu, gelu erf/tanh, relu6, leaky_relu,
  sigmoid, tanh, silu, eval dropout), as modules, functions, methods or in-place;
- residual blocks: two branches (conv/linear [+bn] [+act], identity or projection) meeting in one
  Add with an optional activation after it; residuals of any earlier value of the same shape (so a
  residual is often used twice); separate bias adds with broadcast shapes (parameter, buffer,
  plain tensor attribute or a strided slice of a parameter; [C], [1,C], [C,1,1], scalar...); a
  layer applied twice (shared weights; a train-mode BatchNorm updating twice);
- elementwise chains with broadcasting and Python scalars (including the x*1, x+0 identities),
  masks and where, a detour through the other float dtype, views (reshape, flatten, transpose,
  slicing, permute round trips), keepdim reductions, pooling, softmax / log_softmax, layer_norm,
  batched matmul;
- in-place ops on intermediates (through views too), on the arguments and on buffers (EMA-style
  updates, counters, slice writes, reads before and after a write); buffers returned as outputs;
- intermediate values returned as outputs, float32 and float64, batch sizes 0..4 (an empty batch
  in the first calls or only in the last), empty feature or sequence dims in the dense programs
  (the steps that have no value on an empty dim, such as BatchNorm over 0 channels or amax over 0
  elements, are not drawn there), non-contiguous inputs, no_grad or frozen parameters under grad
  mode;
- inputs with NaN, +-inf and -0.0 in some elements (one program in three): compiled must keep
  eager's NaN and infinities exactly where eager has them (a ReLU absorbed into a oneDNN post-op
  once turned NaN into 0).

Each example runs the same calls on two identical copies of the model, one eager (the reference)
and one compiled: three or four calls with fresh inputs (the first traces, the others run the
cached executable, the last possibly at another batch size), with module state changed between
calls on both copies (a parameter or buffer scaled in place, a parameter or buffer replaced, a
BatchNorm's training flag toggled), so state baked into the executable shows up. After every call
it compares outputs (values, dtypes, shapes), every parameter, buffer and plain tensor attribute,
and the arguments (in-place writes); outputs of earlier calls must not change (no aliasing of the
executable's buffers). The last call may alias its two arguments: one tensor for both, two
overlapping windows of one base tensor, or two disjoint windows of one (a new signature each;
where the program writes an argument that overlaps the other, or writes through a view of an
argument that is itself a window, that signature runs eagerly with that reason: the only
fallbacks the test accepts). Float32 programs are
also run in float64 as a reference (see Tolerance). Object identity of returned arguments and
parameters is checked in test_compile_fuzz_repros.py.

Tolerance: non-finite values must be eager's, at eager's positions; over the finite ones,
max |compiled - eager| / max |eager| per tensor (as in compile_models.max_rel_err; an
elementwise relative error is meaningless for values that cross zero) <= 1e-5 for float32, 1e-12 for
float64; a float32 output may exceed 1e-5 only where it is no less accurate than eager against the
float64 run (oneDNN's fused GELU is more accurate in the far negative tail than the eager formula). Compiled and eager round differently only where a pass reassociates (BatchNorm folding
scales the weights instead of the output, oneDNN post-ops), a few ulps per op.

LUCID_FUZZ_SCALE=<factor> multiplies the number of examples (default 1: 150 examples, about 10 s
on 2 cores); LUCID_FUZZ_SEED=<int> derandomises with that seed. Minimal reproducers of what it
found are in test_compile_fuzz_repros.py. The comparison helpers (scaled_err,
assert_close_to_eager) are harness.py's.
"""
import math
import os
from dataclasses import dataclass

import numpy as np
from hypothesis import event, HealthCheck, given, note, seed, settings, strategies as st

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from harness import assert_close_to_eager, with_specials

SCALE = float(os.environ.get("LUCID_FUZZ_SCALE", "1"))
MAX_EXAMPLES = max(1, int(150 * SCALE))
TOL = {"float32": 1e-5, "float64": 1e-12}

ACTS = ["relu", "gelu", "gelu_tanh", "relu6", "leaky_relu", "sigmoid", "tanh", "silu", "dropout_eval"]
INPLACE_ACTS = {"relu", "relu6", "leaky_relu", "sigmoid", "tanh", "silu"}
SCALARS = [0.0, 1.0, 1, -1.0, 0.5, 2.0, 3]


# ----------------------------------------------------------------------------------------------
# Program generation. A program is a list of steps; step k reads values by index and appends one
# value (index n_inputs + k). Shapes are tracked as `tails` (the shape without the batch dim,
# which every value keeps first), so every generated step is valid for any batch size.
# ----------------------------------------------------------------------------------------------

def _nonempty(tail):
    return 0 not in tail


def _broadcast(a, b):
    """The broadcast of two tails of one rank (each pair of dims equal or one of them 1)."""
    return tuple(y if x == 1 else x for x, y in zip(a, b))


@dataclass
class Program:
    dtype: str
    batch: int          # batch of the first calls
    last_batch: int     # batch of the last call (a second signature when it differs)
    in_tail: tuple
    n_inputs: int
    noncontig_input: bool
    steps: list
    outs: list
    out_buffers: list   # buffer names returned as themselves
    train: bool         # model.train(train) before per-module overrides
    frozen_grad_mode: bool  # params requires_grad=False and calls under grad mode (else no_grad)
    mutations: list     # per gap between calls: list of (kind, target index, factor)
    n_calls: int
    alias_last_call: str  # "", or how the last call aliases its two arguments: same, overlap, disjoint
    specials: bool      # inputs carry NaN, +-inf and -0.0 in some elements
    seed: int


class _Gen:
    def __init__(self, draw, min_batch, n_inputs, in_tail, noncontig_input):
        self.draw = draw
        self.min_batch = min_batch
        self.n_inputs = n_inputs
        self.noncontig_input = noncontig_input
        self.steps = []
        self.tails = [in_tail] * n_inputs
        self.base = list(range(n_inputs))  # values sharing a base may share memory
        self.n_buffers = 0

    def emit(self, step, tail, base=None):
        self.steps.append(step)
        self.tails.append(tuple(tail))
        self.base.append(len(self.base) if base is None else base)
        return len(self.tails) - 1

    def pick(self, pred=lambda t: True, prefer_recent=True, ok=lambda i: True):
        ids = [i for i, t in enumerate(self.tails) if pred(t) and ok(i)]
        if not ids:
            return None
        if prefer_recent and self.draw(st.booleans()):
            return ids[-1]
        return self.draw(st.sampled_from(ids))

    def writable(self, i):
        # An in-place write to a non-contiguous argument (a view of a base the caller did not pass)
        # is a documented fallback of the tracer, not a miscompile: not generated.
        return not (self.noncontig_input and self.base[i] < self.n_inputs)

    def can_train_bn(self, tail):
        return self.min_batch * math.prod(tail[1:]) > 1

    # ---- layers ------------------------------------------------------------------------------
    def act(self, i, name=None):
        d = self.draw
        name = name or d(st.sampled_from(ACTS))
        forms = ["F", "module"] + (["inplace"] if name in INPLACE_ACTS and self.writable(i) else [])
        form = d(st.sampled_from(forms))
        slope = d(st.sampled_from([0.01, 0.2])) if name == "leaky_relu" else None
        base = self.base[i] if form == "inplace" or name == "dropout_eval" else None  # eval dropout may return its input
        return self.emit(("act", i, name, form, slope), self.tails[i], base)

    def bn(self, i, train=None):
        d = self.draw
        tail = self.tails[i]
        if not _nonempty(tail):  # no BatchNorm over 0 channels or 0 elements per channel
            return i
        if train is None:
            train = d(st.booleans()) if self.can_train_bn(tail) else False
        if train and not self.can_train_bn(tail):
            train = False
        opts = dict(c=tail[0], train=train, can_train=self.can_train_bn(tail), affine=d(st.booleans()),
                    momentum=d(st.sampled_from([0.1, 0.5])),
                    track=d(st.sampled_from([True, True, True, False])) if self.can_train_bn(tail) else True,
                    kind=len(tail))
        return self.emit(("bn", i, opts), tail)

    def linear(self, i, out_f=None, bias=None):
        d = self.draw
        out_f = d(st.integers(1, 8)) if out_f is None else out_f  # a block may ask for 0 (an empty feature dim)
        bias = d(st.booleans()) if bias is None else bias
        return self.emit(("linear", i, self.tails[i][-1], out_f, bias), self.tails[i][:-1] + (out_f,))

    def conv(self, i, cout=None, stride=None, odd=False, bias=None):
        """Conv over value i (tail (C, *spatial)); `odd` keeps the output spatial size a function
        of the stride only (odd kernel, padding k//2), as two branches of one block need."""
        d = self.draw
        c, spatial = self.tails[i][0], self.tails[i][1:]
        divs = lambda n: [g for g in range(1, n + 1) if n % g == 0]
        if cout is None:
            groups = d(st.sampled_from(divs(c)))
            cout = groups * d(st.integers(1, 3))
        else:
            groups = d(st.sampled_from([g for g in divs(c) if cout % g == 0]))
        stride = stride or d(st.sampled_from([1, 1, 2]))
        k = d(st.sampled_from([1, 3] if odd else [1, 2, 3]))
        pad = k // 2 if odd else d(st.sampled_from([0, k // 2]))
        dil = 1 if odd or k == 1 else d(st.sampled_from([1, 1, 2]))
        out = [(n + 2 * pad - dil * (k - 1) - 1) // stride + 1 for n in spatial]
        if min(out) < 1:
            k, pad, dil = 1, 0, 1
            out = [(n - 1) // stride + 1 for n in spatial]
        bias = d(st.booleans()) if bias is None else bias
        opts = dict(cin=c, cout=cout, k=k, stride=stride, pad=pad, dil=dil, groups=groups, bias=bias, nd=len(spatial))
        return self.emit(("conv", i, opts), (cout, *out))

    def bias_add(self, i):
        d = self.draw
        tail = self.tails[i]
        shapes = [(tail[-1],), (1,) * (len(tail) - 1) + (tail[-1],), (), (1,)]
        if len(tail) >= 2:
            shapes += [(tail[0],) + (1,) * (len(tail) - 1)] * 2
        shape = d(st.sampled_from(shapes))
        storage = d(st.sampled_from(["param", "param", "buffer", "plain"] + (["strided"] if len(shape) == 1 else [])))
        op = d(st.sampled_from(["add", "add", "add", "mul", "sub"]))
        first = d(st.booleans())
        return self.emit(("bias", i, shape, storage, op, first), tail)

    def block(self, i):
        """Two branches meeting in one Add (+ optional activation): the residual patterns."""
        d = self.draw
        tail = self.tails[i]
        convs = len(tail) in (2, 3) and _nonempty(tail)
        if convs:
            cout = d(st.sampled_from([tail[0], tail[0], d(st.integers(1, 6))]))
            stride = d(st.sampled_from([1, 1, 2]))
        else:
            cout = d(st.sampled_from([tail[-1], d(st.integers(1, 8))]))
            stride = 1
        identity_ok = stride == 1 and cout == (tail[0] if convs else tail[-1])

        def branch(kind):
            if kind == "identity":
                return i
            if convs:
                v = self.conv(i, cout=cout, stride=stride, odd=True, bias=d(st.booleans()) if kind == "main" else False)
            else:
                v = self.linear(i, out_f=cout)
            if d(st.booleans()):
                v = self.bn(v)
            if kind == "main":
                if d(st.booleans()) and convs:
                    v = self.bias_add(v)
                if d(st.booleans()):
                    v = self.act(v, d(st.sampled_from(["relu", "relu", "gelu", "gelu_tanh", "silu"])))
            return v

        kinds = ["main", "proj"] + (["identity"] if identity_ok else [])
        a = branch("main")
        b = branch(d(st.sampled_from(kinds)))
        if d(st.booleans()):
            a, b = b, a
        out = self.emit(("add", a, b), self.tails[a])
        if d(st.booleans()):
            out = self.act(out, d(st.sampled_from(["relu", "relu", "gelu", "gelu_tanh", "relu6"])))
        return out

    # ---- one random step -----------------------------------------------------------------------
    def step(self):
        d = self.draw
        # Weighted towards the patterns the passes rewrite (conv/linear chains and residual blocks).
        kind = d(st.sampled_from(["linear", "linear", "conv", "conv", "conv", "bn", "act", "act", "block", "block",
                                  "block", "block", "add", "bias", "scalar", "binop", "view", "inplace", "inplace",
                                  "buffer", "pool", "norm", "reduce", "matmul", "mixed", "mask", "reuse"]))
        if kind == "conv":
            i = self.pick(lambda t: len(t) in (2, 3) and _nonempty(t))
            if i is None:
                kind = "linear"
            else:
                v = self.conv(i)
                if d(st.booleans()):
                    v = self.bn(v)
                if d(st.booleans()):
                    self.act(v, d(st.sampled_from(ACTS + ["relu", "gelu", "gelu_tanh"])))
                return
        if kind == "linear":
            v = self.linear(self.pick())
            if d(st.booleans()) and len(self.tails[v]) == 1:
                v = self.bn(v)
            if d(st.booleans()):
                self.act(v, d(st.sampled_from(ACTS + ["relu", "gelu", "gelu_tanh"])))
            return
        if kind == "bn":
            i = self.pick(lambda t: len(t) <= 3 and _nonempty(t))
            return self.bn(i) if i is not None else None
        if kind == "act":
            return self.act(self.pick())
        if kind == "block":
            return self.block(self.pick())
        if kind == "bias":
            return self.bias_add(self.pick())
        if kind in ("add", "binop"):
            i = self.pick()
            ti = self.tails[i]
            j = self.pick(lambda t: len(t) == len(ti) and all(a == b or a == 1 or b == 1 for a, b in zip(t, ti)),
                          prefer_recent=False)
            tail = _broadcast(ti, self.tails[j])
            if kind == "add":
                return self.emit(("add", i, j), tail)
            return self.emit(("binop", i, j, d(st.sampled_from(["mul", "sub", "maximum", "where", "div"]))), tail)
        if kind == "scalar":
            i = self.pick()
            op = d(st.sampled_from(["mul", "rmul", "add", "radd", "sub", "rsub", "div"]))
            a = d(st.sampled_from([s for s in SCALARS if not (op == "div" and s == 0)]))
            return self.emit(("scalar", i, op, a), self.tails[i])
        if kind == "view":
            return self.view(self.pick())
        if kind == "inplace":
            i = self.pick(ok=self.writable)
            return self.inplace(i) if i is not None else None
        if kind == "buffer":
            return self.buffer(self.pick())
        if kind == "pool":
            i = self.pick(lambda t: len(t) in (2, 3) and _nonempty(t))
            if i is None:
                return None
            spatial = self.tails[i][1:]
            ops = ["adaptive_avg", "adaptive_max", "max3s1", "avg3s1"] + (["max2", "avg2"] if min(spatial) >= 2 else [])
            op = d(st.sampled_from(ops))
            if op.startswith("adaptive"):
                out = (1,) * len(spatial)
            elif op.endswith("2"):
                out = tuple(n // 2 for n in spatial)
            else:
                out = spatial
            return self.emit(("pool", i, op, len(spatial)), (self.tails[i][0],) + out)
        if kind == "norm":
            i = self.pick(lambda t: t[-1] > 0)
            if i is None:
                return None
            op = d(st.sampled_from(["softmax", "log_softmax", "layer_norm_mod", "layer_norm_f"]))
            dim = d(st.sampled_from([-1, 1])) if "softmax" in op else -1
            return self.emit(("norm", i, op, dim, self.tails[i][-1]), self.tails[i])
        if kind == "reduce":
            i = self.pick()
            tail = self.tails[i]
            dim = d(st.sampled_from([-1, 1]))
            op = d(st.sampled_from(["mean", "sum"] + (["amax"] if tail[dim if dim < 0 else 0] else [])))
            new = list(tail)
            new[dim if dim < 0 else 0] = 1
            return self.emit(("reduce", i, op, dim), new)
        if kind in ("mixed", "mask"):
            i = self.pick()
            ti = self.tails[i]
            j = self.pick(lambda t: len(t) == len(ti) and all(a == b or a == 1 or b == 1 for a, b in zip(t, ti)),
                          prefer_recent=False)
            tail = _broadcast(ti, self.tails[j])
            if kind == "mixed":
                return self.emit(("mixed", i, j, d(st.sampled_from([0.5, 1.0, 3.0]))), tail)
            form = d(st.sampled_from(["mul_mask", "where_scalar", "float_mask"]))
            return self.emit(("mask", i, j, form, d(st.sampled_from([0.0, -1.0, 2.0]))),
                             self.tails[i] if form == "where_scalar" else tail)
        if kind == "reuse":
            # A layer applied a second time (weight sharing; a train-mode BatchNorm updates twice).
            layers = [k for k, s in enumerate(self.steps) if s[0] in ("linear", "conv", "bn")]
            if not layers:
                return None
            k = d(st.sampled_from(layers))
            i = self.pick(lambda t: t == self.tails[self.steps[k][1]], prefer_recent=False)
            return self.emit(("reuse", i, k), self.tails[self.n_inputs + k])
        if kind == "matmul":
            i = self.pick(lambda t: len(t) >= 2)
            if i is None:
                return None
            tail = self.tails[i]
            return self.emit(("matmul", i), tail[:-1] + (tail[-2],))

    def view(self, i):
        d = self.draw
        tail = self.tails[i]
        ops = ["reshape_same", "view_same", "unsqueeze", "flatten_round"]
        if len(tail) >= 2:
            ops += ["flatten", "transpose", "t_contig_t"] + (["slice_ch"] if tail[0] else [])
        if tail[-1] >= 2:
            ops += ["slice_last", "slice_last"]
        if len(tail) == 3:
            ops += ["permute_round"]
        op = d(st.sampled_from(ops))
        arg = None
        new = tail
        if op == "flatten":
            new = (math.prod(tail),)
        elif op == "transpose":
            new = tail[:-2] + (tail[-1], tail[-2])
        elif op == "slice_last":
            a = d(st.integers(0, tail[-1] - 1))
            b = d(st.integers(a + 1, tail[-1]))
            step = d(st.sampled_from([1, 2]))
            arg = (a, b, step)
            new = tail[:-1] + (len(range(a, b, step)),)
        elif op == "slice_ch":
            a = d(st.integers(0, tail[0] - 1))
            arg = (a, tail[0])
            new = (tail[0] - a,) + tail[1:]
        return self.emit(("view", i, op, arg), new, base=self.base[i])

    def inplace(self, i):
        d = self.draw
        tail = self.tails[i]
        ops = ["mul_", "add_scalar_", "clamp_", "relu_"] + (["setitem"] if tail[0] else [])
        ok = lambda t: len(t) == len(tail) and all(a == b or a == 1 for a, b in zip(t, tail))
        # Another value to combine in place: it must broadcast to i and not share memory with it
        # (an overlapping in-place read/write has no defined eager result either).
        others = [j for j, t in enumerate(self.tails) if ok(t) and (j == i or self.base[j] != self.base[i])]
        if others:
            ops += ["add_", "add_", "copy_", "mul_t_"]
        if tail[0] >= 2:
            ops += ["slice_mul_"]
        op = d(st.sampled_from(ops))
        j = d(st.sampled_from(others)) if op in ("add_", "copy_", "mul_t_") else None
        a = d(st.sampled_from([0.5, 2.0, -1.0, 1.0]))
        return self.emit(("inplace", i, op, j, a), tail, base=self.base[i])

    def buffer(self, i):
        d = self.draw
        tail = self.tails[i]
        # read_then_write reduces over the batch with amax, which has no value for an empty batch.
        op = d(st.sampled_from(["ema", "counter"] + (["slice_write"] if tail[0] else []) +
                               (["read_then_write"] if self.min_batch else [])))
        name = f"buf{self.n_buffers}"
        self.n_buffers += 1
        return self.emit(("buffer", i, op, name, tail), tail), name


@st.composite
def programs(draw):
    dtype = draw(st.sampled_from(["float32", "float32", "float32", "float64"]))
    batch = draw(st.integers(0, 4))
    last_batch = draw(st.sampled_from([batch, batch, draw(st.integers(0, 4))]))
    domain = draw(st.sampled_from(["dense", "dense3", "conv1d", "conv2d", "conv2d"]))
    if domain == "dense":
        in_tail = (draw(st.integers(0, 8)),)
    elif domain == "dense3":
        in_tail = (draw(st.integers(0, 4)), draw(st.integers(1, 8)))
    elif domain == "conv1d":
        in_tail = (draw(st.integers(1, 6)), draw(st.integers(1, 9)))
    else:
        in_tail = (draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(st.integers(1, 6)))
    n_inputs = draw(st.integers(1, 2))
    noncontig_input = len(in_tail) >= 2 and draw(st.booleans())
    gen = _Gen(draw, min(batch, last_batch), n_inputs, in_tail, noncontig_input)
    out_buffers = []
    for _ in range(draw(st.integers(1, 7))):
        r = gen.step()
        if isinstance(r, tuple) and draw(st.integers(0, 3)) == 0:
            out_buffers.append(r[1])
    n_vals = len(gen.tails)
    if n_vals == n_inputs:  # every drawn step was inapplicable
        gen.act(0)
        n_vals += 1
    outs = [n_vals - 1] + draw(st.lists(st.integers(0, n_vals - 1), max_size=2))
    n_calls = draw(st.integers(3, 4))
    mut = st.lists(st.tuples(st.sampled_from(["scale", "scale", "scale_running_var", "rebind", "toggle_bn"]),
                             st.integers(0, 10**6), st.sampled_from([0.5, 1.25, 2.0])), max_size=2)
    mutations = [[]] + [draw(mut) for _ in range(n_calls - 2)]  # none between the first two calls
    return Program(dtype=dtype, batch=batch, last_batch=last_batch, in_tail=in_tail, n_inputs=n_inputs,
                   noncontig_input=noncontig_input, steps=gen.steps, outs=outs,
                   out_buffers=out_buffers, train=draw(st.booleans()), frozen_grad_mode=draw(st.integers(0, 3)) == 0,
                   mutations=mutations, n_calls=n_calls,
                   alias_last_call=draw(st.sampled_from(["same"] if noncontig_input else ["same", "overlap", "disjoint"]))
                   if n_inputs == 2 and draw(st.booleans()) and
                   # an in-place op reading another value that may then overlap it has no defined result
                   not any(s[0] == "inplace" and s[3] is not None for s in gen.steps) else "",
                   specials=draw(st.integers(0, 2)) == 0, seed=draw(st.integers(0, 2**31 - 1)))


# ----------------------------------------------------------------------------------------------
# The model: builds one submodule / tensor per step and runs the program in forward.
# ----------------------------------------------------------------------------------------------

def _act_module(name, slope):
    return {"relu": lambda: nn.ReLU(), "gelu": lambda: nn.GELU(), "gelu_tanh": lambda: nn.GELU("tanh"),
            "relu6": lambda: nn.ReLU6(), "leaky_relu": lambda: nn.LeakyReLU(slope),
            "sigmoid": lambda: nn.Sigmoid(), "tanh": lambda: nn.Tanh(), "silu": lambda: nn.SiLU(),
            "dropout_eval": lambda: nn.Dropout(0.5)}[name]()


def _act_fn(v, name, slope, inplace):
    if name == "relu":
        return v.relu_() if inplace else F.relu(v)
    if name == "gelu":
        return F.gelu(v)
    if name == "gelu_tanh":
        return F.gelu(v, approximate="tanh")
    if name == "relu6":
        return F.relu6(v, inplace=inplace)
    if name == "leaky_relu":
        return F.leaky_relu(v, slope, inplace=inplace)
    if name == "sigmoid":
        return v.sigmoid_() if inplace else lucid.sigmoid(v)
    if name == "tanh":
        return v.tanh_() if inplace else v.tanh()
    if name == "silu":
        return F.silu(v, inplace=inplace)
    if name == "dropout_eval":
        return F.dropout(v, 0.5, training=False)
    raise AssertionError(name)


class ProgramModel(nn.Module):
    def __init__(self, prog, dt, mixed_via=None):
        super().__init__()
        self.mixed_via = mixed_via  # the float64 reference keeps its detours exact
        self.steps = prog.steps
        self.outs = prog.outs
        self.out_buffers = prog.out_buffers
        self.plain_names = []
        self.layers = nn.ModuleDict()
        for k, s in enumerate(prog.steps):
            key = f"s{k}"
            if s[0] == "act" and s[3] == "module":
                self.layers[key] = _act_module(s[2], s[4])
            elif s[0] == "bn":
                o = s[2]
                cls = nn.BatchNorm1d if o["kind"] <= 2 else nn.BatchNorm2d
                self.layers[key] = cls(o["c"], momentum=o["momentum"], affine=o["affine"],
                                       track_running_stats=o["track"], dtype=dt)
            elif s[0] == "linear":
                self.layers[key] = nn.Linear(s[2], s[3], bias=s[4], dtype=dt)
            elif s[0] == "conv":
                o = s[2]
                cls = nn.Conv1d if o["nd"] == 1 else nn.Conv2d
                self.layers[key] = cls(o["cin"], o["cout"], o["k"], stride=o["stride"], padding=o["pad"],
                                       dilation=o["dil"], groups=o["groups"], bias=o["bias"], dtype=dt)
            elif s[0] == "norm" and s[2] == "layer_norm_mod":
                self.layers[key] = nn.LayerNorm(s[4], dtype=dt)
            elif s[0] == "bias":
                t = lucid.zeros(s[2], dtype=dt)
                if s[3] == "param":
                    self.register_parameter(f"p{k}", nn.Parameter(t))
                elif s[3] == "strided":  # read as p[::2]: a non-contiguous bias
                    self.register_parameter(f"p{k}", nn.Parameter(lucid.zeros((2 * s[2][0],), dtype=dt)))
                elif s[3] == "buffer":
                    self.register_buffer(f"p{k}", t)
                else:
                    setattr(self, f"p{k}", t)
                    self.plain_names.append(f"p{k}")
            elif s[0] == "buffer":
                op, name, tail = s[2], s[3], s[4]
                self.register_buffer(name, lucid.zeros((), dtype=lucid.int64) if op == "counter"
                                     else lucid.zeros(tail, dtype=dt))

    def forward(self, *xs):
        vals = list(xs)
        for k, s in enumerate(self.steps):
            vals.append(self.run_step(k, s, vals))
        return tuple(vals[i] for i in self.outs) + tuple(getattr(self, n) for n in self.out_buffers)

    def run_step(self, k, s, vals):
        kind, v = s[0], vals[s[1]]
        layer = self.layers[f"s{k}"] if f"s{k}" in self.layers else None
        if kind == "act":
            return layer(v) if layer is not None else _act_fn(v, s[2], s[4], s[3] == "inplace")
        if kind in ("bn", "linear", "conv"):
            return layer(v)
        if kind == "add":
            return v + vals[s[2]]
        if kind == "binop":
            w, op = vals[s[2]], s[3]
            if op == "mul":
                return v * w
            if op == "sub":
                return w - v
            if op == "maximum":
                return lucid.maximum(v, w)
            if op == "where":
                return lucid.where(v > w, v, w * 0.5)
            return v / (w.abs() + 1.0)
        if kind == "bias":
            p = getattr(self, f"p{k}")
            p = p[::2] if s[3] == "strided" else p
            a, b = (p, v) if s[5] else (v, p)
            return a + b if s[4] == "add" else a * b if s[4] == "mul" else a - b
        if kind == "scalar":
            op, a = s[2], s[3]
            return {"mul": lambda: v * a, "rmul": lambda: a * v, "add": lambda: v + a, "radd": lambda: a + v,
                    "sub": lambda: v - a, "rsub": lambda: a - v, "div": lambda: v / a}[op]()
        if kind == "view":
            op, arg = s[2], s[3]
            if op == "reshape_same":
                return v.reshape(v.shape[0], math.prod(v.shape[1:])).reshape(v.shape)  # no -1: the batch may be 0
            if op == "view_same":
                return v.view(v.shape)
            if op == "unsqueeze":
                return v.unsqueeze(-1).squeeze(-1)
            if op == "flatten_round":
                return v.flatten(1).reshape(v.shape)
            if op == "flatten":
                return v.flatten(1)
            if op == "transpose":
                return v.transpose(-1, -2)
            if op == "t_contig_t":
                return v.transpose(-1, -2).contiguous().transpose(-1, -2)
            if op == "slice_ch":
                return v[:, arg[0]:arg[1]]
            if op == "slice_last":
                return v[..., arg[0]:arg[1]:arg[2]]
            if op == "permute_round":
                return v.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)
        if kind == "inplace":
            op, j, a = s[2], s[3], s[4]
            if op == "mul_":
                return v.mul_(a)
            if op == "add_scalar_":
                return v.add_(a)
            if op == "clamp_":
                return v.clamp_(-1.0, 1.0)
            if op == "relu_":
                return v.relu_()
            if op == "setitem":
                v[:, 0] = a
                return v
            if op == "add_":
                return v.add_(vals[j])
            if op == "copy_":
                return v.copy_(vals[j])
            if op == "mul_t_":
                return v.mul_(vals[j])
            if op == "slice_mul_":
                v[: v.shape[0] // 2].mul_(a)
                return v
        if kind == "buffer":
            op, name = s[2], s[3]
            buf = getattr(self, name)
            if op == "ema":
                buf.mul_(0.75).add_(v.mean(0) * 0.25)
                return v - buf
            if op == "counter":
                buf.add_(1)
                return v * buf
            if op == "read_then_write":
                y = v * buf + 1.0
                buf.add_(v.amax(0))
                return y
            if op == "slice_write":
                buf[0] = v.mean()
                return v + buf
        if kind == "pool":
            op, nd = s[2], s[3]
            p = {1: (F.max_pool1d, F.avg_pool1d, F.adaptive_avg_pool1d, F.adaptive_max_pool1d),
                 2: (F.max_pool2d, F.avg_pool2d, F.adaptive_avg_pool2d, F.adaptive_max_pool2d)}[nd]
            return {"max2": lambda: p[0](v, 2), "avg2": lambda: p[1](v, 2),
                    "max3s1": lambda: p[0](v, 3, stride=1, padding=1), "avg3s1": lambda: p[1](v, 3, stride=1, padding=1),
                    "adaptive_avg": lambda: p[2](v, 1), "adaptive_max": lambda: p[3](v, 1)}[op]()
        if kind == "norm":
            op, dim = s[2], s[3]
            if op == "softmax":
                return v.softmax(dim=dim)
            if op == "log_softmax":
                return F.log_softmax(v, dim=dim)
            if op == "layer_norm_mod":
                return layer(v)
            return F.layer_norm(v, (v.shape[-1],))
        if kind == "reduce":
            op, dim = s[2], s[3]
            return getattr(v, op)(dim=dim, keepdim=True)
        if kind == "matmul":
            return v @ v.transpose(-1, -2)
        if kind == "mixed":  # through the other float dtype and back: promotion inside a fused chain
            other = self.mixed_via or (lucid.float64 if v.dtype == lucid.float32 else lucid.float32)
            return (v.to(other) * s[3] + vals[s[2]]).to(v.dtype)
        if kind == "mask":
            w, form, a = vals[s[2]], s[3], s[4]
            if form == "mul_mask":
                return v * (w > 0)
            if form == "where_scalar":
                return lucid.where(v > 0, v, a)
            return (v > w).to(v.dtype) * v
        if kind == "reuse":
            return self.layers[f"s{s[2]}"](v)
        raise AssertionError(s)


# ----------------------------------------------------------------------------------------------
# Running and comparing
# ----------------------------------------------------------------------------------------------

def _tensor_names(model):
    """Every state tensor the program reads: parameters, buffers, plain tensor attributes."""
    names = [n for n, t in model.state_dict().items() if t is not None]
    return names + list(model.plain_names)


def _get(model, name):
    obj = model
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _owner(model, name):
    *path, attr = name.split(".")
    obj = model
    for part in path:
        obj = getattr(obj, part)
    return obj, attr


def _randomise(model, rng):
    """Random values for every state tensor (BatchNorm-like statistics kept positive), so that no
    parameter is an identity and BatchNorm folding is really exercised."""
    with lucid.no_grad():
        for name in _tensor_names(model):
            t = _get(model, name)
            if not t.dtype.is_floating_point:
                continue
            if name.endswith("running_var"):
                a = 0.5 + rng.random(t.shape)
            elif name.endswith("running_mean") or name.rsplit(".", 1)[-1].startswith(("p", "buf")):
                a = 0.3 * rng.standard_normal(t.shape)
            elif name.endswith("weight") and t.ndim == 1:  # norm affine
                a = 1.0 + 0.2 * rng.standard_normal(t.shape)
            else:
                fan_in = max(1, math.prod(t.shape[1:]))
                a = rng.standard_normal(t.shape) / math.sqrt(fan_in)
            t.copy_(lucid.tensor(np.asarray(a), dtype=t.dtype))


def _copy_state(src, dst):
    with lucid.no_grad():
        for name in _tensor_names(src):
            _get(dst, name).copy_(_get(src, name))


def _configure(model, prog):
    model.train(prog.train)
    for k, s in enumerate(prog.steps):
        if s[0] == "bn":
            model.layers[f"s{k}"].train(s[2]["train"])
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.eval()


def _inputs(prog, batch, rng, dt, alias):
    """The call's arguments three times: for the eager model, the compiled one (both in dt) and
    the float64 reference (the same values). alias: see Program.alias_last_call."""
    npdt = np.float32 if dt == lucid.float32 else np.float64
    rows = {"overlap": batch + 1, "disjoint": 2 * batch}.get(alias, batch)
    xs = [rng.standard_normal((rows, *prog.in_tail)).astype(npdt) for _ in range(prog.n_inputs)]
    if prog.specials:
        xs = [with_specials(a, rng, 0.05) for a in xs]

    def make(t):
        ts = []
        for a in xs:
            if prog.noncontig_input:  # same values, laid out with the last two dims swapped
                ts.append(lucid.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=t).transpose(-1, -2))
            else:
                ts.append(lucid.tensor(a, dtype=t))
        if alias == "overlap":  # rows 0..batch-1 and 1..batch of one base
            return [ts[0][:batch], ts[0][1:batch + 1]]
        if alias == "disjoint":
            return [ts[0][:batch], ts[0][batch:]]
        return [ts[0]] * len(ts) if alias else ts
    return make(dt), make(dt), make(lucid.float64)


def _role(t, inputs, model):
    """What an output tensor is, when it is a tensor the caller owns: ('input', k) or ('state', name)."""
    for k, x in enumerate(inputs):
        if t is x:
            return ("input", k)
    for name in _tensor_names(model):
        if t is _get(model, name):
            return ("state", name)
    return None


def _mutate(models, kind, target, factor, prog):
    """Applies one state change to both models in the same way."""
    names = [n for n in _tensor_names(models[0]) if _get(models[0], n).dtype.is_floating_point]
    if kind == "toggle_bn":
        bns = [k for k, s in enumerate(prog.steps) if s[0] == "bn" and s[2]["can_train"]]
        if not bns:
            return None
        key = f"s{bns[target % len(bns)]}"
        for m in models:
            m.layers[key].train(not m.layers[key].training)
        return f"toggle {key}"
    if kind == "scale_running_var":
        rv = [n for n in names if n.endswith("running_var")]
        names = rv or names
    if not names:
        return None
    name = names[target % len(names)]
    with lucid.no_grad():
        if kind == "rebind":
            for m in models:
                owner, attr = _owner(m, name)
                old = getattr(owner, attr)
                new = (old * factor).detach()
                setattr(owner, attr, nn.Parameter(new, requires_grad=old.requires_grad)
                        if isinstance(old, nn.Parameter) else new)
            return f"rebind {name} (scaled by {factor})"
        for m in models:
            _get(m, name).mul_(factor)
    return f"scale {name} by {factor}"


def run_program(prog):
    dt = getattr(lucid, prog.dtype)
    tol = TOL[prog.dtype]
    eager = ProgramModel(prog, dt)
    model = ProgramModel(prog, dt)
    ref = ProgramModel(prog, lucid.float64, mixed_via=lucid.float64)  # float32 programs only
    rng = np.random.default_rng(prog.seed)
    _randomise(eager, rng)
    _copy_state(eager, model)
    _copy_state(eager, ref)
    use_ref = dt == lucid.float32
    models = (eager, model, ref) if use_ref else (eager, model)
    for m in models:
        _configure(m, prog)
        if prog.frozen_grad_mode:
            for p in m.parameters():
                p.requires_grad_(False)
    # Windows of one base as arguments may run eagerly, with one of two reasons (an overlapping
    # argument written; a write through a view of an argument that is itself a view); else strict.
    windows = prog.alias_last_call in ("overlap", "disjoint")
    compiled = lucid.compile(model, strict=not windows)

    prev = []  # (tensor, snapshot) of earlier compiled outputs that the caller owns outright
    for call in range(prog.n_calls):
        last = call == prog.n_calls - 1
        batch = prog.last_batch if last else prog.batch
        ex, cx, rx = _inputs(prog, batch, rng, dt, alias=prog.alias_last_call if last else "")
        with lucid.no_grad() if not prog.frozen_grad_mode else lucid.enable_grad():
            want = eager(*ex)
            got = compiled(*cx)
            refs = ref(*rx) if use_ref else [None] * len(want)
        where = f"call {call}"
        assert isinstance(got, tuple) and len(got) == len(want), where
        for k, (g, w, r) in enumerate(zip(got, want, refs)):
            assert_close_to_eager(g, w, f"{where} output {k}", tol, r)
        for k, (a, b, r) in enumerate(zip(cx, ex, rx)):
            assert_close_to_eager(a, b, f"{where} argument {k} after the call", tol, r if use_ref else None)
        for name in _tensor_names(eager):
            assert_close_to_eager(_get(model, name), _get(eager, name), f"{where} state {name}", tol,
                          _get(ref, name) if use_ref else None)
        for t, snap in prev:
            np.testing.assert_array_equal(t.numpy(), snap, err_msg=f"{where}: an earlier call's output changed")
        prev += [(g, g.numpy().copy()) for g, w in zip(got, want) if _role(w, ex, eager) is None]
        info = compiled.cache_info()
        assert all(windows and ("whose memory overlaps" in r or "a view whose base the trace has not seen" in r)
                   for r in info["eager_only"].values()), info["eager_only"]
        if last and prog.alias_last_call:  # --hypothesis-show-statistics counts these
            event(f"last call aliased ({prog.alias_last_call}){', ran eagerly' if info['eager_only'] else ''}")
        if call == 1:  # same signature as the first call: the cached executable ran
            assert (info["misses"], info["hits"]) == (1, 1), info
        if call < prog.n_calls - 1:
            for kind, target, factor in prog.mutations[call]:
                note(f"after call {call}: {_mutate(models, kind, target, factor, prog)}")


@seed(int(os.environ["LUCID_FUZZ_SEED"])) if "LUCID_FUZZ_SEED" in os.environ else (lambda f: f)
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_compiled_model_programs_equal_eager(prog):
    run_program(prog)
