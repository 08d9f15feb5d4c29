"""torch's pre-torch.linalg functions, kept by torch for old code and still common in it:
torch.cholesky, qr, svd (V, not Vh; `some` and `compute_uv`), triangular_solve (b first, A second;
returns the solution and a copy of A), nuclear_norm and frobenius_norm. (cholesky_solve and
cholesky_inverse are not here: torch differentiates them as if the factor were a full matrix while
its kernel reads one triangle, and a triangular-solve composite would give other gradients.) Each is lucid.linalg's op under the old signature and result type, so gradients
and compilation come with it. Exported at top level and as Tensor methods (lucid/__init__.py)."""
import lucid
from lucid import return_types
from lucid._C import Tensor
from lucid.linalg import cholesky as _cholesky, qr as _qr, svd as _svd, solve_triangular, matrix_norm, vector_norm

__all__ = ["cholesky", "qr", "svd", "triangular_solve", "nuclear_norm", "frobenius_norm"]


def cholesky(input, upper=False, *, out=None):
    return _cholesky(input, upper=upper, out=out)


def qr(input, some=True, *, out=None):
    q, r = _qr(input, "reduced" if some else "complete", out=out)
    return return_types.qr(q, r)


def svd(input, some=True, compute_uv=True, *, out=None):
    """(U, S, V) with input = U diag(S) V^T; compute_uv=False gives zero-filled U (m, m) and V (n, n)
    as torch does."""
    if out is not None:
        raise NotImplementedError("svd: argument 'out' is not supported in lucid")
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        s = lucid.linalg.svdvals(input)
        return return_types.svd(lucid.zeros(*input.shape[:-2], m, m, dtype=input.dtype, device=input.device), s,
                                lucid.zeros(*input.shape[:-2], n, n, dtype=input.dtype, device=input.device))
    u, s, vh = _svd(input, full_matrices=not some)
    return return_types.svd(u, s, vh.mT)


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Solves A X = input (A^T X = input when transpose); returns (X, a copy of A)."""
    if out is not None:
        raise NotImplementedError("triangular_solve: argument 'out' is not supported in lucid")
    a = A.mT if transpose else A
    x = solve_triangular(a, input, upper=upper != transpose, unitriangular=unitriangular)
    return return_types.triangular_solve(x, A.clone())


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    return matrix_norm(input, "nuc", dim=(-2, -1) if dim is None else dim, keepdim=keepdim, out=out)


def frobenius_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    return vector_norm(input, 2, dim=dim, keepdim=keepdim, out=out)


for _name in ("cholesky", "qr", "svd", "triangular_solve"):
    setattr(Tensor, _name, globals()[_name])
