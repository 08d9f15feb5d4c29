"""torch.* splitting, stacking, scattering and copying functions lucid builds from its movement
ops: hsplit/vsplit/dsplit, row_stack, ravel, split_with_sizes and the unsafe_* names, the *_copy
forms of the views (a view's values in fresh storage), diagonal_scatter, index_copy,
masked_scatter, put, scatter_reduce/index_reduce, unravel_index, reshape_as and sum_to_size. Differentiable
through the ops they are written with, and traceable (no host reads)."""
from lucid._autocast_policy import autocast_policy
from lucid._C import ArgumentError  # a ValueError and a RuntimeError, as torch raises
import math

import numpy as np

from lucid import _C
from lucid._creation import tensor
from lucid._C import Tensor
from lucid._ops_query import need_tensor as _need
from lucid._ops_movement import vstack

row_stack = vstack
unsafe_chunk = _C.chunk
unsafe_split = _C.split


def _split_along(input, sections, dim, op, min_ndim):
    _need(input, op)
    if input.ndim < min_ndim:
        raise ArgumentError(f"{op}: requires a tensor with at least {min_ndim} dimension(s), but got a tensor with "
                         f"{input.ndim} dimensions")
    if isinstance(sections, int) and (sections <= 0 or input.shape[dim] % sections):
        raise ArgumentError(f"{op}: attempted to split along dimension {dim}, but the size of the dimension "
                         f"{input.shape[dim]} is not divisible by the split_size {sections}")
    return _C.tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):
    return _split_along(input, indices_or_sections, 0 if input.ndim == 1 else 1, "hsplit", 1)


