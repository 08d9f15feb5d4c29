"""lucid.linalg: torch.linalg's decompositions, solvers and norms.

The decompositions and solvers are engine ops on LAPACK (csrc/lucid/ops/linalg_decomp.cpp,
kernels in csrc/lucid/backends/cpu/lapack.cpp), with VJPs written with ops, so they batch over
leading dims, differentiate and compile; this module gives them torch's signatures and
namedtuple results (lucid.return_types). The norms are composites of ops (_norms.py). Numerical failures (a singular
matrix, a matrix that is not positive-definite) raise LinAlgError, a RuntimeError subclass as in
torch.
"""
from lucid._autocast_policy import autocast_policy
import lucid
from lucid import _C, return_types
from lucid._C import LinAlgError, matmul  # noqa: F401
from lucid.linalg._norms import vector_norm, matrix_norm, norm  # noqa: F401

__all__ = ["LinAlgError", "solve", "solve_triangular", "inv", "det", "slogdet", "cholesky", "qr", "svd", "svdvals",
           "eigh", "eigvalsh", "pinv", "lstsq", "norm", "vector_norm", "matrix_norm", "matmul", "matrix_rank",
           "matrix_power", "multi_dot", "vecdot", "cross", "diagonal", "vander", "tensorinv", "tensorsolve"]


def _no_out(op, out):
    if out is not None:
        raise NotImplementedError(f"linalg.{op}: argument 'out' is not supported in lucid")


@autocast_policy(cpu="fp32", cuda="fp32")
def solve(A, B, *, left=True, out=None):
    """X with A @ X = B (X @ A = B when left=False); B may be a (batch of) vector(s)."""
    _no_out("solve", out)
    return _C._linalg_solve(A, B, left)


@autocast_policy(cpu="fp32", cuda="fp32")
def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """Solution of a triangular system; only the upper (or lower) triangle of A is read."""
    _no_out("solve_triangular", out)
    return _C._linalg_solve_triangular(A, B, upper, left, unitriangular)


@autocast_policy(cpu="fp32", cuda="fp32")
def inv(A, *, out=None):
    _no_out("inv", out)
    return _C._linalg_inv(A)


@autocast_policy(cpu="fp32", cuda="fp32")
def det(A, *, out=None):
    _no_out("det", out)
    return _C._linalg_det(A)


@autocast_policy(cpu="fp32", cuda="fp32")
def slogdet(A, *, out=None):
    """(sign, logabsdet): det(A) = sign * exp(logabsdet)."""
    _no_out("slogdet", out)
    return return_types.linalg_slogdet(*_C._linalg_slogdet(A))


@autocast_policy(cpu="fp32", cuda="fp32")
def cholesky(A, *, upper=False, out=None):
    _no_out("cholesky", out)
    return _C._linalg_cholesky(A, upper)


@autocast_policy(cpu="fp32", cuda="fp32")
def qr(A, mode="reduced", *, out=None):
    """(Q, R); mode 'reduced', 'complete' or 'r' (Q is then an empty tensor)."""
    _no_out("qr", out)
    return return_types.linalg_qr(*_C._linalg_qr(A, mode))


def _check_driver(op, driver):
    if driver is not None:
        raise NotImplementedError(f"linalg.{op}: argument 'driver' selects a CUDA solver; lucid's CPU backend "
                                  f"uses LAPACK's gesdd, got driver={driver!r}")


@autocast_policy(cpu="fp32", cuda="fp32")
def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S, Vh) with A = U @ diag(S) @ Vh; singular values descending."""
    _no_out("svd", out)
    _check_driver("svd", driver)
    return return_types.linalg_svd(*_C._linalg_svd(A, full_matrices))


@autocast_policy(cpu="fp32", cuda="fp32")
def svdvals(A, *, driver=None, out=None):
    _no_out("svdvals", out)
    _check_driver("svdvals", driver)
    return _C._linalg_svdvals(A)


@autocast_policy(cpu="fp32", cuda="fp32")
def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors as columns) of a symmetric matrix (its UPLO triangle)."""
    _no_out("eigh", out)
    return return_types.linalg_eigh(*_C._linalg_eigh(A, UPLO))


