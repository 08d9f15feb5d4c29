"""Spec rows for the movement family: views (View, Squeeze, Unsqueeze, Slice, Select, Unfold),
copies (SliceScatter, Cat, Flip, Roll, Tril, Triu, Repeat, Pad) and indexing (Gather,
ScatterAdd, Scatter, IndexGather, IndexPut). Outputs of view ops are multiplied by 1 where a
gradient check needs a fresh tensor."""
import numpy as np

from op_specs import OpSpec, Sample, arr

FLOATS = ("float32", "float64", "float16", "bfloat16")
ALL = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool")
NUM = ("float32", "float64", "float16", "bfloat16", "int64", "int32")


def _x(shape):
    return lambda rng, dt: [Sample([arr(rng, shape, dt)])]


def _perm_index(rng, shape, dim, size):
    """Index for scatter along `dim` with no repeated target per (other dims) position."""
    idx = np.zeros(shape, dtype=np.int64)
    it = np.ndindex(*[s for d, s in enumerate(shape) if d != dim])
    for pos in it:
        sl = list(pos)
        sl.insert(dim, slice(None))
        idx[tuple(sl)] = rng.permutation(size)[:shape[dim]]
    return idx


def _setitem(idx, value_is_tensor=True):
    def lucid_fn(l, a, v):
        y = a * 1
        y[idx] = v
        return y

    def torch_fn(t, a, v):
        y = a * 1
        y[idx] = v
        return y
    return lucid_fn, torch_fn


def _getitem(idx):
    return (lambda l, a: a[idx] * 1), (lambda t, a: a[idx] * 1)


def _getitem_t(l_idx_pos=1):
    """a[index_tensor] where the index is a sample argument (an int64 array)."""
    return (lambda l, a, i: a[i]), (lambda t, a, i: a[i])


def _pad_torch(t, a, p, mode="constant", value=None):
    import torch.nn.functional as F
    if mode == "constant":
        return F.pad(a, p, mode, value)
    return F.pad(a, p, mode)


def _pad_lucid(l, a, p, mode="constant", value=None):
    from lucid._ops_movement import pad
    return pad(a, p, mode, value)


def _scatter_samples(rng, dt):
    x = arr(rng, (4, 5), dt)
    src = arr(rng, (3, 5), dt)
    return [Sample([x, 0, _perm_index(rng, (3, 5), 0, 4), src]),
            Sample([x, 1, _perm_index(rng, (4, 3), 1, 5), arr(rng, (4, 3), dt)])]


def _scatter_add_samples(rng, dt):
    x = arr(rng, (4, 5), dt)
    return [Sample([x, 0, rng.integers(0, 4, (6, 5)), arr(rng, (6, 5), dt)]),
            Sample([x, 1, rng.integers(0, 5, (3, 7)), arr(rng, (3, 7), dt)]),
            Sample([arr(rng, (2, 3, 4), dt), -1, rng.integers(0, 4, (2, 2, 6)), arr(rng, (2, 2, 6), dt)])]


