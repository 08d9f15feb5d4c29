"""lucid.autograd.Function against torch.autograd.Function, eager and compiled.

Each test defines the same Function once per library (the class body is written against `lib`)
and compares gradients, the arguments backward receives, and the errors. The compiled tests
check that a Function's forward is traced as ordinary ops and its backward is recorded like any
VJP: lucid.compile forward + backward, make_step and fused_step on a domain-adversarial net
(gradient reversal) and a straight-through clamp give eager's and torch's numbers, from a
compiled entry (not a fallback). A backward the trace can't record (a host read) falls back
with its reason.
"""
import warnings

import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F
from lucid.compile import CompileError
from harness import TORCH_IS_REFERENCE

LIBS = (lucid, torch)


def functions(lib):
    class GradReverse(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return -ctx.alpha * g, None

    class ClampSTE(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, lo, hi):
            return x.clamp(lo, hi)

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    class Cube(lib.autograd.Function):  # backward written with ops: differentiable again
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    class ExpSaved(lib.autograd.Function):  # saves its output
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    return GradReverse, ClampSTE, Cube, ExpSaved


def pair(a, requires_grad=True):
    a = np.asarray(a, dtype=np.float64)
    return lucid.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def close(a, b, tol=1e-10):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


X = [[0.5, -1.5, 2.0], [1.25, -0.25, 3.0]]


@pytest.mark.parametrize("which", ["GradReverse", "ClampSTE", "Cube", "ExpSaved"])
def test_gradients_match_torch(which):
    lx, tx = pair(X)
    grads = []
    for lib, x in ((lucid, lx), (torch, tx)):
        fn = dict(zip(["GradReverse", "ClampSTE", "Cube", "ExpSaved"], functions(lib)))[which]
        args = {"GradReverse": (x, 0.7), "ClampSTE": (x, -1.0, 1.0)}.get(which, (x,))
        y = fn.apply(*args)
        (y * y + y).sum().backward()
        grads.append((y, x.grad))
    close(grads[0][0], grads[1][0])
    close(grads[0][1], grads[1][1])
    assert grads[0][0].grad_fn is not None and repr(grads[0][0].grad_fn) == f"<{which}Backward>"


def test_double_backward_through_function_backward_written_with_ops():
    lx, tx = pair(X)
    res = []
    for lib, x in ((lucid, lx), (torch, tx)):
        Cube = functions(lib)[2]
        (g,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        (g2,) = lib.autograd.grad((g * g).sum(), x)
        res.append((g, g2))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


def test_inplace_write_to_saved_tensor_raises_like_torch():
    for lib in LIBS:
        ExpSaved = functions(lib)[3]
        x = lib.tensor(X, requires_grad=True)
        y = ExpSaved.apply(x)
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an in.?place operation"):
            y.sum().backward()
        Cube = functions(lib)[2]
        h = x * 1
        z = Cube.apply(h)
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an in.?place operation"):
            z.sum().backward()


def test_backward_twice_raises_and_retain_graph_allows_it():
    for lib in LIBS:
        Cube = functions(lib)[2]
        x = lib.tensor(X, requires_grad=True)
        y = Cube.apply(x).sum()
        y.backward(retain_graph=True)
        y.backward()
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()


def make_multi(lib, record):
    class Multi(lib.autograd.Function):
        """Multiple outputs, a non-tensor output, an int output marked non-differentiable,
        non-tensor inputs; records needs_input_grad and what backward receives."""

        @staticmethod
        def forward(ctx, a, scale, b, shift):
            idx = a.argmax(1)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(a, b)
            ctx.scale = scale
            record["needs"] = tuple(ctx.needs_input_grad)
            return a * scale + shift, a * b, idx, "tag"

        @staticmethod
        def backward(ctx, g1, g2, gidx, gtag):
            a, b = ctx.saved_tensors
            record["got"] = [None if g is None else g.detach().numpy().copy() for g in (g1, g2, gidx, gtag)]
            return g1 * ctx.scale + g2 * b, None, g2 * a, None

    return Multi


@pytest.mark.parametrize("use_second", [True, False])
def test_multiple_outputs_non_tensor_args_and_outputs(use_second):
    la, ta = pair(X)
    lb, tb = pair(np.array(X) * 0.5 + 1)
    out = []
    for lib, a, b in ((lucid, la, lb), (torch, ta, tb)):
        rec = {}
        y1, y2, idx, tag = make_multi(lib, rec).apply(a, 2.0, b, 1.0)
        assert tag == "tag" and not idx.requires_grad and idx.dtype == lib.int64
        loss = (y1 * y1).sum() + ((y2 * 3).sum() if use_second else 0)
        loss.backward()
        out.append((rec, a.grad, b.grad, y1))
    (lr, lag, lbg, ly), (tr, tag_, tbg, ty) = out
    assert lr["needs"] == tr["needs"] == (True, False, True, False)
    close(ly, ty)
    close(lag, tag_)
    close(lbg, tbg)
    for g, h in zip(lr["got"], tr["got"]):  # materialized zeros for unused outputs, None for non-tensors
        assert (g is None) == (h is None)
        if g is not None and h.dtype.kind == "f":
            close(g, h)


def test_set_materialize_grads_false_passes_none():
    seen = {}
    for lib in LIBS:
        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen[lib.__name__] = (g1 is None, g2 is None)
                return g1 * 2 if g2 is None else g1 * 2 + g2 * 3

        x = lib.tensor(X, requires_grad=True)
        a, _ = Two.apply(x)
        a.sum().backward()
        seen[lib.__name__ + "_grad"] = x.grad.numpy().copy()
    assert seen["lucid"] == seen["torch"] == (False, True)
    close(seen["lucid_grad"], seen["torch_grad"])


def test_returning_wrong_number_or_shape_of_gradients_raises():
    for lib in LIBS:
        class TooMany(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g, g

        class BadShape(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g.sum(0)[:2]

        x = lib.tensor(X, requires_grad=True)
        with pytest.raises(RuntimeError, match="incorrect number of gradients"):
            TooMany.apply(x).sum().backward()
        with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
            BadShape.apply(x).sum().backward()


def test_broadcastable_gradient_is_summed_to_the_input_shape():
    grads = []
    for lib in LIBS:
        class Bcast(lib.autograd.Function):
            @staticmethod
            def forward(ctx, b):
                return b.expand(2, 3).clone()

            @staticmethod
            def backward(ctx, g):
                return g * 2  # shape (2, 3) for an input of shape (3,)

        b = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (Bcast.apply(b) * lib.tensor(X)).sum().backward()
        grads.append(b.grad)
    close(*grads)


def test_once_differentiable():
    for lib in LIBS:
        from_mod = lucid.autograd.function if lib is lucid else torch.autograd.function

        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @from_mod.once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                assert not lib.is_grad_enabled()
                return 2 * x * g

        x = lib.tensor(X, requires_grad=True)
        (g,) = lib.autograd.grad(Sq.apply(x).sum(), x)
        close(g, 2 * np.array(X))
        v = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)  # a grad output that requires grad
        (g,) = lib.autograd.grad(Sq.apply(x), x, grad_outputs=v, create_graph=True)
        assert g.requires_grad
        with pytest.raises(RuntimeError, match="once_differentiable"):
            g.sum().backward()


def test_mark_dirty_inplace_forward():
    res = []
    for lib in LIBS:
        class MulInplace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(3)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3

        x = lib.tensor(X, requires_grad=True)
        h = x * 2
        y = MulInplace.apply(h)
        assert y is h
        (y * y).sum().backward()
        res.append(x.grad)
        with pytest.raises(RuntimeError):
            MulInplace.apply(lib.tensor(X, requires_grad=True))  # a leaf requiring grad
    close(*res)


def test_setup_context_style():
    res = []
    for lib in LIBS:
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, k=2.0):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.k = inputs[1]
                ctx.save_for_backward(inputs[0])

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * ctx.k + x * 0, None

        x = lib.tensor(X, requires_grad=True)
        # apply(x, k=...) is torch 2.13's; the GPU machine's torch 2.11 takes the argument by position
        with_k = Scale.apply(x, k=5.0) if lib is lucid or TORCH_IS_REFERENCE else Scale.apply(x, 5.0)
        (Scale.apply(x) + with_k).sum().backward()
        res.append(x.grad)
    close(*res)


def test_no_input_requires_grad_gives_plain_outputs():
    for lib in LIBS:
        GradReverse = functions(lib)[0]
        y = GradReverse.apply(lib.tensor(X), 1.0)
        assert not y.requires_grad and y.grad_fn is None
        x = lib.tensor(X, requires_grad=True)
        with lib.no_grad():
            assert GradReverse.apply(x, 1.0).grad_fn is None


def test_function_is_not_instantiated_and_saved_tensors_only_in_backward():
    GradReverse = functions(lucid)[0]
    with pytest.raises(RuntimeError, match="apply"):
        GradReverse()
    with pytest.raises(TypeError, match="save_for_backward"):
        lucid.autograd.FunctionCtx().save_for_backward(3)


# ---------------------------------------------------------------------------- compiled


def dann(lib, seed=0):
    """A domain-adversarial net: features -> (label head, gradient reversal -> domain head),
    with a straight-through clamp on the features."""
    GradReverse, ClampSTE, _, _ = functions(lib)

    class DANN(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.feat = lib.nn.Linear(6, 8)
            self.label = lib.nn.Linear(8, 3)
            self.domain = lib.nn.Linear(8, 2)

        def forward(self, x):
            h = ClampSTE.apply(lib.tanh(self.feat(x)) * 1.5, -1.0, 1.0)
            return self.label(h), self.domain(GradReverse.apply(h, 0.3))

    m = DANN()
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    return m


def batches(n, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((5, 6)).astype(np.float32), rng.integers(0, 3, 5), rng.integers(0, 2, 5))
            for _ in range(n)]


def dann_loss(lib, out, y, d):
    return lib.nn.functional.cross_entropy(out[0], y) + lib.nn.functional.cross_entropy(out[1], d)


def grads_of(m):
    return [p.grad.numpy().copy() for p in m.parameters()]


def test_compiled_forward_and_backward_with_functions_match_eager_and_torch():
    data = batches(3)
    tm, em, lm = dann(torch), dann(lucid), dann(lucid)
    cm = lucid.compile(lm, strict=True)
    for x, y, d in data:
        for m in (tm, em, lm):
            m.zero_grad()
        dann_loss(torch, tm(torch.tensor(x)), torch.tensor(y), torch.tensor(d)).backward()
        dann_loss(lucid, em(lucid.tensor(x)), lucid.tensor(y), lucid.tensor(d)).backward()
        dann_loss(lucid, cm(lucid.tensor(x)), lucid.tensor(y), lucid.tensor(d)).backward()
        for a, b, c in zip(grads_of(lm), grads_of(em), [p.grad.numpy() for p in tm.parameters()]):
            close(a, b, 1e-6)
            close(b, c, 1e-5)
    info = cm.cache_info()
    assert info["entries"] == 1 and not info["eager_only"] and info["hits"] == 2


def test_fused_step_with_functions_matches_eager_and_torch():
    data = batches(5)
    tm, em, fm = dann(torch), dann(lucid), dann(lucid)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    eopt = lucid.optim.SGD(em.parameters(), lr=0.1, momentum=0.9)
    step = lucid.compile.fused_step(fm, lambda out, y, d: dann_loss(lucid, out, y, d),
                                    lucid.optim.SGD(fm.parameters(), lr=0.1, momentum=0.9), strict=True)
    for x, y, d in data:
        topt.zero_grad()
        tl = dann_loss(torch, tm(torch.tensor(x)), torch.tensor(y), torch.tensor(d))
        tl.backward()
        topt.step()
        eopt.zero_grad()
        el = dann_loss(lucid, em(lucid.tensor(x)), lucid.tensor(y), lucid.tensor(d))
        el.backward()
        eopt.step()
        fl = step(lucid.tensor(x), lucid.tensor(y), lucid.tensor(d))
        assert abs(float(fl) - float(el)) < 1e-6 and abs(float(el) - float(tl)) < 1e-5
        for a, b, c in zip(fm.parameters(), em.parameters(), tm.parameters()):
            close(a, b, 1e-6)
            close(b, c, 1e-5)
    assert not step.cache_info()["eager_only"] and step.cache_info()["hits"] >= 1


def test_make_step_gradients_with_functions_match_eager():
    data = batches(3)
    em, mm = dann(lucid), dann(lucid)
    ms = lucid.compile.make_step(mm, lambda out, y, d: dann_loss(lucid, out, y, d), strict=True)
    for x, y, d in data:
        em.zero_grad()
        mm.zero_grad()
        dann_loss(lucid, em(lucid.tensor(x)), lucid.tensor(y), lucid.tensor(d)).backward()
        ms(lucid.tensor(x), lucid.tensor(y), lucid.tensor(d)).backward()
        for a, b in zip(grads_of(mm), grads_of(em)):
            close(a, b, 1e-6)
    assert ms.cache_info()["hits"] == 2 and not ms.cache_info()["eager_only"]


def test_function_backward_with_host_read_falls_back_with_reason():
    class Adaptive(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * (2.0 if float(g.abs().max()) < 10 else 0.0)  # Python control flow on data

    lin = lucid.nn.Linear(3, 2)
    fn = lambda out, y: Adaptive.apply(out).sum() * 0 + F.cross_entropy(out, y)  # noqa: E731
    x, y = lucid.randn(4, 3), lucid.tensor([0, 1, 1, 0])
    strict = lucid.compile.fused_step(lin, fn, lucid.optim.SGD(lin.parameters(), lr=0.1), strict=True)
    with pytest.raises(CompileError, match="host"):
        for _ in range(3):
            strict(x, y)
    step = lucid.compile.fused_step(lin, fn, lucid.optim.SGD(lin.parameters(), lr=0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            step(x, y)
    reasons = list(step.cache_info()["eager_only"].values())
    assert reasons and "host" in reasons[0]
