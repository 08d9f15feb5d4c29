"""Norms: linalg.vector_norm, linalg.matrix_norm, linalg.norm and torch.norm (lucid.norm,
Tensor.norm), written as composites of ops so they differentiate and compile with no op of
their own. Roots are taken through a where() guard, so the gradient at a zero vector is 0, as
torch's norm backward gives, instead of 0 * inf = nan.
"""
import math

import lucid


def _check_float(op, x):
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: argument 'input' expected a floating point tensor, got {x.dtype}")


def _dims(dim, ndim):
    if dim is None:
        return None
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _root(s, p):
    """s ** (1/p) with a zero gradient where s == 0."""
    pos = s > 0
    safe = lucid.where(pos, s, lucid.ones_like(s))
    r = lucid.sqrt(safe) if p == 2 else safe.pow(1.0 / p)
    return lucid.where(pos, r, lucid.zeros_like(s))


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """torch.linalg.vector_norm: the ord-norm over `dim` (all elements when None)."""
    if out is not None:
        raise NotImplementedError("linalg.vector_norm: argument 'out' is not supported in lucid")
    _check_float("linalg.vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg.vector_norm: argument 'ord' expected a number, got {type(ord).__name__}")
    dims = _dims(dim, x.ndim)
    if not dims:  # None or (): every dim
        dims = tuple(range(x.ndim))

    def red(t, f):
        return getattr(t, f)(dim=dims, keepdim=keepdim) if dims else getattr(t, f)()

    a = x.abs()
    if ord == math.inf:
        return red(a, "amax")
    if ord == -math.inf:
        return red(a, "amin")
    if ord == 0:
        return red((x != 0).to(x.dtype), "sum")
    if ord == 1:
        return red(a, "sum")
    if ord == 2:
        return _root(red(x * x, "sum"), 2)
    return _root(red(a.pow(float(ord)), "sum"), float(ord))


def _matrix_dims(op, A, dim):
    if A.ndim < 2:
        raise ValueError(f"{op}: argument 'A' expected a tensor with at least 2 dimensions, got a {A.ndim}-D tensor")
    dims = _dims(dim, A.ndim)
    if len(dims) != 2:
        raise ValueError(f"{op}: argument 'dim' expected 2 dims, got {dim}")
    d0, d1 = (d % A.ndim for d in dims)
    if d0 == d1:
        raise ValueError(f"{op}: argument 'dim' expected 2 distinct dims, got {dim}")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """torch.linalg.matrix_norm: ord 'fro', 'nuc', inf, -inf, 1, -1, 2, -2 over the two dims."""
    op = "linalg.matrix_norm"
    if out is not None:
        raise NotImplementedError(f"{op}: argument 'out' is not supported in lucid")
    _check_float(op, A)
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = _matrix_dims(op, A, dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        S = lucid.linalg.svdvals(A.movedim((d0, d1), (-2, -1)))
        r = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
        return r
    if ord in (1, -1, math.inf, -math.inf):
        sum_dim, max_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(dim=sum_dim, keepdim=True)
        r = s.amax(dim=max_dim, keepdim=True) if ord > 0 else s.amin(dim=max_dim, keepdim=True)
        return r if keepdim else r.squeeze((d0, d1))
    raise ValueError(f"{op}: argument 'ord' expected 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2, got {ord!r}")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """torch.linalg.norm: a vector norm over one dim (or all, when ord is None), else a matrix norm."""
    if out is not None:
        raise NotImplementedError("linalg.norm: argument 'out' is not supported in lucid")
    dims = _dims(dim, A.ndim)
    if dims is not None and len(dims) == 1:
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if dims is not None and len(dims) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if dims is not None:
        raise ValueError(f"linalg.norm: argument 'dim' expected 1 or 2 dims, got {dim}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise ValueError(f"linalg.norm: input must be 1-D or 2-D when 'ord' is given and 'dim' is None, "
                     f"got a {A.ndim}-D tensor")


def tensor_norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):  # noqa: A002
    """torch.norm / Tensor.norm: p 'fro' (the 2-norm over dim), 'nuc' (over two dims) or a number."""
    if out is not None:
        raise NotImplementedError("norm: argument 'out' is not supported in lucid")
    if p == "fro":
        return vector_norm(input, 2, dim, keepdim, dtype=dtype)
    if p == "nuc":
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if isinstance(p, str):
        raise ValueError(f"norm: argument 'p' expected 'fro', 'nuc' or a number, got {p!r}")
    return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)
