"""Ops that torch itself defines as compositions of others (CompositeImplicitAutograd or Python):
outer, baddbmm, meshgrid, nan_to_num, equal, cdist, Tensor.sum_to_size and Tensor.fill_diagonal_;
and lucid.Size, torch.Size's tuple. Each is a
few lucid ops, so autograd, the tracer and lucid.compile see only ops they already know."""
import lucid
from lucid import _C
from lucid._C import Tensor

__all__ = ["outer", "ger", "baddbmm", "meshgrid", "nan_to_num", "equal", "cdist", "Size"]


class Size(tuple):
    """torch.Size: a tuple of dimension sizes with numel(). (Tensor.shape is a plain tuple in lucid,
    so it compares equal to a Size but is not an instance of it.)"""

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __repr__(self):
        return f"lucid.Size({list(self)})"


def outer(input, vec2):
    """lucid.outer(input, vec2): the outer product of two 1-D tensors, as torch.outer."""
    if input.ndim != 1 or vec2.ndim != 1:
        raise _C.ArgumentError(f"outer: expected 1-D tensors, got {input.ndim}-D and {vec2.ndim}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer  # torch's older name


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2) over a batch of matrices, as torch.baddbmm (beta=0
    ignores input, NaNs included)."""
    prod = lucid.bmm(batch1, batch2)
    if input.ndim > 3 or any(a not in (1, b) for a, b in zip(reversed(input.shape), reversed(prod.shape))):
        raise _C.ArgumentError(f"baddbmm: argument 'input' of shape {list(input.shape)} does not broadcast to the "
                               f"product's shape {list(prod.shape)}")
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # input's values are ignored (NaN included), its gradient is zero, as in torch
        return prod + nan_to_num(input * 0, nan=0.0, posinf=0.0, neginf=0.0)
    return (input if beta == 1 else input * beta) + prod


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 1-D tensors, as torch.meshgrid (indexing 'ij' or 'xy')."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise _C.ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for i, t in enumerate(tensors):
        if t.ndim > 1:
            raise _C.ArgumentError(f"meshgrid: expected 0-D or 1-D tensors, got a {t.ndim}-D tensor at position {i}")
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    n = len(ts)
    grids = [t.reshape(*[-1 if j == i else 1 for j in range(n)]).expand(*shape) for i, t in enumerate(ts)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN -> nan, +inf -> posinf, -inf -> neginf (default: the dtype's largest / lowest finite
    value), as torch.nan_to_num; integer and bool tensors come back unchanged (a copy)."""
    if not input.dtype.is_floating_point:
        return input.clone()
    info = lucid.finfo(input.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = lucid.where(input.isnan(), lucid.full_like(input, nan), input)
    out = lucid.where(input == float("inf"), lucid.full_like(input, posinf), out)
    return lucid.where(input == float("-inf"), lucid.full_like(input, neginf), out)


def equal(input, other):
    """True when both have the same shape and equal elements (after type promotion; NaN is not
    equal to itself), as torch.equal."""
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all())


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise p-norm distances between the rows of x1 [..., P, M] and x2 [..., R, M], as
    torch.cdist. A zero distance has a zero gradient, as in torch (sqrt and |.|^(1/p) are not
    differentiable there)."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise _C.ArgumentError(f"cdist: expected tensors with 2 or more dims, got {x1.ndim}-D and {x2.ndim}-D")
    if x1.shape[-1] != x2.shape[-1]:
        raise _C.ArgumentError(f"cdist: X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                               f"X2: {x2.shape[-1]}")
    if p < 0:
        raise _C.ArgumentError(f"cdist: argument 'p' expected a non-negative value, got {p}")
    diff = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()  # [..., P, R, M]
    if p == float("inf"):
        return diff.amax(dim=-1)
    if p == 0:
        return (diff != 0).to(diff.dtype).sum(dim=-1)
    if p == 1:
        return diff.sum(dim=-1)
    s = (diff ** p).sum(dim=-1)
    pos = s > 0
    return lucid.where(pos, lucid.where(pos, s, lucid.ones_like(s)) ** (1.0 / p), lucid.zeros_like(s))


def _sum_to_size(self, *size):
    """Sum self down to `size` (which must broadcast to self's shape), as torch.Tensor.sum_to_size."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    size = tuple(size)
    lead = self.ndim - len(size)
    if lead < 0 or any(s != 1 and s != d for s, d in zip(size, self.shape[lead:])):
        raise _C.ArgumentError(f"sum_to_size: size {list(size)} is not expandable to size {list(self.shape)}")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and self.shape[lead + i] != 1]
    if not dims:
        return self  # already that size: self itself, as torch
    return self.sum(dim=dims, keepdim=True).reshape(*size) if size else self.sum()


def _fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal in place, as torch.Tensor.fill_diagonal_ (all dims of equal size
    beyond 2-D; wrap restarts the diagonal every ncols + 1 rows of a tall matrix)."""
    if self.ndim < 2:
        raise _C.ArgumentError(f"fill_diagonal_: dimensions must be larger than 1, got {self.ndim}")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise _C.ArgumentError(f"fill_diagonal_: all dimensions of input must be of equal length, got {list(self.shape)}")
    rows, cols = self.shape[0], self.shape[-1]
    if self.ndim == 2 and wrap and rows > cols + 1:  # every (cols + 1)-th element of the row-major order
        r = lucid.arange(0, rows * cols, cols + 1)
        self[r // cols, r % cols] = fill_value
        return self
    index = lucid.arange(min(self.shape))
    self[(index,) * self.ndim] = fill_value
    return self


Tensor.sum_to_size = _sum_to_size
Tensor.fill_diagonal_ = _fill_diagonal_
Tensor.outer = outer
Tensor.baddbmm = lambda self, batch1, batch2, *, beta=1, alpha=1: baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)
Tensor.nan_to_num = nan_to_num
