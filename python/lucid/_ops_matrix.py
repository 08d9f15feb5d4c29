"""torch.* matrix and vector products lucid builds from matmul/mul/sum: outer/ger, inner, vdot,
addmv/addr/baddbmm/addbmm, chain_matmul, tensordot, kron, block_diag, cartesian_prod,
combinations, trace, cdist, cov/corrcoef, diagflat, vander and tril/triu_indices. Written once
here with lucid ops, so they are differentiable as torch's are and compile. (lucid.linalg is a
separate package.)"""
from lucid._autocast_policy import autocast_policy
from lucid._C import ArgumentError  # a ValueError and a RuntimeError, as torch raises
import functools
import itertools
import math

import numpy as np

from lucid import _C
from lucid._creation import tensor
from lucid._C import Tensor
from lucid._ops_query import need_tensor as _need
from lucid._ops_math import zero_grad_edge
from lucid._ops_nn_extra import pdist  # noqa: F401  (torch.pdist: the nn family's function, exported here)


def _beta_alpha(op, input, prod, beta, alpha):
    """beta * input + alpha * prod; with beta == 0 input is ignored (NaN in it does not propagate).
    input must broadcast to the product's shape (never the other way: no silent broadcast)."""
    shape, ishape = tuple(prod.shape), tuple(input.shape)
    if len(ishape) > len(shape) or any(i not in (1, s) for i, s in zip(ishape[::-1], shape[::-1])):
        raise ArgumentError(f"{op}: argument 'input' of shape {ishape} can't be broadcast to the product's shape "
                            f"{shape}")
    out = prod if alpha == 1 else prod * alpha
    if beta == 0:  # broadcast to input's shape, zero gradient to input
        return zero_grad_edge(out + _C.zeros_like(input), input)
    return out + (input if beta == 1 else input * beta)


def outer(input, vec2):
    _need(input, "outer", "input", 1), _need(vec2, "outer", "vec2", 1)
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


ger = outer


def inner(input, other):
    """Sum over the last dims: shape input.shape[:-1] + other.shape[:-1] (a product if either is 0-d)."""
    _need(input, "inner", "input"), _need(other, "inner", "other")
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise ArgumentError(f"inner: the last dims must match, got input {tuple(input.shape)} and other "
                         f"{tuple(other.shape)}")
    k = input.shape[-1]
    out = _C.matmul(input.reshape(-1, k), other.reshape(-1, k).t())
    return out.reshape(list(input.shape[:-1]) + list(other.shape[:-1]))


@autocast_policy(cuda="promote")
def vdot(input, other):
    return _C.dot(input, other)  # real tensors: no conjugation


@autocast_policy(cuda="lower")
def addmv(input, mat, vec, *, beta=1, alpha=1):
    return _beta_alpha("addmv", input, _C.mv(mat, vec), beta, alpha)


@autocast_policy(cuda="lower")
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    return _beta_alpha("addr", input, outer(vec1, vec2), beta, alpha)


@autocast_policy(cpu="lower", cuda="lower")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _beta_alpha("baddbmm", input, _C.bmm(batch1, batch2), beta, alpha)


@autocast_policy(cpu="lower", cuda="lower")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _beta_alpha("addbmm", input, _C.bmm(batch1, batch2).sum(0), beta, alpha)


def chain_matmul(*matrices):
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise ArgumentError("chain_matmul: expected one or more tensors, got none")
    for i, m in enumerate(matrices):
        _need(m, "chain_matmul", f"matrices[{i}]", 2)
    return functools.reduce(_C.mm, matrices) if len(matrices) > 1 else matrices[0].clone()


