"""Autograd semantics against PyTorch: accumulation, retain_graph, grad(), create_graph,
hooks, retain_grad, no_grad, detach, version counters, leaf in-place errors."""
import numpy as np
import pytest
import torch

import lucid


def pair(a, requires_grad=True):
    a = np.asarray(a, dtype=np.float64)
    return lucid.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def close(l, t):
    np.testing.assert_allclose(l.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_grad_accumulates_over_backward_calls():
    (la, ta) = pair([1.0, 2.0, 3.0])
    for _ in range(3):
        (la * la).sum().backward()
        (ta * ta).sum().backward()
    close(la.grad, ta.grad)


def test_backward_twice_without_retain_graph_raises():
    la, _ = pair([1.0, 2.0])
    y = (la * la).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_retain_graph_allows_second_backward():
    (la, ta) = pair([1.0, 2.0])
    ly, ty = (la * la * la).sum(), (ta * ta * ta).sum()
    ly.backward(retain_graph=True)
    ly.backward()
    ty.backward(retain_graph=True)
    ty.backward()
    close(la.grad, ta.grad)


def test_nonscalar_backward_needs_gradient():
    la, _ = pair([1.0, 2.0])
    with pytest.raises(RuntimeError, match="scalar outputs"):
        (la * 2).backward()


def test_autograd_grad_and_create_graph_second_derivative():
    (la, ta) = pair([0.5, -1.5, 2.0])
    (g,) = lucid.autograd.grad((la * la * la).sum(), la, create_graph=True)
    (tg,) = torch.autograd.grad((ta * ta * ta).sum(), ta, create_graph=True)
    close(g, tg)
    (g2,) = lucid.autograd.grad(g.sum(), la)
    (tg2,) = torch.autograd.grad(tg.sum(), ta)
    close(g2, tg2)
    assert la.grad is None  # grad() does not accumulate


def test_grad_of_nonleaf_input():
    (la, ta) = pair([1.0, 2.0])
    lh, th = la * 3, ta * 3
    (g,) = lucid.autograd.grad((lh * lh).sum(), lh)
    (tg,) = torch.autograd.grad((th * th).sum(), th)
    close(g, tg)


def test_unused_input_raises_unless_allowed():
    la, _ = pair([1.0])
    lb, _ = pair([2.0])
    with pytest.raises(RuntimeError, match="not used"):
        lucid.autograd.grad((la * 2).sum(), [la, lb])
    g = lucid.autograd.grad((la * 2).sum(), [la, lb], allow_unused=True)
    assert g[1] is None


def test_hooks_on_leaf_and_nonleaf():
    (la, ta) = pair([1.0, 2.0])
    seen = []
    la.register_hook(lambda g: g * 2)
    ta.register_hook(lambda g: g * 2)
    lh, th = la * la, ta * ta
    lh.register_hook(lambda g: seen.append(g.numpy().copy()))
    th.register_hook(lambda g: None)
    lh.sum().backward()
    th.sum().backward()
    close(la.grad, ta.grad)
    assert len(seen) == 1 and np.allclose(seen[0], 1.0)


def test_retain_grad():
    (la, ta) = pair([1.0, 2.0])
    lh, th = la * 2, ta * 2
    lh.retain_grad()
    th.retain_grad()
    (lh * lh).sum().backward()
    (th * th).sum().backward()
    close(lh.grad, th.grad)


def test_no_grad_and_set_grad_enabled():
    la, _ = pair([1.0])
    with lucid.no_grad():
        y = la * 2
    assert not y.requires_grad and y.grad_fn is None
    with lucid.set_grad_enabled(False):
        assert not (la * 2).requires_grad
    assert (la * 2).requires_grad

    @lucid.no_grad()
    def f(x):
        return x * 2
    assert not f(la).requires_grad


def test_detach_shares_storage_without_history():
    la, _ = pair([1.0, 2.0])
    d = (la * 2).detach()
    assert not d.requires_grad and d.grad_fn is None


def test_modified_saved_tensor_raises():
    la, _ = pair([1.0, 2.0])
    h = la * 1.0
    y = (h * h).sum()  # Mul saves h
    with lucid.no_grad():
        h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_inplace_on_leaf_requiring_grad_raises():
    la, _ = pair([1.0, 2.0])
    with pytest.raises(RuntimeError, match="leaf"):
        la.add_(1.0)
    with lucid.no_grad():
        la.add_(1.0)  # allowed under no_grad
    np.testing.assert_allclose(la.detach().numpy(), [2.0, 3.0])


def test_inplace_on_nonleaf_rebases_history():
    (la, ta) = pair([1.0, 2.0, 3.0])
    lh, th = la * 2, ta * 2
    lh.mul_(la)
    th.mul_(ta)
    lh.add_(1.0)
    th.add_(1.0)
    (lh * lh).sum().backward()
    (th * th).sum().backward()
    close(la.grad, ta.grad)


def test_broadcast_gradients_reduce_to_input_shape():
    a = np.random.default_rng(0).standard_normal((3, 1, 4))
    b = np.random.default_rng(1).standard_normal((5, 1))
    la, ta = pair(a)
    lb, tb = pair(b)
    (la * lb - lb / (la * la + 2)).sum().backward()
    (ta * tb - tb / (ta * ta + 2)).sum().backward()
    close(la.grad, ta.grad)
    close(lb.grad, tb.grad)


def test_mixed_dtype_gradient_is_cast_back():
    l32 = lucid.tensor([1.0, 2.0], dtype=lucid.float32, requires_grad=True)
    l64 = lucid.tensor([3.0, 4.0], dtype=lucid.float64, requires_grad=True)
    (l32 * l64).sum().backward()
    assert l32.grad.dtype == lucid.float32 and l64.grad.dtype == lucid.float64
    np.testing.assert_allclose(l32.grad.numpy(), [3.0, 4.0])


def test_requires_grad_only_for_floats():
    with pytest.raises(TypeError, match="floating point"):
        lucid.tensor([1, 2]).requires_grad_()


def test_grads_do_not_alias_between_leaves():
    la, _ = pair([1.0, 2.0])
    lb, _ = pair([3.0, 4.0])
    (la + lb).sum().backward()
    with lucid.no_grad():
        la.grad.mul_(10.0)
    np.testing.assert_allclose(lb.grad.numpy(), [1.0, 1.0])


def test_dlpack_roundtrip_with_torch():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    l = lucid.from_dlpack(t)
    np.testing.assert_array_equal(l.numpy(), t.numpy())
    back = torch.from_dlpack(l)
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_inplace_through_view_of_nonleaf_matches_torch():
    (la, ta) = pair(np.arange(12.0).reshape(3, 4) / 7)
    (lb, tb) = pair([1.0, 2.0, 3.0])
    lz, tz = la * 2, ta * 2
    lz[:, 1] += lb
    tz[:, 1] += tb
    lz[0].mul_(lb[0])
    tz[0].mul_(tb[0])
    lv, tv = lz[1:, 2:], tz[1:, 2:]
    lv.mul_(3.0)
    tv.mul_(3.0)
    w = np.random.default_rng(0).standard_normal((3, 4))
    (lz * lucid.tensor(w)).sum().backward()
    (tz * torch.tensor(w)).sum().backward()
    close(lz, tz)
    close(la.grad, ta.grad)
    close(lb.grad, tb.grad)


def test_inplace_through_view_of_leaf_requiring_grad_raises():
    la, _ = pair([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="view of a leaf"):
        la[1:].add_(1.0)


def test_as_strided_scatter_input_gradient_is_zero_on_the_overwritten_region():
    # Reference computed independently: d/d(input) keeps the upstream gradient outside the
    # region written by src and is zero inside it (torch 2.13 gets this one backwards).
    a = lucid.tensor(np.zeros((3, 4)), requires_grad=True)
    b = lucid.tensor(np.ones((2, 2)), requires_grad=True)
    y = lucid.as_strided_scatter(a, b, (2, 2), (4, 2), 1)
    g = np.arange(12.0).reshape(3, 4)
    y.backward(lucid.tensor(g))
    expected = g.copy().reshape(-1)
    expected[[1, 3, 5, 7]] = 0
    np.testing.assert_array_equal(a.grad.numpy(), expected.reshape(3, 4))
    np.testing.assert_array_equal(b.grad.numpy(), [[1.0, 3.0], [5.0, 7.0]])


# split / chunk / tensor_split are one Split view op whose VJP concatenates the parts' gradients
# (ops/movement_views.cpp): parts without a gradient count as zeros, and in-place writes through a
# part rebase the input's history as for any view (torch refuses those on split's outputs; its
# unsafe_split / narrow give the reference).
@pytest.mark.parametrize("used", [(0,), (1,), (0, 2), (0, 1, 2)])
def test_split_gradient_with_unused_parts(used):
    a = np.random.default_rng(1).standard_normal((4, 6))
    x, tx = lucid.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    parts, tparts = x.split([1, 2, 3], dim=1), tx.split([1, 2, 3], dim=1)
    sum((parts[k] * (k + 2)).sum() for k in used).backward()
    sum((tparts[k] * (k + 2)).sum() for k in used).backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_split_chunk_gradients_match_torch():
    a = np.random.default_rng(2).standard_normal((5, 7))
    x, tx = lucid.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ys = x.chunk(3, dim=1) + x.tensor_split(2, dim=0)
    tys = tx.chunk(3, dim=1) + tx.tensor_split(2, dim=0)
    sum((y * y).sum() * (i + 1) for i, y in enumerate(ys)).backward()
    sum((y * y).sum() * (i + 1) for i, y in enumerate(tys)).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_inplace_write_through_a_split_part():
    a = np.random.default_rng(4).standard_normal((4, 6))
    x, tx = lucid.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = x * 1, tx * 1
    p = y.split(2, dim=1)
    p[1].mul_(3)
    ty.narrow(1, 2, 2).mul_(3)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