def vsplit(input, indices_or_sections):
    return _split_along(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    return _split_along(input, indices_or_sections, 2, "dsplit", 3)


def split_with_sizes(input, split_sizes, dim=0):
    sizes = list(split_sizes)
    if sum(sizes) != input.shape[dim]:
        raise ArgumentError(f"split_with_sizes: expects split_sizes to sum exactly to {input.shape[dim]} (input tensor's "
                         f"size at dimension {dim}), but got split_sizes={sizes}")
    return _C.split(input, sizes, dim)


unsafe_split_with_sizes = split_with_sizes


def ravel(input):
    return _need(input, "ravel").reshape(-1)


def reshape_as(input, other):
    return input.reshape(other.shape)


def sum_to_size(input, *size):
    """Sums input down to `size` (which input must broadcast from), as Tensor.sum_to_size."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) else tuple(size)
    lead = input.ndim - len(shape)
    if lead < 0 or any(s not in (1, d) for s, d in zip(shape, input.shape[lead:])):
        raise ArgumentError(f"sum_to_size: size {list(shape)} is not expandable to size {list(input.shape)}")
    out = input.sum(list(range(lead))) if lead else input
    dims = [i for i, (s, d) in enumerate(zip(shape, out.shape)) if s == 1 and d != 1]
    return out.sum(dims, keepdim=True) if dims else out


def _copy_form(view, name):
    """torch's <view>_copy: the view's values in fresh storage (tuples of views: each one copied)."""
    def f(input, *args, **kwargs):
        out = view(input, *args, **kwargs)
        return tuple(o.clone() for o in out) if isinstance(out, (tuple, list)) else out.clone()
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{name}: as {view.__name__ if hasattr(view, '__name__') else name[:-5]}, in fresh storage."
    return f


def _slice(input, dim=0, start=None, end=None, step=1):
    return input[(slice(None),) * (dim % input.ndim) + (slice(start, end, step),)]


alias_copy = _copy_form(lambda x: x, "alias_copy")
as_strided_copy = _copy_form(_C.as_strided, "as_strided_copy")
detach_copy = _copy_form(Tensor.detach, "detach_copy")
diagonal_copy = _copy_form(_C.diagonal, "diagonal_copy")
expand_copy = _copy_form(Tensor.expand, "expand_copy")
narrow_copy = _copy_form(_C.narrow, "narrow_copy")
permute_copy = _copy_form(_C.permute, "permute_copy")
select_copy = _copy_form(_C.select, "select_copy")
slice_copy = _copy_form(_slice, "slice_copy")
split_copy = _copy_form(_C.split, "split_copy")
split_with_sizes_copy = _copy_form(split_with_sizes, "split_with_sizes_copy")
squeeze_copy = _copy_form(_C.squeeze, "squeeze_copy")
t_copy = _copy_form(_C.t, "t_copy")
transpose_copy = _copy_form(_C.transpose, "transpose_copy")
unbind_copy = _copy_form(_C.unbind, "unbind_copy")
unfold_copy = _copy_form(Tensor.unfold, "unfold_copy")
unsqueeze_copy = _copy_form(_C.unsqueeze, "unsqueeze_copy")
view_copy = _copy_form(Tensor.view, "view_copy")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with its (offset, dim1, dim2) diagonal replaced by src."""
    out = input.clone()
    diag = out.diagonal(offset, dim1, dim2)
    if tuple(diag.shape) != tuple(src.shape):
        raise ArgumentError(f"diagonal_scatter: src must have the diagonal's shape {tuple(diag.shape)}, got "
                         f"{tuple(src.shape)}")
    diag.copy_(src)
    return out


def _index_along(index, dim, like):
    """A 1-D index along dim, shaped and expanded to `like` (for scatter)."""
    shape = [1] * like.ndim
    if like.ndim:
        shape[dim % like.ndim] = -1
    return index.reshape(shape).expand(like.shape) if like.ndim else index.reshape(())


@autocast_policy(cpu="promote", cuda="promote")
def index_copy(input, dim, index, source):
    """input with input.select(dim, index[i]) = source.select(dim, i), as torch.index_copy."""
    _need(input, "index_copy"), _need(index, "index_copy", "index"), _need(source, "index_copy", "source")
    if index.ndim > 1 or index.dtype != _C.dtype.int64:
        raise TypeError(f"index_copy: argument 'index' expected a 1-D int64 tensor, got {index.ndim}-D {index.dtype}")
    if input.ndim and source.ndim != input.ndim:
        raise ArgumentError(f"index_copy: source must have as many dims as input ({input.ndim}), got {source.ndim}")
    if source.ndim and source.shape[dim] != index.numel():
        raise ArgumentError(f"index_copy: index has {index.numel()} elements but source has {source.shape[dim]} along "
                         f"dim {dim}")
    if input.ndim == 0:
        return source.reshape(()).to_dtype(input.dtype).clone()
    return input.scatter(dim, _index_along(index, dim, source), source.to_dtype(input.dtype))


def masked_scatter(input, mask, source):
    """input with the positions where mask is True filled, in order, from source's elements."""
    _need(input, "masked_scatter"), _need(mask, "masked_scatter", "mask"), _need(source, "masked_scatter", "source")
    if mask.dtype != _C.dtype.bool:
        raise TypeError(f"masked_scatter: argument 'mask' expected a bool tensor, got {mask.dtype}")
    if source.dtype != input.dtype:
        raise TypeError(f"masked_scatter: expected source to have input's dtype {input.dtype}, got {source.dtype}")
    shape = _C.broadcast_shapes(input.shape, mask.shape)
    m = mask.expand(shape).reshape(-1)
    x = input.expand(shape).reshape(-1)
    pos = _C.clamp_min(m.to_dtype(_C.dtype.int64).cumsum(0) - 1, 0)
    return _C.where(m, source.reshape(-1).gather(0, pos), x).reshape(shape)


def put(input, index, source, accumulate=False):
    """input with input.flatten()[index] = source (summed when accumulate), as torch.put."""
    _need(input, "put"), _need(index, "put", "index"), _need(source, "put", "source")
    if index.numel() != source.numel():
        raise ArgumentError(f"put: expected source and index to have the same number of elements, got {source.numel()} "
                         f"and {index.numel()}")
    n = input.numel()
    idx = index.reshape(-1).to_dtype(_C.dtype.int64)
    idx = _C.where(idx < 0, idx + n, idx)
    flat = input.reshape(-1)
    src = source.reshape(-1).to_dtype(input.dtype)
    out = flat.scatter_add(0, idx, src) if accumulate else flat.scatter(0, idx, src)
    return out.reshape(input.shape)


def unravel_index(indices, shape):
    """Flat indices to a tuple of coordinate tensors for `shape` (C order), as torch.unravel_index."""
    idx = tensor(indices) if not isinstance(indices, Tensor) else indices
    if idx.dtype.is_floating_point or idx.dtype == _C.dtype.bool:
        raise TypeError(f"unravel_index: expected 'indices' to be an integer tensor, got {idx.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    idx = idx.to_dtype(_C.dtype.int64)
    out = []
    for s in reversed(shape):
        out.append(_C.remainder(idx, s))
        idx = _C.floor_divide(idx, s)
    return tuple(reversed(out))



def constant_pad_nd(input, pad, value=0):
    return _C._pad(input, list(pad), "constant", value)


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero(input) cut or padded (with fill_value rows) to exactly `size` rows."""
    nz = _C.nonzero(_need(input, "nonzero_static"))
    n = nz.shape[0]
    if n >= size:
        return nz[:size]
    return _C.cat([nz, _C._full_factory([size - n, input.ndim], fill_value, dtype=nz.dtype, device=nz.device)], 0)


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """input with src's elements reduced into the positions index names along dim ("sum", "prod",
    "mean", "amax", "amin"), as torch.scatter_reduce. sum and mean are scatter_adds; prod, amax and
    amin compare index against each output position along dim (memory index.numel() x
    input.shape[dim]). Gradients follow the ops (amax/amin ties with self split in halves first,
    where torch splits them evenly)."""
    _need(input, "scatter_reduce"), _need(index, "scatter_reduce", "index"), _need(src, "scatter_reduce", "src")
    if reduce not in _REDUCES:
        raise ArgumentError(f"scatter_reduce: reduce argument must be one of {', '.join(_REDUCES)}, got {reduce!r}")
    if index.dtype != _C.dtype.int64:
        raise TypeError(f"scatter_reduce: argument 'index' expected an int64 tensor, got {index.dtype}")
    if index.ndim != src.ndim or (input.ndim and index.ndim != input.ndim):
        raise ArgumentError(f"scatter_reduce: index ({index.ndim}-D), src ({src.ndim}-D) and input ({input.ndim}-D) "
                         "must have the same number of dimensions")
    dim = dim % max(input.ndim, 1)
    for d in range(index.ndim):
        if index.shape[d] > src.shape[d] or (d != dim and index.shape[d] > input.shape[d]):
            raise ArgumentError(f"scatter_reduce: index shape {tuple(index.shape)} must not exceed src "
                             f"{tuple(src.shape)} in any dim, nor input {tuple(input.shape)} outside dim {dim}")
    for d in range(src.ndim):
        if src.shape[d] != index.shape[d]:
            src = src.narrow(d, 0, index.shape[d])
    src = src.to_dtype(input.dtype)
    hits = _C.zeros_like(input, dtype=_C.dtype.int64).scatter_add(dim, index, _C.ones_like(index))
    hit = hits > 0
    if reduce in ("sum", "mean"):
        base = input if include_self else _C.where(hit, 0, input)
        total = base.scatter_add(dim, index, src)
        if reduce == "sum":
            return total
        count = hits + (1 if include_self else 0)
        safe = _C.where(count > 0, count, 1).to_dtype(input.dtype)
        mean = total / safe if input.dtype.is_floating_point else _C.div(total, safe, rounding_mode="floor")
        return _C.where(hit, mean, input)
    n = input.shape[dim]
    onehot = index.unsqueeze(-1) == _C.arange(n, device=index.device)  # index.shape + [n]
    if reduce == "prod":
        red = _C.where(onehot, src.unsqueeze(-1), 1).prod(dim)
    else:
        if input.dtype.is_floating_point:
            fill = -math.inf if reduce == "amax" else math.inf
        else:
            info = np.iinfo(_NP_INT[input.dtype.name])
            fill = int(info.min if reduce == "amax" else info.max)
        vals = _C.where(onehot, src.unsqueeze(-1), fill)
        red = vals.amax(dim) if reduce == "amax" else vals.amin(dim)
    red = red.movedim(-1, dim)  # index.shape with dim -> n
    pad = []
    for d in reversed(range(input.ndim)):
        pad += [0, input.shape[d] - red.shape[d]]
    if any(pad):
        red = _C._pad(red, pad, "constant", None)
    if include_self:
        red = red * input if reduce == "prod" else (_C.maximum(red, input) if reduce == "amax"
                                                   else _C.minimum(red, input))
    return _C.where(hit, red, input)



def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """scatter_reduce with a 1-D index along dim (prod, mean, amax, amin), as torch.index_reduce."""
    _need(input, "index_reduce"), _need(index, "index_reduce", "index"), _need(source, "index_reduce", "source")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ArgumentError(f"index_reduce: reduce argument must be one of prod, mean, amax, amin, got {reduce!r}")
    if index.ndim > 1 or (source.ndim and source.shape[dim] != index.numel()):
        raise ArgumentError(f"index_reduce: index must be 1-D with source.shape[dim] ({source.shape[dim]}) elements, "
                         f"got shape {tuple(index.shape)}")
    return scatter_reduce(input, dim, _index_along(index, dim, source), source, reduce, include_self=include_self)

_NP_INT = {"uint8": np.uint8, "int8": np.int8, "int32": np.int32, "int64": np.int64, "bool": np.uint8}

__all__ = ["row_stack", "unsafe_chunk", "unsafe_split", "hsplit", "vsplit", "dsplit", "split_with_sizes",
           "unsafe_split_with_sizes", "ravel", "alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy",
           "expand_copy", "narrow_copy", "permute_copy", "select_copy", "slice_copy", "split_copy",
           "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy",
           "unsqueeze_copy", "view_copy", "diagonal_scatter", "index_copy", "masked_scatter", "put",
           "unravel_index", "constant_pad_nd", "nonzero_static", "scatter_reduce", "index_reduce"]
