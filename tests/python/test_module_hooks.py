"""Module hooks and tensor hooks against torch, and how lucid.compile honours them.

Eager: register_full_backward_hook / register_full_backward_pre_hook receive the same
(grad_input, grad_output) as torch's (None at non-tensor or non-grad positions), and what they
return replaces the gradients as in torch; forward (pre-)hooks with_kwargs see and replace
(args, kwargs) and the output; handles remove the hooks.

Compiled: a hook is Python code an executable can't replay, so a compiled call must never skip
it silently: a module with backward hooks, and a call whose traced backward runs a tensor hook
(on a parameter or an intermediate), run eagerly with the reason, and the hooks run on every
call; a hook registered after compiling re-keys the call; removing it compiles again.
"""
import warnings

import numpy as np
import pytest
import torch

import lucid
import lucid.nn.functional as F

LIBS = (lucid, torch)


def arr(t):
    return None if t is None else np.asarray(t.detach().numpy(), dtype=np.float64)


def close(a, b, tol=1e-6):
    assert (a is None) == (b is None)
    if a is not None:
        np.testing.assert_allclose(arr(a) if hasattr(a, "numpy") else a, arr(b) if hasattr(b, "numpy") else b,
                                   rtol=tol, atol=tol)


def linear(lib):
    m = lib.nn.Linear(3, 2)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(np.arange(6.0).reshape(2, 3) / 5 - 0.4, dtype=lib.float32))
        m.bias.copy_(lib.tensor([0.1, -0.2], dtype=lib.float32))
    return m


def two_input(lib):
    class Mix(lib.nn.Module):
        def forward(self, a, k, b):
            return a * b * k, a - b

    return Mix()


XA = np.array([[1.0, 2.0, -3.0], [0.5, -1.0, 2.0]], dtype=np.float32)
XB = np.array([[2.0, -1.0, 0.5], [1.5, 1.0, -2.0]], dtype=np.float32)


def record_backward(lib, modify):
    """Runs Mix with both kinds of backward hook; returns what they saw and the input grads."""
    m = two_input(lib)
    seen = []

    def pre(mod, go):
        assert mod is m
        seen.append(("pre", [arr(g) for g in go]))
        return (go[0] * 2, go[1]) if modify else None

    def full(mod, gi, go):
        seen.append(("full", [arr(g) for g in gi], [arr(g) for g in go]))
        return (gi[0] * 10, None, gi[2]) if modify else None

    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(full)
    a = lib.tensor(XA, requires_grad=True)
    b = lib.tensor(XB, requires_grad=True)
    y1, y2 = m(a, 3.0, b)
    (y1 * y1).sum().backward(retain_graph=True)
    ((y1 * y1).sum() + (y2 * 4).sum()).backward()
    return seen, a.grad, b.grad


@pytest.mark.parametrize("modify", [False, True])
def test_full_backward_hooks_match_torch(modify):
    ls, la, lb = record_backward(lucid, modify)
    ts, ta, tb = record_backward(torch, modify)
    assert [s[0] for s in ls] == [s[0] for s in ts]
    for l, t in zip(ls, ts):
        for lg, tg in zip(l[1:], t[1:]):
            assert len(lg) == len(tg)
            for u, v in zip(lg, tg):
                close(u, v)
    close(la, ta)
    close(lb, tb)


def test_backward_hook_when_no_input_requires_grad_and_handle_remove():
    out = []
    for lib in LIBS:
        m = linear(lib)
        seen = []
        h = m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, arr(go[0]))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(lib.tensor(XA)).sum().backward()
        assert len(seen) == 1 and seen[0][0] == (None,)
        h.remove()
        m(lib.tensor(XA)).sum().backward()
        assert len(seen) == 1
        out.append((seen[0][1], m.weight.grad))
    close(out[0][0], out[1][0])
    close(out[0][1], out[1][1])


def test_backward_pre_hook_changes_parameter_grads_like_torch():
    res = []
    for lib in LIBS:
        m = linear(lib)
        m.register_full_backward_pre_hook(lambda mod, go: (go[0] * lib.tensor([1.0, -3.0]),))
        m(lib.tensor(XA, requires_grad=True)).pow(2).sum().backward()
        res.append((m.weight.grad, m.bias.grad))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


def test_forward_hooks_with_kwargs_match_torch():
    res = []
    for lib in LIBS:
        class Scaled(lib.nn.Module):
            def forward(self, x, scale=1.0, shift=None):
                return x * scale + (0 if shift is None else shift)

        m = Scaled()
        calls = []

        def pre(mod, args, kwargs):
            calls.append(("pre", len(args), sorted(kwargs)))
            return (args[0] + 1,), {**kwargs, "scale": kwargs.get("scale", 1.0) * 2}

        def post(mod, args, kwargs, out):
            calls.append(("post", arr(args[0]).tolist(), kwargs["scale"]))
            return out * 10

        def plain_pre(mod, args):
            calls.append(("plain_pre", len(args)))

        h1 = m.register_forward_pre_hook(pre, with_kwargs=True)
        h0 = m.register_forward_pre_hook(plain_pre, prepend=True)
        h2 = m.register_forward_hook(post, with_kwargs=True)
        y = m(lib.tensor([1.0, 2.0]), scale=3.0, shift=0.5)
        h1.remove()
        h0.remove()
        h2.remove()
        z = m(lib.tensor([1.0, 2.0]), scale=3.0)
        res.append((calls, arr(y), arr(z)))
    assert res[0][0] == res[1][0]
    close(res[0][1], res[1][1])
    close(res[0][2], res[1][2])


