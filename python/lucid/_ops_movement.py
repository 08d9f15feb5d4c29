"""Python wrappers of the movement ops (owned by the movement family). The ops and their Tensor
methods are bound in C++ (python/src/movement_bind.cpp); this module re-exports the functions
under their PyTorch names and installs the methods that lucid/_tensor.py defines provisionally
(view, view_as, t) with their exact view semantics."""
from lucid import _C
from lucid._C import (cat, stack, split, chunk, unbind, squeeze, unsqueeze, flatten, unflatten, narrow,  # noqa: F401
                      select, transpose, permute, reshape, t, movedim, gather, index_select, scatter_add, scatter,
                      flip, roll, tril, triu, tile, masked_select, index_put)
from lucid._C import Tensor

concat = cat
concatenate = cat
swapaxes = transpose
swapdims = transpose
moveaxis = movedim


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: `pad` lists (left, right) pairs starting from the last dim."""
    return _C._pad(input, pad, mode, value)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    return _C._slice_scatter(input, src, dim, start, end, step)


def hstack(tensors):
    tensors = list(tensors)
    return cat(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([x.reshape(1, -1) if x.ndim < 2 else x for x in tensors], 0)


Tensor.view = Tensor._mv_view
Tensor.view_as = Tensor._mv_view_as
Tensor.t = Tensor._mv_t
Tensor.mT = property(lambda self: self.transpose(-2, -1))
Tensor.moveaxis = Tensor.movedim

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "split", "chunk", "unbind", "squeeze",
           "unsqueeze", "flatten", "unflatten", "narrow", "select", "transpose", "swapaxes", "swapdims", "permute",
           "reshape", "t", "movedim", "moveaxis", "gather", "index_select", "scatter_add", "scatter", "flip", "roll",
           "tril", "triu", "tile", "masked_select", "index_put", "slice_scatter"]