@autocast_policy(cpu="fp32", cuda="fp32")
def eigvalsh(A, UPLO="L", *, out=None):
    _no_out("eigvalsh", out)
    return _C._linalg_eigvalsh(A, UPLO)


@autocast_policy(cpu="fp32", cuda="fp32")
def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Moore-Penrose pseudo-inverse through the SVD; singular values at most
    max(atol, rtol * largest) are dropped (torch's defaults). A symmetric input (hermitian=True)
    takes the same path: its SVD gives the same pseudo-inverse."""
    _no_out("pinv", out)
    return _C._linalg_pinv(A, atol, rtol)


@autocast_policy(cpu="fp32", cuda="fp32")
def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of A @ X = B: (solution, residuals, rank, singular_values) as torch
    fills them per driver (default 'gelsy'; rank for every driver but 'gels', singular values for
    'gelsd'/'gelss', residuals when m > n and the driver is not 'gelsy'). gelsy is served by
    gelsd, which gives the same minimum-norm solution. On CUDA, as torch, the only driver is
    'gels' (full-rank A), and it is the default there."""
    if A.device.type == "cuda":
        if driver not in (None, "gels"):
            raise RuntimeError(f"linalg.lstsq: argument 'driver' on CUDA must be 'gels' (the only CUDA driver, as in "
                               f"torch), got {driver!r}")
        driver = "gels"
    driver = "gelsy" if driver is None else driver
    X, rank, sv = _C._linalg_lstsq(A, B, rcond, driver)
    m, n = A.shape[-2], A.shape[-1]
    residuals = lucid.zeros(0, dtype=A.dtype, device=A.device)
    if m > n and driver != "gelsy":
        vec = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
        r = (matmul(A, X.unsqueeze(-1) if vec else X) - (B.unsqueeze(-1) if vec else B))
        residuals = (r * r).sum(-2)  # [*, k]; [*, 1] for a vector B, as torch
    return return_types.linalg_lstsq(X, residuals, rank, sv)


# ---- composites of the ops above ------------------------------------------------------------
def _eps(dtype):
    return 1.1920928955078125e-07 if dtype == lucid.float32 else 2.220446049250313e-16


@autocast_policy(cpu="fp32", cuda="fp32")
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Number of singular values above max(atol, rtol * largest), with torch's defaults (int64)."""
    _no_out("matrix_rank", out)
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else _eps(A.dtype) * max(A.shape[-2], A.shape[-1])
    tol = S.amax(-1, keepdim=True) * rtol if S.shape[-1] > 0 else S.sum(-1, keepdim=True)
    if atol is not None:
        tol = tol.clamp(min=atol)
    return (S > tol).sum(-1)


def matrix_power(A, n, *, out=None):
    """A ** n by repeated squaring; n < 0 inverts first, n == 0 gives identities."""
    _no_out("matrix_power", out)
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power: argument 'n' expected an int, got {type(n).__name__}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"linalg.matrix_power: argument 'A' expected batches of square matrices, got shape "
                         f"{list(A.shape)}")
    if n == 0:
        # as torch: the identities written over a copy of A, so the result has A's (zero) gradient
        return A.clone().copy_(lucid.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape))
    base = inv(A) if n < 0 else A
    n, result = abs(n), None
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result.clone() if result is A else result  # n == 1: a new tensor, as torch