@autocast_policy(cuda="promote")
def tensordot(a, b, dims=2):
    """Contract dims of a with dims of b: dims is a count (last of a with first of b) or two lists."""
    _need(a, "tensordot", "a"), _need(b, "tensordot", "b")
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise ArgumentError(f"tensordot: argument 'dims' must be non-negative, got {dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da, db = [d % a.ndim for d in da], [d % b.ndim for d in db]
    if len(da) != len(db):
        raise ArgumentError(f"tensordot: both dim lists must have the same length, got {len(da)} and {len(db)}")
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise ArgumentError(f"tensordot: contracted dimensions need to match, but first has size {a.shape[x]} in "
                             f"dim {x} and second has size {b.shape[y]} in dim {y}")
    fa, fb = [d for d in range(a.ndim) if d not in da], [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    am = a.permute(*(fa + da)).reshape(-1, k)
    bm = b.permute(*(db + fb)).reshape(k, -1)
    return _C.mm(am, bm).reshape([a.shape[d] for d in fa] + [b.shape[d] for d in fb])


def kron(input, other):
    """Kronecker product: result[i*m + j] = input[i] * other[j], per dim (dims padded to match)."""
    n = max(input.ndim, other.ndim)
    a = input.reshape([1] * (n - input.ndim) + list(input.shape))
    b = other.reshape([1] * (n - other.ndim) + list(other.shape))
    ash = [s for d in a.shape for s in (d, 1)]
    bsh = [s for d in b.shape for s in (1, d)]
    return (a.reshape(ash) * b.reshape(bsh)).reshape([x * y for x, y in zip(a.shape, b.shape)])


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) on the diagonal of a zero matrix."""
    mats = []
    for i, t in enumerate(tensors):
        _need(t, "block_diag", f"tensors[{i}]")
        if t.ndim > 2:
            raise ArgumentError(f"block_diag: input {i} must have 2 or fewer dimensions, got {t.ndim}")
        mats.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t)
    if not mats:
        return _C.zeros(1, 0)
    dt = functools.reduce(_C.promote_types, [m.dtype for m in mats])
    cols = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        rows.append(_C._pad(m.to_dtype(dt), [left, cols - left - m.shape[1]], "constant", None))
        left += m.shape[1]
    return _C.cat(rows, 0)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 1-D tensors; indexing 'ij' (the default, as torch's) or 'xy'."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    indexing = "ij" if indexing is None else indexing
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    ts = [_need(t, "meshgrid", f"tensors[{i}]") for i, t in enumerate(tensors)]
    for i, t in enumerate(ts):
        if t.ndim > 1:
            raise ArgumentError(f"meshgrid: expected 0-D or 1-D tensors, got {t.ndim}-D tensor {i}")
    swap = indexing == "xy" and len(ts) >= 2  # 'xy': the grids of (y, x, ...) in 'ij', first two swapped back
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.numel() for t in ts]
    out = [t.reshape([-1 if j == i else 1 for j in range(len(ts))]).expand(shape) for i, t in enumerate(ts)]
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors):
    if len(tensors) == 1:
        return _need(tensors[0], "cartesian_prod", "tensors[0]", 1)
    grids = meshgrid(*tensors, indexing="ij")
    return _C.stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """Length-r combinations of a 1-D tensor's elements (itertools order), one per row."""
    _need(input, "combinations", "input", 1)
    if r < 0:
        raise ArgumentError(f"combinations: argument 'r' must be non-negative, got {r}")
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = list(gen(range(input.shape[0]), r))
    if r == 0 or not idx:
        return input.new_empty([0] if r == 0 else [0, r])
    cols = tensor(np.array(idx, dtype=np.int64), device=input.device)
    return _C.stack([input.index_select(0, cols[:, j]) for j in range(r)], 1)


@autocast_policy(cpu="fp32")
def trace(input):
    _need(input, "trace", "input", 2)
    return input.diagonal().sum()


def _safe_root(s, p):
    """s ** (1/p), with gradient 0 where s == 0 (torch's cdist/dist convention)."""
    zero = s == 0
    root = _C.where(zero, 1.0, s) ** (1.0 / p)
    return _C.where(zero, 0.0, root)


@autocast_policy(cpu="fp32", cuda="fp32")
def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise p-norm distances between the rows of x1 [..., P, M] and x2 [..., R, M] -> [..., P, R]."""
    _need(x1, "cdist", "x1"), _need(x2, "cdist", "x2")
    if x1.ndim < 2 or x2.ndim < 2:
        raise ArgumentError(f"cdist: x1 and x2 must be at least 2-D, got {x1.ndim}-D and {x2.ndim}-D")
    if x1.shape[-1] != x2.shape[-1]:
        raise ArgumentError(f"cdist: x1 and x2 must have the same number of columns, got {x1.shape[-1]} and "
                         f"{x2.shape[-1]}")
    if p < 0:
        raise ArgumentError(f"cdist: argument 'p' must be non-negative, got {p}")
    diff = _C.abs(x1.unsqueeze(-2) - x2.unsqueeze(-3))
    if p == 0:
        return (diff != 0).sum(-1).to_dtype(diff.dtype)
    if p == math.inf:
        return diff.amax(-1)
    if p == 1:
        return diff.sum(-1)
    return _safe_root((diff * diff if p == 2 else diff ** p).sum(-1), p)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows of input (variables) over its columns (observations), as torch.cov."""
    _need(input, "cov", "input")
    if input.ndim > 2:
        raise ArgumentError(f"cov: expected input to have two or fewer dimensions but got an input with {input.ndim} "
                         "dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not x.dtype.is_floating_point:
        x = x.to_dtype(_C.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.dtype.is_floating_point:
            raise TypeError(f"cov: expected fweights to have an integral dtype, got {fweights.dtype}")
        w = fweights
    if aweights is not None:
        if not aweights.dtype.is_floating_point:
            raise TypeError(f"cov: expected aweights to have a floating-point dtype, got {aweights.dtype}")
        w = aweights if w is None else w * aweights
    for name, v in (("fweights", fweights), ("aweights", aweights)):
        if v is not None and (v.ndim > 1 or v.numel() != n):
            raise ArgumentError(f"cov: expected {name} to be a 1-D tensor with {n} elements, got shape {tuple(v.shape)}")
    if w is None:
        avg = x.mean(1)
        norm = float(n - correction)
        xm = x - avg.unsqueeze(1)
        c = _C.mm(xm, xm.t()) / max(norm, 0.0)
    else:
        w = w.to_dtype(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
        xm = x - avg.unsqueeze(1)
        c = _C.mm(xm, (xm * w).t()) / _C.clamp_min(norm, 0.0)
    return c.squeeze()


def corrcoef(input):
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().sqrt()
    c = c / d.unsqueeze(1) / d.unsqueeze(0)
    return _C.clamp(c, -1.0, 1.0)


def diagflat(input, offset=0):
    return _C.diag(input.reshape(-1), offset)


def vander(x, N=None, increasing=False):
    """Columns x**0, x**1, ... (decreasing powers unless increasing=True), as torch.vander."""
    _need(x, "vander", "x", 1)
    n = x.shape[0] if N is None else N
    if n < 0:
        raise ArgumentError(f"vander: argument 'N' must be non-negative, got {n}")
    if n == 0:
        return x.new_empty([x.shape[0], 0])
    if not (x.dtype.is_floating_point or x.dtype == _C.dtype.int64):
        x = x.to_dtype(_C.dtype.int64)  # torch computes integer powers in int64
    cols = [_C.ones_like(x)]
    for _ in range(1, n):
        cols.append(cols[-1] * x)
    out = _C.stack(cols, 1)
    return out if increasing else out.flip((1,))


def _tri_indices(row, col, offset, lower, dtype, device):
    r, c = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    out = tensor(np.stack([r, c]).astype(np.int64).reshape(2, -1), device=device)
    return out if dtype is None else out.to_dtype(dtype)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(row, col, offset, True, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(row, col, offset, False, dtype, device)



def adjoint(input):
    """The conjugate transpose of the last two dims (real tensors: the transpose), a view."""
    if _need(input, "adjoint", "input").ndim < 2:
        raise ArgumentError(f"adjoint: expected a tensor with at least 2 dims, got {input.ndim}-D")
    return input.transpose(-2, -1)


@autocast_policy(cuda="promote")
def cross(input, other, dim=None):
    """The 3-vector cross product along dim (default: the first dim of size 3, as torch.cross)."""
    _need(input, "cross", "input"), _need(other, "cross", "other")
    a, b = _C.broadcast_tensors(input, other)
    if dim is None:
        dim = next((d for d, s in enumerate(a.shape) if s == 3), None)
        if dim is None:
            raise ArgumentError(f"cross: no dimension of size 3 in input of shape {tuple(a.shape)}")
    if a.shape[dim] != 3:
        raise ArgumentError(f"cross: inputs dimension {dim} must have length 3, got {a.shape[dim]}")
    return (_C.roll(a, -1, dim) * _C.roll(b, -2, dim)) - (_C.roll(a, -2, dim) * _C.roll(b, -1, dim))


@autocast_policy(cuda="fp32")
def dist(input, other, p=2):
    """The p-norm of input - other (p may be 0, inf or -inf), as torch.dist."""
    _need(input, "dist", "input"), _need(other, "dist", "other")
    d = _C.abs(input - other).reshape(-1)
    if p == 0:
        return (d != 0).sum().to_dtype(d.dtype)
    if p == math.inf:
        return d.amax()
    if p == -math.inf:
        return d.amin()
    return _safe_root((d * d if p == 2 else d ** p).sum(), p)


__all__ = ["outer", "ger", "inner", "vdot", "addmv", "addr", "baddbmm", "addbmm", "chain_matmul", "tensordot",
           "kron", "block_diag", "meshgrid", "cartesian_prod", "combinations", "trace", "cdist", "cov", "corrcoef",
           "diagflat", "vander", "tril_indices", "triu_indices", "adjoint", "cross", "dist", "pdist"]