def test_forward_pre_hook_with_kwargs_bad_return_raises():
    m = linear(lucid)
    m.register_forward_pre_hook(lambda mod, a, kw: a, with_kwargs=True)
    with pytest.raises(RuntimeError, match="new_args, new_kwargs"):
        m(lucid.tensor(XA))


def test_tensor_register_hook_handle_remove_matches_torch():
    res = []
    for lib in LIBS:
        x = lib.tensor(XA, requires_grad=True)
        h = x * 2
        hh = h.register_hook(lambda g: g * 3)
        xh = x.register_hook(lambda g: g + 1)
        (h * h).sum().backward()
        first = arr(x.grad)
        hh.remove()
        xh.remove()
        x.grad = None
        h = x * 2
        (h * h).sum().backward()
        res.append((first, arr(x.grad)))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


# ---------------------------------------------------------------------------- compiled


def quiet(fn, *a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a)


def test_compiled_module_with_backward_hooks_falls_back_and_runs_them():
    m = linear(lucid)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(arr(go[0])))
    cm = lucid.compile(m)
    x = lucid.tensor(XA, requires_grad=True)
    for _ in range(3):
        quiet(lambda: cm(x).sum().backward())
    assert len(seen) == 3
    reasons = list(cm.cache_info()["eager_only"].values())
    assert reasons and "backward hooks" in reasons[0]
    with pytest.raises(lucid.compile.CompileError, match="backward hooks"):
        lucid.compile(m, strict=True)(x)


def test_backward_hook_added_after_compiling_is_not_skipped():
    m = linear(lucid)
    cm = lucid.compile(m)
    x = lucid.tensor(XA, requires_grad=True)
    for _ in range(2):
        cm(x).sum().backward()
    assert not cm.cache_info()["eager_only"]
    seen = []
    h = m.register_full_backward_pre_hook(lambda mod, go: seen.append(1))
    for _ in range(2):
        quiet(lambda: cm(x).sum().backward())
    assert len(seen) == 2
    h.remove()
    cm(x).sum().backward()
    assert len(seen) == 2


def train_with_param_hook(compiled, n=4):
    """SGD on a Linear whose weight has a counting hook that scales the gradient."""
    m = linear(lucid)
    count = []
    m.weight.register_hook(lambda g: (count.append(1), g * 0.5)[1])
    opt = lucid.optim.SGD(m.parameters(), lr=0.1)
    x, y = lucid.tensor(XA), lucid.tensor([0, 1])
    if compiled:
        step = lucid.compile.fused_step(m, F.cross_entropy, opt)
        for _ in range(n):
            quiet(step, x, y)
        return m, count, step.cache_info()
    for _ in range(n):
        opt.zero_grad()
        F.cross_entropy(m(x), y).backward()
        opt.step()
    return m, count, None


def test_fused_step_with_parameter_hook_falls_back_and_runs_it_every_step():
    em, ecount, _ = train_with_param_hook(False)
    fm, fcount, info = train_with_param_hook(True)
    assert len(fcount) == len(ecount) == 4
    close(fm.weight, em.weight)
    assert any("register_hook" in r for r in info["eager_only"].values())


def test_compiled_forward_with_parameter_hook_applies_it_once():
    """The hook must run once per backward, not once inside the traced backward and again when
    the compiled backward hands the gradient to the parameter."""
    res = []
    for compiled in (False, True):
        m = linear(lucid)
        count = []
        m.weight.register_hook(lambda g: (count.append(1), g * 2)[1])
        f = lucid.compile(m) if compiled else m
        for _ in range(3):
            m.weight.grad = None
            quiet(lambda: f(lucid.tensor(XA)).sum().backward())
        res.append((arr(m.weight.grad), len(count)))
    close(res[0][0], res[1][0])
    assert res[0][1] == res[1][1] == 3


def test_hook_on_intermediate_inside_compiled_step_falls_back():
    class Net(lucid.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = linear(lucid)
            self.seen = []

        def forward(self, x):
            h = self.fc(x)
            h.register_hook(lambda g: self.seen.append(1))
            return h

    net = Net()
    ms = lucid.compile.make_step(net, lambda out, y: F.cross_entropy(out, y))
    x, y = lucid.tensor(XA), lucid.tensor([0, 1])
    for _ in range(3):
        quiet(lambda: ms(x, y).backward())
    assert len(net.seen) == 3
    assert any("register_hook" in r for r in ms.cache_info()["eager_only"].values())


def test_parameter_hook_added_after_compiling_is_honoured_and_removal_recompiles():
    m = linear(lucid)
    opt = lucid.optim.SGD(m.parameters(), lr=0.1)
    step = lucid.compile.fused_step(m, F.cross_entropy, opt)
    x, y = lucid.tensor(XA), lucid.tensor([0, 1])
    for _ in range(3):
        step(x, y)
    assert not step.cache_info()["eager_only"]
    count = []
    h = m.bias.register_hook(lambda g: count.append(1))
    for _ in range(2):
        quiet(step, x, y)
    assert len(count) == 2
    h.remove()
    hits = step.cache_info()["hits"]
    for _ in range(3):
        step(x, y)
    assert len(count) == 2 and step.cache_info()["hits"] > hits
