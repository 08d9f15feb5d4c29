"""torch.* reductions, scans and counting lucid builds from its ops: nansum/nanmean, count_nonzero,
aminmax, cummax/cummin, logcumsumexp, diff, gradient, renorm, searchsorted/bucketize (by comparison counts:
O(values x boundaries), no sort kernel), and the histograms bincount, histc and histogram (whose
output size or range may depend on the data: they read it on the host, so a compiled function that
calls them falls back to eager, as torch.compile graph-breaks on them). Differentiable where torch is."""
from lucid._autocast_policy import autocast_policy
from lucid._C import ArgumentError  # a ValueError and a RuntimeError, as torch raises
from lucid import _C
from lucid import return_types
from lucid._C import Tensor
from lucid._ops_query import need_tensor as _need



def nansum(input, dim=None, keepdim=False, *, dtype=None):
    _need(input, "nansum")
    x = _C.where(_C.isnan(input), 0, input) if input.dtype.is_floating_point else input
    return x.sum(dim=dim, keepdim=keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    _need(input, "nanmean")
    if not input.dtype.is_floating_point:
        raise TypeError(f"nanmean: expected a floating-point input, got {input.dtype}")
    count = (~_C.isnan(input)).sum(dim=dim, keepdim=keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


def count_nonzero(input, dim=None):
    return (_need(input, "count_nonzero") != 0).sum(dim=dim)


def aminmax(input, *, dim=None, keepdim=False):
    _need(input, "aminmax")
    if input.numel() == 0 and dim is None:
        raise ArgumentError("aminmax: cannot compute aminmax over an empty input without a dim")
    if dim is None:
        return return_types.aminmax(input.amin(), input.amax()) if not keepdim else return_types.aminmax(
            input.amin().reshape([1] * input.ndim), input.amax().reshape([1] * input.ndim))
    return return_types.aminmax(input.amin(dim, keepdim), input.amax(dim, keepdim))


def _cum_extreme(input, dim, op, better):
    result = getattr(return_types, op)
    """Running extreme along dim with the index of its last occurrence (NaN wins, as torch's kernel)."""
    _need(input, op)
    if input.ndim == 0:
        return result(input.clone(), _C.zeros_like(input, dtype=_C.dtype.int64))
    n = input.shape[dim]
    if n == 0:
        return result(input.clone(), _C.zeros_like(input, dtype=_C.dtype.int64))
    slices = input.unbind(dim)
    best, idx = slices[0], _C.zeros_like(slices[0], dtype=_C.dtype.int64)
    vals, idxs = [best], [idx]
    for i in range(1, n):
        x = slices[i]
        take = better(x, best)
        if input.dtype.is_floating_point:
            take = take | _C.isnan(x)  # x >= NaN is false, so a NaN best stays until the next NaN
        best = _C.where(take, x, best)
        idx = _C.where(take, i, idx)
        vals.append(best)
        idxs.append(idx)
    return result(_C.stack(vals, dim), _C.stack(idxs, dim))


def cummax(input, dim):
    return _cum_extreme(input, dim, "cummax", lambda x, best: x >= best)


def cummin(input, dim):
    return _cum_extreme(input, dim, "cummin", lambda x, best: x <= best)


def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim, stable for any range of values (a running logaddexp)."""
    from lucid._ops_math import logaddexp
    _need(input, "logcumsumexp")
    if not input.dtype.is_floating_point:
        raise TypeError(f"logcumsumexp: expected a floating-point input, got {input.dtype}")
    if input.ndim == 0 or input.shape[dim] == 0:
        return input.clone()
    slices = input.unbind(dim)
    acc = [slices[0]]
    for x in slices[1:]:
        acc.append(logaddexp(acc[-1], x))
    return _C.stack(acc, dim)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """n-th forward difference along dim (boolean inputs: logical xor), with optional prepend/append."""
    _need(input, "diff")
    if input.ndim == 0:
        raise ArgumentError("diff: expects input to be at least one-dimensional")
    if n < 0:
        raise ArgumentError(f"diff: order n must be non-negative but got {n}")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = _C.cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[dim]
        if m == 0:
            break
        hi, lo = x.narrow(dim, 1, m - 1), x.narrow(dim, 0, m - 1)
        x = (hi != lo) if x.dtype == _C.dtype.bool else hi - lo
    return x


def bincount(input, weights=None, minlength=0):
    """Counts (or summed weights) of each value of a 1-D non-negative integer tensor."""
    _need(input, "bincount")
    if input.ndim != 1 or input.dtype.is_floating_point or input.dtype == _C.dtype.bool:
        raise ArgumentError(f"bincount: only 1-D integer tensors are supported, got {input.ndim}-D {input.dtype}")
    if minlength < 0:
        raise ArgumentError(f"bincount: minlength should be >= 0, got {minlength}")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise ArgumentError(f"bincount: weights should be 1-D and have the same length as input ({input.shape[0]}), "
                         f"got shape {tuple(weights.shape)}")
    if input.numel():
        if int(input.amin().item()) < 0:
            raise ArgumentError("bincount: input must contain only non-negative values")
        size = max(int(input.amax().item()) + 1, minlength)
    else:
        size = minlength
    idx = input.to_dtype(_C.dtype.int64)
    if weights is None:
        return _C.zeros(size, dtype=_C.dtype.int64, device=idx.device).scatter_add(0, idx, _C.ones_like(idx))
    w = weights if weights.dtype.is_floating_point else weights.to_dtype(_C.dtype.float64)
    return _C.zeros(size, dtype=w.dtype, device=idx.device).scatter_add(0, idx, w)


def histc(input, bins=100, min=0, max=0):  # noqa: A002
    """Histogram of input with equal-width bins over [min, max] (the data's range when both are 0);
    elements outside are ignored, the last bin includes max."""
    _need(input, "histc")
    if not input.dtype.is_floating_point:
        raise TypeError(f"histc: expected a floating-point input, got {input.dtype}")
    if bins <= 0:
        raise ArgumentError(f"histc: bins must be > 0, got {bins}")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise ArgumentError(f"histc: max must be larger than min, got min={lo}, max={hi}")
    x = input.detach().reshape(-1)
    if lo == hi and x.numel():
        lo, hi = float(x.amin().item()), float(x.amax().item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    inside = (x >= lo) & (x <= hi)
    pos = ((x.to_dtype(_C.dtype.float64) - lo) * (bins / (hi - lo))).floor()
    pos = _C.where(inside, _C.clamp(pos, 0, bins - 1), 0).to_dtype(_C.dtype.int64)
    return _C.zeros(bins, dtype=input.dtype, device=x.device).scatter_add(0, pos, inside.to_dtype(input.dtype))



@autocast_policy(cuda="fp32")
def renorm(input, p, dim, maxnorm):
    """Each slice along dim whose p-norm exceeds maxnorm scaled down to norm maxnorm (torch.renorm)."""
    _need(input, "renorm")
    if p <= 0:
        raise ArgumentError(f"renorm: non-positive norm not supported, got p={p}")
    if maxnorm < 0:
        raise ArgumentError(f"renorm: expected maxnorm to be >= 0, got {maxnorm}")
    other = [d for d in range(input.ndim) if d != dim % input.ndim]
    a = _C.abs(input)
    norm = (a * a if p == 2 else a ** p).sum(other, keepdim=True) ** (1.0 / p) if other else a
    factor = _C.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """For each value, the index where it would be inserted in sorted_sequence (its innermost dim)
    to keep it sorted: the count of elements < value (side 'left') or <= value ('right')."""
    _need(sorted_sequence, "searchsorted", "sorted_sequence")
    if side is not None:
        if side not in ("left", "right"):
            raise ArgumentError(f"searchsorted: side can only be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise ArgumentError("searchsorted: side and right can't be set to opposites, got side 'left' and right True")
        right = side == "right"
    seq = sorted_sequence if sorter is None else sorted_sequence.gather(-1, sorter)
    scalar = not isinstance(input, Tensor)
    v = _C._wrapped_scalar(input).to_dtype(seq.dtype).reshape(1) if scalar else input
    if seq.ndim > 1 and tuple(seq.shape[:-1]) != tuple(v.shape[:-1]):
        raise ArgumentError(f"searchsorted: boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                         f"boundaries tensor and input value tensor must match, got {tuple(seq.shape)} and "
                         f"{tuple(v.shape)}")
    s = seq if seq.ndim == 1 else seq.unsqueeze(-2)
    hit = (v.unsqueeze(-1) >= s) if right else (v.unsqueeze(-1) > s)
    out = hit.sum(-1).to_dtype(_C.dtype.int32 if out_int32 else _C.dtype.int64)
    return out.reshape(()) if scalar else out


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value: boundaries[i-1] < x <= boundaries[i] (right=False) or
    boundaries[i-1] <= x < boundaries[i] (right=True)."""
    if _need(boundaries, "bucketize", "boundaries").ndim != 1:
        raise ArgumentError(f"bucketize: boundaries tensor must be 1 dimension, got {boundaries.ndim}-D")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    """Counts (or summed weights) of input in bins: an int (equal widths over range or the data's
    extent) or a 1-D tensor of increasing edges; the last bin includes its right edge."""
    _need(input, "histogram")
    if not input.dtype.is_floating_point:
        raise TypeError(f"histogram: expected a floating-point input, got {input.dtype}")
    x = input.detach().reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins.to_dtype(input.dtype)
    else:
        if bins <= 0:
            raise ArgumentError(f"histogram: bins must be > 0, got {bins}")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.numel():
            lo, hi = float(x.amin().item()), float(x.amax().item())
        else:
            lo, hi = 0.0, 1.0
        if lo > hi:
            raise ArgumentError(f"histogram: min should not exceed max, got min={lo}, max={hi}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = _C.linspace(lo, hi, bins + 1, dtype=_C.dtype.float64, device=x.device).to_dtype(input.dtype)
    n = edges.shape[0] - 1
    inside = (x >= edges[0]) & (x <= edges[-1])
    idx = _C.clamp(searchsorted(edges, x, right=True) - 1, 0, n - 1)
    w = (inside.to_dtype(input.dtype) if weight is None
         else _C.where(inside, weight.reshape(-1).to_dtype(input.dtype), 0.0))
    hist = _C.zeros(n, dtype=input.dtype, device=x.device).scatter_add(0, idx, w)
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return return_types.histogram(hist, edges)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimated derivative along each dim (or the dims given): central differences inside, one-sided
    first-order differences at the edges, over uniform spacing (a number, or one per dim)."""
    _need(input, "gradient")
    if edge_order != 1:
        raise NotImplementedError(f"gradient: only edge_order=1 is implemented in lucid, got {edge_order}")
    dims = list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    steps = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(steps) != len(dims):
        raise ArgumentError(f"gradient: expected spacing to be a number or {len(dims)} numbers, got {len(steps)}")
    if any(isinstance(h, Tensor) for h in steps):
        raise NotImplementedError("gradient: coordinate tensors as spacing are not implemented in lucid; pass numbers")
    x = input if input.dtype.is_floating_point else input.to_dtype(_C.get_default_dtype())
    out = []
    for d, h in zip(dims, steps):
        n = x.shape[d]
        if n < 2:
            raise ArgumentError(f"gradient: each dimension needs at least edge_order + 1 = 2 samples, dim {d} has {n}")
        first = (x.narrow(d, 1, 1) - x.narrow(d, 0, 1)) / h
        last = (x.narrow(d, n - 1, 1) - x.narrow(d, n - 2, 1)) / h
        inner = [(x.narrow(d, 2, n - 2) - x.narrow(d, 0, n - 2)) / (2 * h)] if n > 2 else []
        out.append(_C.cat([first, *inner, last], d))
    return tuple(out)

__all__ = ["nansum", "nanmean", "count_nonzero", "aminmax", "cummax", "cummin", "logcumsumexp", "diff", "bincount",
           "histc", "renorm", "searchsorted", "bucketize", "histogram", "gradient"]