@autocast_policy(cuda="lower")
def multi_dot(tensors, *, out=None):
    """tensors[0] @ ... @ tensors[-1]; the first may be 1-D (a row), the last 1-D (a column)."""
    _no_out("multi_dot", out)
    tensors = list(tensors)
    if len(tensors) < 2:
        raise ValueError(f"linalg.multi_dot: argument 'tensors' expected at least 2 tensors, got {len(tensors)}")
    for i, t in enumerate(tensors):
        if t.ndim != 2 and not (t.ndim == 1 and i in (0, len(tensors) - 1)):
            raise ValueError(f"linalg.multi_dot: tensor {i} expected 2-D (1-D allowed first and last), got "
                             f"{t.ndim}-D")
    r = tensors[0]
    for t in tensors[1:]:
        r = matmul(r, t)
    return r


@autocast_policy(cpu="lower", cuda="lower")
def vecdot(x, y, *, dim=-1, out=None):
    """Dot products of x and y along dim (broadcasting)."""
    _no_out("vecdot", out)
    return (x * y).sum(dim)



@autocast_policy(cuda="promote")
def cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along dim (default the last), broadcasting the other dims."""
    _no_out("cross", out)
    if input.ndim != other.ndim:
        raise lucid.ArgumentError(f"linalg.cross: inputs must have the same number of dimensions, got {input.ndim} "
                                  f"and {other.ndim}")
    shape = lucid.broadcast_shapes(tuple(input.shape), tuple(other.shape))
    return lucid.cross(input.expand(*shape), other.expand(*shape), dim=dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """torch.diagonal with the matrix dims last by default."""
    return lucid.diagonal(A, offset, dim1, dim2)


def vander(x, *, N=None):
    """Vandermonde matrix: (..., n) -> (..., n, N) with columns x**0, x**1, ..., x**(N-1).
    Built as a cumulative product of [1, x, x, ...], as torch does, so the gradient at x == 0
    is finite (pow's would be 0 * inf there)."""
    if x.ndim < 1:
        raise lucid.ArgumentError(f"linalg.vander: argument 'x' expected a tensor with at least 1 dimension, got "
                                  f"{x.ndim}")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise lucid.ArgumentError(f"linalg.vander: argument 'N' must be greater than 1, got {n}")
    cols = x.unsqueeze(-1).expand(*x.shape, n - 1)
    return lucid.cat([lucid.ones_like(x).unsqueeze(-1), cols], dim=-1).cumprod(-1)


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


@autocast_policy(cpu="fp32", cuda="fp32")
def tensorinv(A, ind=2, *, out=None):
    """The inverse of A for tensordot over its first `ind` dims: A.shape[ind:] + A.shape[:ind]."""
    _no_out("tensorinv", out)
    if ind <= 0:
        raise lucid.ArgumentError(f"linalg.tensorinv: argument 'ind' expected a positive integer, got {ind}")
    lead, rest = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if _prod(lead) != _prod(rest):
        raise lucid.ArgumentError(f"linalg.tensorinv: expected prod(A.shape[:ind]) == prod(A.shape[ind:]), got "
                                  f"{_prod(lead)} and {_prod(rest)} for shape {tuple(A.shape)}")
    return inv(A.reshape(_prod(lead), _prod(rest))).reshape(*rest, *lead)


@autocast_policy(cpu="fp32", cuda="fp32")
def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) == B; dims: dims of A moved to the end first."""
    _no_out("tensorsolve", out)
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.permute(*[d for d in range(A.ndim) if d not in dims], *dims)
    res = tuple(A.shape[B.ndim:])
    if tuple(A.shape[:B.ndim]) != tuple(B.shape) or _prod(res) != B.numel():
        raise lucid.ArgumentError(f"linalg.tensorsolve: expected A's leading dims {tuple(A.shape[:B.ndim])} to equal "
                                  f"B's shape {tuple(B.shape)} and prod of the rest ({_prod(res)}) to equal B.numel()")
    return solve(A.reshape(B.numel(), _prod(res)), B.reshape(B.numel())).reshape(*res)

from lucid._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("linalg", "lucid.linalg")  # a PyTorch name lucid lacks says so
