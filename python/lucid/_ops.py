"""Top-level functional ops (lucid.add, lucid.zeros, ...), gathered from each family's module."""
from lucid import _C
from lucid._C import add, mul, neg, empty, full, cast, as_strided, as_strided_scatter  # noqa: F401
from lucid._ops_elementwise import *  # noqa: F401,F403
from lucid._ops_reduce import *  # noqa: F401,F403
from lucid._ops_sort import *  # noqa: F401,F403
from lucid._ops_creation import *  # noqa: F401,F403
from lucid._ops_movement import *  # noqa: F401,F403
from lucid._ops_linalg import *  # noqa: F401,F403
from lucid._ops_nn import *  # noqa: F401,F403
from lucid._ops_math import *  # noqa: F401,F403
from lucid._ops_matrix import *  # noqa: F401,F403
from lucid._ops_reduce_extra import *  # noqa: F401,F403
from lucid._ops_movement_extra import *  # noqa: F401,F403
from lucid._ops_query import *  # noqa: F401,F403
from lucid._tensor_methods import *  # noqa: F401,F403  (also attaches the breadth functions as Tensor methods)


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001
    """lucid.sum(input, dim=None, keepdim=False, dtype=None), as torch.sum."""
    return input.sum(dim=dim, keepdim=keepdim, dtype=dtype)


def numel(input):
    """lucid.numel(input): the number of elements, as torch.numel."""
    return input.numel()


def is_tensor(obj):
    """lucid.is_tensor(obj): whether obj is a lucid.Tensor (a Parameter included), as torch.is_tensor."""
    return isinstance(obj, _C.Tensor)