SPECS = [
    # ---- views ----
    OpSpec("view", ["View"], lambda l, a: a.view(4, 6) * 1, lambda t, a: a.view(4, 6) * 1, _x((2, 3, 4)), dtypes=ALL),
    OpSpec("view_infer", ["View"], lambda l, a: a.transpose(0, 1).view(-1, 2, 4) * 1,
           lambda t, a: a.transpose(0, 1).view(-1, 2, 4) * 1, _x((2, 1, 2, 4))),
    OpSpec("view_as", ["View"], lambda l, a, b: a.view_as(b) * 1, lambda t, a, b: a.view_as(b) * 1,
           lambda rng, dt: [Sample([arr(rng, (2, 6), dt), arr(rng, (3, 4), dt)], grad_args=[0])]),
    OpSpec("squeeze", ["Squeeze"], lambda l, a, **k: l.squeeze(a, **k) * 1, lambda t, a, **k: t.squeeze(a, **k) * 1,
           lambda rng, dt: [Sample([arr(rng, (1, 3, 1, 2), dt)]), Sample([arr(rng, (1, 3, 1, 2), dt)], {"dim": 2}),
                            Sample([arr(rng, (1, 3, 1, 2), dt)], {"dim": (0, 1, -2)}),
                            Sample([arr(rng, (1, 3, 1, 2), dt)], {"dim": 1})], dtypes=NUM),
    OpSpec("unsqueeze", ["Unsqueeze"], lambda l, a, d: a.unsqueeze(d) * 1, lambda t, a, d: a.unsqueeze(d) * 1,
           lambda rng, dt: [Sample([arr(rng, (3, 2), dt), 0]), Sample([arr(rng, (3, 2), dt), -1]),
                            Sample([arr(rng, (3, 2), dt), 1])], dtypes=NUM),
    OpSpec("flatten", ["Reshape"], lambda l, a, *r: a.flatten(*r) * 1, lambda t, a, *r: a.flatten(*r) * 1,
           lambda rng, dt: [Sample([arr(rng, (2, 3, 4, 5), dt)]), Sample([arr(rng, (2, 3, 4, 5), dt), 1, 2]),
                            Sample([arr(rng, (2, 3, 4, 5), dt), -3, -1])]),
    OpSpec("unflatten", ["View"], lambda l, a: l.unflatten(a, 1, (3, -1)) * 1, lambda t, a: t.unflatten(a, 1, (3, -1)) * 1,
           _x((2, 12))),
    OpSpec("slice_getitem", ["Slice"], *_getitem((slice(1, None), slice(None, None, 2), slice(-3, -1))),
           _x((3, 5, 4)), dtypes=ALL),
    OpSpec("narrow", ["Slice"], lambda l, a: a.narrow(1, 1, 3) * 1, lambda t, a: a.narrow(1, 1, 3) * 1, _x((2, 5))),
    OpSpec("select", ["Select"], lambda l, a: a.select(1, -1) * 1, lambda t, a: a.select(1, -1) * 1, _x((3, 4, 2)),
           dtypes=ALL),
    OpSpec("select_getitem", ["Select", "Slice", "Unsqueeze"], *_getitem((1, None, slice(0, 3), -2)), _x((2, 4, 3))),
    OpSpec("unbind", ["Select"], lambda l, a: l.unbind(a, 1), lambda t, a: t.unbind(a, 1), _x((2, 3))),
    OpSpec("t", ["Permute"], lambda l, a: a.t() * 1, lambda t, a: a.t() * 1, _x((2, 3))),
    OpSpec("mT", ["Permute"], lambda l, a: a.mT * 1, lambda t, a: a.mT * 1, _x((2, 3, 4))),
    OpSpec("movedim", ["Permute"], lambda l, a: l.movedim(a, (0, 1), (2, 0)) * 1,
           lambda t, a: t.movedim(a, (0, 1), (2, 0)) * 1, _x((2, 3, 4))),
    OpSpec("unfold", ["Unfold", "UnfoldBackward"], lambda l, a, *r: a.unfold(*r) * 1, lambda t, a, *r: a.unfold(*r) * 1,
           lambda rng, dt: [Sample([arr(rng, (3, 7), dt), 1, 3, 2]), Sample([arr(rng, (5, 2), dt), 0, 2, 1]),
                            Sample([arr(rng, (6,), dt), 0, 6, 1])], dtypes=NUM),
    OpSpec("diagonal", ["Diagonal", "DiagonalBackward"], lambda l, a, *r: l.diagonal(a, *r) * 1,
           lambda t, a, *r: t.diagonal(a, *r) * 1,
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt)]), Sample([arr(rng, (3, 4), dt), 1]),
                            Sample([arr(rng, (2, 3, 4), dt), -1, 2, 0]), Sample([arr(rng, (3, 4), dt), 5])], dtypes=ALL),
    OpSpec("diag_embed", ["DiagonalBackward", "Diagonal"], lambda l, a, *r: l.diag_embed(a, *r),
           lambda t, a, *r: t.diag_embed(a, *r),
           lambda rng, dt: [Sample([arr(rng, (2, 3), dt)]), Sample([arr(rng, (2, 3), dt), 1, 0, 2]),
                            Sample([arr(rng, (3,), dt), -2])], dtypes=NUM),
    OpSpec("diag", ["DiagonalBackward", "Diagonal"], lambda l, a, *r: l.diag(a, *r), lambda t, a, *r: t.diag(a, *r),
           lambda rng, dt: [Sample([arr(rng, (3,), dt)]), Sample([arr(rng, (3,), dt), 1]),
                            Sample([arr(rng, (3, 4), dt), -1])], dtypes=NUM),
    OpSpec("repeat_interleave", ["Expand", "Reshape", "IndexGather"], lambda l, a, r, *d: l.repeat_interleave(a, r, *d),
           lambda t, a, r, *d: t.repeat_interleave(a, r, *d),
           lambda rng, dt: [Sample([arr(rng, (2, 3), dt), 2]), Sample([arr(rng, (2, 3), dt), 3, 1]),
                            Sample([arr(rng, (2, 3), dt), np.array([1, 0, 2]), -1]),
                            Sample([arr(rng, (2, 3), dt), np.array([2, 1]), 0])], dtypes=NUM),
    OpSpec("index_fill", ["IndexPut"], lambda l, a, d, i: a.index_fill(d, i, -1.5), lambda t, a, d, i: a.index_fill(d, i, -1.5),
           lambda rng, dt: [Sample([arr(rng, (4, 3), dt), 0, np.array([2, 0])]),
                            Sample([arr(rng, (2, 5), dt), -1, np.array([4, 4, 1])])], dtypes=FLOATS),
    OpSpec("select_scatter", ["SliceScatter", "Unsqueeze"], lambda l, a, s, d, i: l.select_scatter(a, s, d, i),
           lambda t, a, s, d, i: t.select_scatter(a, s, d, i),
           lambda rng, dt: [Sample([arr(rng, (4, 3), dt), arr(rng, (3,), dt), 0, -1]),
                            Sample([arr(rng, (2, 3, 4), dt), arr(rng, (2, 4), dt), 1, 1])], dtypes=NUM),
    OpSpec("take", ["IndexGather"], lambda l, a, i: l.take(a, i), lambda t, a, i: t.take(a, i),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), rng.integers(-12, 12, (2, 3))])], dtypes=ALL),
    OpSpec("broadcast_tensors", ["Expand"], lambda l, a, b: l.broadcast_tensors(a, b),
           lambda t, a, b: t.broadcast_tensors(a, b),
           lambda rng, dt: [Sample([arr(rng, (3, 1), dt), arr(rng, (2, 1, 4), dt)])]),
    OpSpec("split", ["Split"], lambda l, a, s, d: l.split(a, s, d), lambda t, a, s, d: t.split(a, s, d),
           lambda rng, dt: [Sample([arr(rng, (5, 4), dt), 2, 0]), Sample([arr(rng, (5, 4), dt), [1, 3], 1])],
           dtypes=ALL),
    OpSpec("chunk", ["Split"], lambda l, a, c, d: l.chunk(a, c, d), lambda t, a, c, d: t.chunk(a, c, d),
           lambda rng, dt: [Sample([arr(rng, (5, 4), dt), 3, 0]), Sample([arr(rng, (5, 6), dt), 4, 1])]),
    # ---- copies ----
    OpSpec("slice_scatter", ["SliceScatter"], lambda l, a, s, **k: l.slice_scatter(a, s, **k),
           lambda t, a, s, **k: t.slice_scatter(a, s, **k),
           lambda rng, dt: [Sample([arr(rng, (6, 4), dt), arr(rng, (2, 4), dt)], {"dim": 0, "start": 1, "end": 5, "step": 2}),
                            Sample([arr(rng, (3, 5), dt), arr(rng, (3, 2), dt)], {"dim": 1, "start": -2})], dtypes=NUM),
    OpSpec("setitem_basic", ["SliceScatter"], *_setitem((slice(None), slice(1, 4, 2))),
           lambda rng, dt: [Sample([arr(rng, (3, 5), dt), arr(rng, (3, 2), dt)]),
                            Sample([arr(rng, (3, 5), dt), arr(rng, (2,), dt)])], dtypes=NUM),
    OpSpec("setitem_select", ["SliceScatter"], *_setitem((1, Ellipsis, 2)),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 5), dt), arr(rng, (4,), dt)]),
                            Sample([arr(rng, (3, 4, 5), dt), arr(rng, (1, 1, 4), dt)])], dtypes=NUM),
    OpSpec("cat", ["Cat"], lambda l, *xs, dim=0: l.cat(list(xs), dim), lambda t, *xs, dim=0: t.cat(list(xs), dim),
           lambda rng, dt: [Sample([arr(rng, (2, 3), dt), arr(rng, (4, 3), dt)]),
                            Sample([arr(rng, (2, 3), dt), arr(rng, (2, 1), dt), arr(rng, (2, 2), dt)], {"dim": -1}),
                            Sample([arr(rng, (2, 0), dt), arr(rng, (2, 2), dt)], {"dim": 1})], dtypes=ALL),
    OpSpec("cat_promote", ["Cat"], lambda l, a, b: l.cat([a, b.to(l.float64)]), lambda t, a, b: t.cat([a, b.to(t.float64)]),
           lambda rng, dt: [Sample([arr(rng, (2, 3), dt), arr(rng, (1, 3), dt)])], dtypes=("float32", "int32")),
    OpSpec("stack", ["Cat", "Unsqueeze"], lambda l, *xs, dim=0: l.stack(list(xs), dim),
           lambda t, *xs, dim=0: t.stack(list(xs), dim),
           lambda rng, dt: [Sample([arr(rng, (2, 3), dt), arr(rng, (2, 3), dt)]),
                            Sample([arr(rng, (2, 3), dt), arr(rng, (2, 3), dt), arr(rng, (2, 3), dt)], {"dim": -1})]),
    OpSpec("flip", ["Flip"], lambda l, a, d: l.flip(a, d), lambda t, a, d: t.flip(a, d),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 2), dt), (0, 2)]), Sample([arr(rng, (3, 4), dt), (-1,)])], dtypes=ALL),
    OpSpec("roll", ["Roll", "Reshape"], lambda l, a, s, d: l.roll(a, s, d), lambda t, a, s, d: t.roll(a, s, d),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), 1, 0]), Sample([arr(rng, (3, 4), dt), (2, -5), (1, 0)]),
                            Sample([arr(rng, (3, 4), dt), 5, None])], dtypes=ALL),
    OpSpec("tril", ["Tril"], lambda l, a, k: l.tril(a, k), lambda t, a, k: t.tril(a, k),
           lambda rng, dt: [Sample([arr(rng, (4, 5), dt), 0]), Sample([arr(rng, (2, 3, 4), dt), -1]),
                            Sample([arr(rng, (3, 5), dt), 2])], dtypes=ALL),
    OpSpec("triu", ["Triu"], lambda l, a, k: l.triu(a, k), lambda t, a, k: t.triu(a, k),
           lambda rng, dt: [Sample([arr(rng, (4, 5), dt), 0]), Sample([arr(rng, (2, 3, 4), dt), 1]),
                            Sample([arr(rng, (5, 3), dt), -2])], dtypes=ALL),
    OpSpec("repeat", ["Repeat"], lambda l, a, *r: a.repeat(*r), lambda t, a, *r: a.repeat(*r),
           lambda rng, dt: [Sample([arr(rng, (2, 3), dt), 2, 1]), Sample([arr(rng, (2, 3), dt), 2, 1, 3]),
                            Sample([arr(rng, (3,), dt), 2, 2])], dtypes=ALL),
    OpSpec("tile", ["Repeat"], lambda l, a, r: l.tile(a, r), lambda t, a, r: t.tile(a, r),
           lambda rng, dt: [Sample([arr(rng, (2, 3), dt), (2,)]), Sample([arr(rng, (2, 3), dt), (2, 1, 2)])]),
    OpSpec("pad_constant", ["Pad"], _pad_lucid, _pad_torch,
           lambda rng, dt: [Sample([arr(rng, (2, 3, 4), dt), (1, 2)]),
                            Sample([arr(rng, (2, 3, 4), dt), (1, 0, 2, 1), "constant", 1.5]),
                            Sample([arr(rng, (2, 3, 4), dt), (-1, 2, 0, -2)])], dtypes=NUM),
    OpSpec("pad_reflect", ["Pad", "PadBackward"], _pad_lucid, _pad_torch,
           lambda rng, dt: [Sample([arr(rng, (2, 3, 5), dt), (2, 1), "reflect"]),
                            Sample([arr(rng, (1, 2, 4, 5), dt), (1, 3, 2, 0), "reflect"])], dtypes=FLOATS),
    OpSpec("pad_replicate", ["Pad", "PadBackward"], _pad_lucid, _pad_torch,
           lambda rng, dt: [Sample([arr(rng, (2, 3, 5), dt), (2, 3), "replicate"]),
                            Sample([arr(rng, (1, 2, 4, 3), dt), (1, 2, 3, 1), "replicate"])], dtypes=FLOATS),
    OpSpec("pad_circular", ["Pad", "PadBackward"], _pad_lucid, _pad_torch,
           lambda rng, dt: [Sample([arr(rng, (2, 3, 5), dt), (2, 3), "circular"]),
                            Sample([arr(rng, (1, 2, 4, 3), dt), (1, 2, 3, 1), "circular"])], dtypes=FLOATS),
    # ---- indexing ----
    OpSpec("gather", ["Gather", "ScatterAdd"], lambda l, a, d, i: l.gather(a, d, i), lambda t, a, d, i: t.gather(a, d, i),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), 1, rng.integers(0, 4, (3, 6))]),
                            Sample([arr(rng, (3, 4), dt), 0, rng.integers(0, 3, (2, 4))]),
                            Sample([arr(rng, (2, 3, 4), dt), -1, rng.integers(0, 4, (2, 2, 3))])], dtypes=ALL),
    OpSpec("scatter_add", ["ScatterAdd", "Gather"], lambda l, a, d, i, s: l.scatter_add(a, d, i, s),
           lambda t, a, d, i, s: t.scatter_add(a, d, i, s), _scatter_add_samples, dtypes=NUM),
    OpSpec("scatter_add_big_src", ["ScatterAdd"], lambda l, a, d, i, s: l.scatter_add(a, d, i, s),
           lambda t, a, d, i, s: t.scatter_add(a, d, i, s),
           lambda rng, dt: [Sample([arr(rng, (4, 5), dt), 1, rng.integers(0, 5, (3, 7)), arr(rng, (4, 8), dt)])],
           dtypes=NUM, grad=False),
    OpSpec("scatter", ["Scatter", "Gather"], lambda l, a, d, i, s: l.scatter(a, d, i, s),
           lambda t, a, d, i, s: t.scatter(a, d, i, s), _scatter_samples, dtypes=ALL),
    OpSpec("scatter_value", ["Scatter"], lambda l, a, d, i: a.scatter(d, i, value=2),
           lambda t, a, d, i: a.scatter(d, i, value=2),
           lambda rng, dt: [Sample([arr(rng, (4, 5), dt), 1, _perm_index(rng, (4, 2), 1, 5)])], dtypes=NUM),
    OpSpec("index_select", ["IndexGather", "IndexPut"], lambda l, a, d, i: l.index_select(a, d, i),
           lambda t, a, d, i: t.index_select(a, d, i),
           lambda rng, dt: [Sample([arr(rng, (4, 3), dt), 0, rng.integers(0, 4, (6,))]),
                            Sample([arr(rng, (2, 5, 3), dt), 1, rng.integers(0, 5, (3,))])], dtypes=ALL),
    OpSpec("masked_select", ["IndexGather", "Expand"], lambda l, a, m: l.masked_select(a, m),
           lambda t, a, m: t.masked_select(a, m),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), rng.integers(0, 2, (3, 4)).astype(bool)]),
                            Sample([arr(rng, (3, 4), dt), rng.integers(0, 2, (4,)).astype(bool)])], dtypes=ALL),
    OpSpec("getitem_index", ["IndexGather", "IndexPut"], *_getitem_t(),
           lambda rng, dt: [Sample([arr(rng, (5, 3), dt), rng.integers(-5, 5, (4,))]),
                            Sample([arr(rng, (5, 3), dt), rng.integers(0, 5, (2, 3))]),
                            Sample([arr(rng, (5, 3), dt), rng.integers(0, 2, (5, 3)).astype(bool)])], dtypes=ALL),
    OpSpec("getitem_mixed", ["IndexGather", "Slice"], *_getitem(([0, 2, 2], slice(None), slice(1, 3))),
           _x((3, 4, 5)), dtypes=NUM),
    OpSpec("getitem_separated", ["IndexGather"], *_getitem(([0, 1, 1], slice(None), [2, 0, 3])),
           _x((3, 4, 5)), dtypes=NUM),
    OpSpec("getitem_broadcast", ["IndexGather"], *_getitem((slice(None), [[0], [2]], [1, 3, 0])),
           _x((2, 3, 4)), dtypes=NUM),
    OpSpec("index_put", ["IndexPut"], lambda l, a, i, v, acc: l.index_put(a, (i,), v, acc),
           lambda t, a, i, v, acc: t.index_put(a, (i,), v, acc),
           lambda rng, dt: [Sample([arr(rng, (5, 3), dt), np.array([0, 3, 1]), arr(rng, (3, 3), dt), False]),
                            Sample([arr(rng, (5, 3), dt), np.array([0, 3, 0, 3]), arr(rng, (4, 3), dt), True]),
                            Sample([arr(rng, (5, 3), dt), np.array([4, 2]), arr(rng, (3,), dt), False])], dtypes=NUM),
    OpSpec("index_add", ["IndexPut"], lambda l, a, d, i, s, **k: l.index_add(a, d, i, s, **k),
           lambda t, a, d, i, s, **k: t.index_add(a, d, i, s, **k),
           lambda rng, dt: [Sample([arr(rng, (5, 3), dt), 0, np.array([0, 4, 0, 2]), arr(rng, (4, 3), dt)]),
                            Sample([arr(rng, (2, 5, 3), dt), 1, np.array([1, 1]), arr(rng, (2, 2, 3), dt)], {"alpha": 2})],
           dtypes=NUM),
    OpSpec("take_along_dim", ["Gather", "Expand"], lambda l, a, i, *d: l.take_along_dim(a, i, *d),
           lambda t, a, i, *d: t.take_along_dim(a, i, *d),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), rng.integers(0, 4, (3, 2)), 1]),
                            Sample([arr(rng, (3, 1, 4), dt), rng.integers(0, 3, (2, 5, 1)), 0]),
                            Sample([arr(rng, (3, 4), dt), rng.integers(0, 12, (5,))])], dtypes=NUM),
    OpSpec("tensor_split", ["Split", "Slice"], lambda l, a, s, d: l.tensor_split(a, s, d), lambda t, a, s, d: t.tensor_split(a, s, d),
           lambda rng, dt: [Sample([arr(rng, (7, 3), dt), 3, 0]), Sample([arr(rng, (3, 7), dt), [1, 5, 4], 1])]),
    OpSpec("rot90", ["Flip", "Permute"], lambda l, a, k, d: l.rot90(a, k, d), lambda t, a, k, d: t.rot90(a, k, d),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), 1, (0, 1)]), Sample([arr(rng, (2, 3, 4), dt), 3, (2, 0)]),
                            Sample([arr(rng, (3, 4), dt), -2, (1, 0)]), Sample([arr(rng, (3, 4), dt), 4, (0, 1)])]),
    OpSpec("stack_helpers", ["Cat"], lambda l, a, b: (l.dstack([a, b]), l.column_stack([a[0], b[0]]), l.fliplr(a), l.flipud(b)),
           lambda t, a, b: (t.dstack([a, b]), t.column_stack([a[0], b[0]]), t.fliplr(a), t.flipud(b)),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)])]),
    OpSpec("setitem_index", ["IndexPut"], *_setitem(([0, 2], slice(None), [1, 3])),
           lambda rng, dt: [Sample([arr(rng, (3, 4, 5), dt), arr(rng, (2, 4), dt)]),
                            Sample([arr(rng, (3, 4, 5), dt), arr(rng, (4,), dt)])], dtypes=NUM),
    OpSpec("setitem_mask", ["IndexPut"], lambda l, a, m, v: _set(a * 1, m, v), lambda t, a, m, v: _set(a * 1, m, v),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), rng.integers(0, 2, (3, 4)).astype(bool), arr(rng, (1,), dt)])],
           dtypes=NUM),
]


def _set(y, i, v):
    y[i] = v
    return y
