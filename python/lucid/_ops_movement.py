"""Python wrappers of the movement ops (owned by the movement family). The ops and their Tensor
methods are bound in C++ (python/src/movement_bind.cpp); this module re-exports the functions
under their PyTorch names and installs the methods that lucid/_tensor.py defines provisionally
(view, view_as, t) with their exact view semantics."""
from lucid import _C
from lucid._C import (cat, stack, split, chunk, unbind, squeeze, unsqueeze, flatten, unflatten, narrow,  # noqa: F401
                      select, transpose, permute, reshape, t, movedim, gather, index_select, scatter_add, scatter,
                      flip, roll, tril, triu, tile, masked_select, index_put, tensor_split, rot90, take_along_dim,
                      index_add, diagonal, diag, diag_embed, repeat_interleave, nonzero, argwhere, take, broadcast_to,
                      broadcast_shapes, broadcast_tensors, index_fill, select_scatter)
from lucid._C import Tensor

concat = cat
concatenate = cat
swapaxes = transpose
swapdims = transpose
moveaxis = movedim


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: `pad` lists (left, right) pairs starting from the last dim. Exported as
    lucid.pad so lucid.nn.functional (which looks names up in the lucid namespace) finds it."""
    return _C._pad(input, pad, mode, value)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    return _C._slice_scatter(input, src, dim, start, end, step)


def hstack(tensors):
    tensors = list(tensors)
    return cat(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([x.reshape(1, -1) if x.ndim < 2 else x for x in tensors], 0)


def fliplr(input):
    if input.ndim < 2:
        raise _C.ArgumentError(f"fliplr: input must be >= 2-d, got {input.ndim}-d")
    return flip(input, (1,))


def flipud(input):
    if input.ndim < 1:
        raise _C.ArgumentError("flipud: input must be >= 1-d, got 0-d")
    return flip(input, (0,))


def atleast_1d(*tensors):
    out = [x.reshape(1) if x.ndim == 0 else x for x in _unpack(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*tensors):
    out = [x.reshape(1, 1) if x.ndim == 0 else x.unsqueeze(0) if x.ndim == 1 else x for x in _unpack(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*tensors):
    def f(x):
        if x.ndim == 0:
            return x.reshape(1, 1, 1)
        if x.ndim == 1:
            return x.reshape(1, -1, 1)
        if x.ndim == 2:
            return x.unsqueeze(-1)
        return x
    out = [f(x) for x in _unpack(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def _unpack(tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


def dstack(tensors):
    return cat([atleast_3d(x) for x in tensors], 2)


def column_stack(tensors):
    return cat([x.reshape(-1, 1) if x.ndim <= 1 else x for x in tensors], 1)


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(self.unbind(0))


Tensor.__iter__ = _iter
Tensor.view = Tensor._mv_view
Tensor.view_as = Tensor._mv_view_as
Tensor.t = Tensor._mv_t
Tensor.mT = property(lambda self: self.transpose(-2, -1))
Tensor.moveaxis = Tensor.movedim
Tensor.fliplr = fliplr
Tensor.flipud = flipud

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "split", "chunk", "unbind", "squeeze",
           "unsqueeze", "flatten", "unflatten", "narrow", "select", "transpose", "swapaxes", "swapdims", "permute",
           "reshape", "t", "movedim", "moveaxis", "gather", "index_select", "scatter_add", "scatter", "flip", "roll",
           "tril", "triu", "tile", "masked_select", "index_put", "slice_scatter", "tensor_split", "rot90", "pad",
           "take_along_dim", "index_add", "fliplr", "flipud", "atleast_1d", "atleast_2d", "atleast_3d", "dstack",
           "column_stack", "diagonal", "diag", "diag_embed", "repeat_interleave", "nonzero", "argwhere", "take",
           "broadcast_to", "broadcast_shapes", "broadcast_tensors", "index_fill", "select_scatter"]
