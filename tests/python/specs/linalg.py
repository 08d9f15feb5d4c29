"""Spec rows for the linalg family: Matmul (matmul/mm/bmm/mv/dot, @), Addmm, Linear,
LinearFused, Conv / ConvBackwardInput / ConvBackwardWeight / ConvTranspose, and the pooling ops
with their backward partners. Rows named *_gx / *_gw / *_bwd differentiate a first-order
gradient (create_graph=True), which exercises the VJPs of the backward ops themselves."""
from op_specs import OpSpec, Sample, arr, positive

FLOATS = ("float32", "float64", "float16", "bfloat16")


def _F(t):
    return t.nn.functional


def _lf(l):
    return l  # conv/pool functionals live at lucid top level (lucid.nn.functional re-exports them)


# ---- matrix products ----------------------------------------------------------------------
def _matmul_samples(rng, dt):
    shapes = [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)), ((2, 3, 4), (4, 5)),
              ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)),
              ((3, 0), (0, 2))]
    return [Sample([arr(rng, a, dt), arr(rng, b, dt)]) for a, b in shapes]


def _addmm_samples(rng, dt):
    return [Sample([arr(rng, (3, 5), dt), arr(rng, (3, 4), dt), arr(rng, (4, 5), dt)]),
            Sample([arr(rng, (5,), dt), arr(rng, (3, 4), dt), arr(rng, (4, 5), dt)], {"beta": 0.5, "alpha": 2.0}),
            Sample([arr(rng, (3, 1), dt), arr(rng, (3, 4), dt), arr(rng, (4, 5), dt)], {"alpha": -1.5}),
            Sample([arr(rng, (3, 5), dt), arr(rng, (3, 4), dt), arr(rng, (4, 5), dt)], {"beta": 0.0})]


def _linear_samples(rng, dt):
    return [Sample([arr(rng, (3, 4), dt), arr(rng, (5, 4), dt), arr(rng, (5,), dt)]),
            Sample([arr(rng, (2, 3, 4), dt), arr(rng, (5, 4), dt), None]),
            Sample([arr(rng, (4,), dt), arr(rng, (5, 4), dt), arr(rng, (5,), dt)]),
            Sample([arr(rng, (2, 2, 3, 4), dt), arr(rng, (2, 4), dt), arr(rng, (2,), dt)])]


def _fused_samples(rng, dt):
    out = []
    for act in ("relu", "gelu", "gelu_tanh", "none"):
        out.append(Sample([arr(rng, (6, 8), dt), arr(rng, (5, 8), dt), arr(rng, (5,), dt), arr(rng, (6, 5), dt)],
                          {"activation": act}))
    out.append(Sample([arr(rng, (2, 3, 8), dt), arr(rng, (5, 8), dt), arr(rng, (5,), dt), arr(rng, (5,), dt)],
                      {"activation": "relu", "residual_first": True}))
    out.append(Sample([arr(rng, (3, 8), dt), arr(rng, (5, 8), dt), None, None], {"activation": "gelu"}))
    return out


def _torch_fused(t, x, w, b, r, activation="none", residual_first=False):
    y = _F(t).linear(x, w, b)
    act = {"relu": t.relu, "gelu": _F(t).gelu, "gelu_tanh": lambda v: _F(t).gelu(v, approximate="tanh"),
           "none": lambda v: v}[activation]
    if r is not None and residual_first:
        return act(y + r)
    y = act(y)
    return y + r if r is not None else y


def _convfused_samples(rng, dt):
    out = []
    for act in ("relu", "gelu", "gelu_tanh", "none"):
        out.append(Sample([arr(rng, (2, 16, 6, 6), dt), arr(rng, (16, 16, 3, 3), dt), arr(rng, (16,), dt),
                           arr(rng, (2, 16, 6, 6), dt)], {"padding": 1, "activation": act}))
    out.append(Sample([arr(rng, (1, 16, 7, 7), dt), arr(rng, (32, 8, 3, 3), dt), arr(rng, (32,), dt),
                       arr(rng, (1, 32, 4, 4), dt)], {"stride": 2, "padding": 1, "groups": 2, "activation": "relu",
                                                      "residual_first": True}))
    out.append(Sample([arr(rng, (1, 3, 5, 5), dt), arr(rng, (4, 3, 3, 3), dt), None, None], {"activation": "relu"}))
    out.append(Sample([arr(rng, (2, 3, 9), dt), arr(rng, (4, 3, 3), dt), arr(rng, (4,), dt), None],
                      {"activation": "gelu", "dilation": 2}))
    return out


def _torch_convfused(t, x, w, b, r, stride=1, padding=0, dilation=1, groups=1, activation="none",
                     residual_first=False):
    conv = _F(t).conv1d if w.ndim == 3 else _F(t).conv2d
    y = conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    act = {"relu": t.relu, "gelu": _F(t).gelu, "gelu_tanh": lambda v: _F(t).gelu(v, approximate="tanh"),
           "none": lambda v: v}[activation]
    if r is not None and residual_first:
        return act(y + r)
    y = act(y)
    return y + r if r is not None else y


# ---- convolutions -------------------------------------------------------------------------
def _conv2d_samples(rng, dt):
    return [Sample([arr(rng, (1, 2, 5, 5), dt), arr(rng, (3, 2, 3, 3), dt), arr(rng, (3,), dt)]),
            Sample([arr(rng, (2, 4, 7, 6), dt), arr(rng, (6, 2, 3, 2), dt), arr(rng, (6,), dt)],
                   {"stride": 2, "padding": 1, "groups": 2, "dilation": (2, 1)}),
            Sample([arr(rng, (1, 4, 6, 6), dt), arr(rng, (4, 1, 3, 3), dt), None], {"groups": 4, "padding": "same"}),
            Sample([arr(rng, (1, 3, 6, 5), dt), arr(rng, (2, 3, 4, 2), dt), arr(rng, (2,), dt)], {"padding": "same"}),
            Sample([arr(rng, (2, 6, 6), dt), arr(rng, (2, 2, 3, 3), dt), None], {"padding": "valid", "stride": (1, 2)}),
            Sample([arr(rng, (2, 3, 5, 5), dt), arr(rng, (4, 3, 1, 1), dt), arr(rng, (4,), dt)], {"padding": (0, 1)})]


def _conv1d_samples(rng, dt):
    return [Sample([arr(rng, (2, 3, 7), dt), arr(rng, (4, 3, 3), dt), arr(rng, (4,), dt)], {"padding": 1}),
            Sample([arr(rng, (1, 4, 9), dt), arr(rng, (4, 2, 2), dt), None],
                   {"stride": 2, "groups": 2, "dilation": 2}),
            Sample([arr(rng, (3, 8), dt), arr(rng, (2, 3, 4), dt), arr(rng, (2,), dt)], {"padding": "same"})]


def _convT_samples(rng, dt):
    return [Sample([arr(rng, (1, 2, 3, 3), dt), arr(rng, (2, 3, 3, 3), dt), arr(rng, (3,), dt)]),
            Sample([arr(rng, (2, 4, 3, 4), dt), arr(rng, (4, 2, 3, 3), dt), arr(rng, (4,), dt)],
                   {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
            Sample([arr(rng, (1, 2, 3, 3), dt), arr(rng, (2, 3, 3, 2), dt), None],
                   {"stride": (2, 3), "dilation": 2, "padding": (1, 2), "output_padding": (1, 0)}),
            Sample([arr(rng, (2, 3, 3), dt), arr(rng, (2, 2, 2, 2), dt), None], {"stride": 2})]


def _convT1_samples(rng, dt):
    return [Sample([arr(rng, (2, 3, 4), dt), arr(rng, (3, 2, 3), dt), arr(rng, (2,), dt)],
                   {"stride": 2, "padding": 1, "output_padding": 1})]


def _grad_wrt(lib, which, fn, x, w, gy, **k):
    """First-order gradient of fn(x, w) wrt x (which=0) or w (which=1) with create_graph=True."""
    with lib.enable_grad():
        args = [x, w]
        args[which] = args[which].detach().requires_grad_(True)
        y = fn(*args, **k)
        return lib.autograd.grad([y], [args[which]], [gy], create_graph=True)[0]


def _conv_dbl_samples(rng, dt):
    return [Sample([arr(rng, (1, 2, 5, 5), dt), arr(rng, (3, 2, 3, 3), dt), arr(rng, (1, 3, 3, 3), dt)]),
            Sample([arr(rng, (1, 4, 5, 4), dt), arr(rng, (4, 2, 2, 3), dt), arr(rng, (1, 4, 3, 2), dt)],
                   {"stride": 2, "padding": 1, "groups": 2})]


# ---- pooling ------------------------------------------------------------------------------
def _maxpool_samples(rng, dt):
    # Distinct values (a permutation) so the argmax is unique and finite differences are valid.
    def perm(shape):
        n = 1
        for s in shape:
            n *= s
        return (rng.permutation(n).reshape(shape) * 0.1 - 1.0).astype("float32" if dt in ("float16", "bfloat16") else dt)
    return [Sample([perm((1, 2, 5, 5))], {"kernel_size": 2}),
            Sample([perm((2, 2, 7, 6))], {"kernel_size": 3, "stride": 2, "padding": 1}),
            Sample([perm((1, 1, 8, 7))], {"kernel_size": (3, 2), "stride": (2, 1), "dilation": (2, 1), "ceil_mode": True}),
            Sample([perm((2, 5, 5))], {"kernel_size": 2, "ceil_mode": True})]


def _avgpool_samples(rng, dt):
    return [Sample([arr(rng, (1, 2, 5, 5), dt)], {"kernel_size": 2}),
            Sample([arr(rng, (2, 2, 7, 6), dt)], {"kernel_size": 3, "stride": 2, "padding": 1}),
            Sample([arr(rng, (1, 1, 7, 7), dt)], {"kernel_size": 3, "stride": 2, "padding": 1,
                                                   "count_include_pad": False, "ceil_mode": True}),
            Sample([arr(rng, (2, 5, 6), dt)], {"kernel_size": (2, 3), "divisor_override": 4}),
            Sample([arr(rng, (1, 1, 6, 6), dt)], {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True})]


def _adaptive_samples(rng, dt):
    return [Sample([arr(rng, (1, 2, 5, 7), dt)], {"output_size": 3}),
            Sample([arr(rng, (2, 3, 6, 6), dt)], {"output_size": (2, 4)}),
            Sample([arr(rng, (2, 6, 5), dt)], {"output_size": (None, 2)}),
            Sample([arr(rng, (1, 2, 4, 4), dt)], {"output_size": 1})]


def _pool_bwd(lib, pool, x, gy, **k):
    with lib.enable_grad():
        x = x.detach().requires_grad_(True)
        y = pool(x, **k)
        return lib.autograd.grad([y], [x], [gy], create_graph=True)[0]


def _pool_bwd_samples(pool_samples, out_shape):
    def samples(rng, dt):
        out = []
        for s in pool_samples(rng, dt)[:2]:
            gy = arr(rng, out_shape(s), dt)
            out.append(Sample([s.args[0], gy], s.kwargs))
        return out
    return samples


def _torch_out_shape(fn):
    import numpy as np
    import torch

    def shape(s):
        return tuple(fn(torch.from_numpy(np.asarray(s.args[0], dtype=np.float64)), **s.kwargs).shape)
    return shape


def _pool1d_samples(rng, dt):
    def perm(shape):
        n = 1
        for v in shape:
            n *= v
        return (rng.permutation(n).reshape(shape) * 0.1 - 1.0).astype("float32" if dt in ("float16", "bfloat16") else dt)
    return [Sample([perm((2, 3, 9))], {"kernel_size": 3, "stride": 2, "padding": 1}),
            Sample([perm((3, 8))], {"kernel_size": 2, "ceil_mode": True})]


def _adaptive_max_samples(rng, dt):
    def perm(shape):
        n = 1
        for v in shape:
            n *= v
        return (rng.permutation(n).reshape(shape) * 0.1 - 1.0).astype("float32" if dt in ("float16", "bfloat16") else dt)
    return [Sample([perm((1, 2, 5, 7))], {"output_size": 3}), Sample([perm((2, 6, 5))], {"output_size": (2, None)}),
            Sample([perm((2, 1, 4, 4))], {"output_size": (4, 3)})]


def _pool1d_samples_plain(rng, dt):
    return [Sample([s.args[0]]) for s in _pool1d_samples(rng, dt)]


SPECS = [
    OpSpec("matmul", ["Matmul"], lambda l, a, b: l.matmul(a, b), lambda t, a, b: t.matmul(a, b), _matmul_samples,
           dtypes=FLOATS + ("int64",)),
    OpSpec("matmul_operator", ["Matmul", "Permute"], lambda l, a, b: a.T @ b, lambda t, a, b: a.T @ b,
           lambda rng, dt: [Sample([arr(rng, (4, 3), dt), arr(rng, (4, 5), dt)])]),
    OpSpec("matmul_method_transposed_rhs", ["Matmul", "Permute"], lambda l, a, b: a.matmul(b.transpose(-1, -2)),
           lambda t, a, b: a.matmul(b.transpose(-1, -2)),
           lambda rng, dt: [Sample([arr(rng, (2, 3, 4), dt), arr(rng, (2, 5, 4), dt)])]),
    OpSpec("mm", ["Matmul"], lambda l, a, b: l.mm(a, b), lambda t, a, b: t.mm(a, b),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), arr(rng, (4, 2), dt)])], dtypes=FLOATS),
    OpSpec("bmm", ["Matmul"], lambda l, a, b: l.bmm(a, b), lambda t, a, b: t.bmm(a, b),
           lambda rng, dt: [Sample([arr(rng, (3, 2, 4), dt), arr(rng, (3, 4, 5), dt)])], dtypes=FLOATS),
    OpSpec("mv", ["Matmul"], lambda l, a, b: l.mv(a, b), lambda t, a, b: t.mv(a, b),
           lambda rng, dt: [Sample([arr(rng, (3, 4), dt), arr(rng, (4,), dt)])]),
    OpSpec("dot", ["Matmul"], lambda l, a, b: l.dot(a, b), lambda t, a, b: t.dot(a, b),
           lambda rng, dt: [Sample([arr(rng, (6,), dt), arr(rng, (6,), dt)])]),
    OpSpec("addmm", ["Addmm"], lambda l, c, a, b, **k: l.addmm(c, a, b, **k), lambda t, c, a, b, **k: t.addmm(c, a, b, **k),
           _addmm_samples, dtypes=FLOATS),
    OpSpec("linear", ["Linear"], lambda l, x, w, b: _lf(l).linear(x, w, b), lambda t, x, w, b: _F(t).linear(x, w, b),
           _linear_samples, dtypes=FLOATS),
    OpSpec("linear_fused", ["LinearFused"], lambda l, x, w, b, r, **k: l._C._linear_fused(x, w, b, r, **k),
           _torch_fused, _fused_samples, dtypes=("float32", "float64", "bfloat16"), grad=False),
    OpSpec("conv2d", ["Conv", "ConvBackwardInput", "ConvBackwardWeight"],
           lambda l, x, w, b, **k: _lf(l).conv2d(x, w, b, **k), lambda t, x, w, b, **k: _F(t).conv2d(x, w, b, **k),
           _conv2d_samples, dtypes=FLOATS, atol=1e-4, rtol=1e-4),
    OpSpec("conv_fused", ["ConvFused"], lambda l, x, w, b, r, **k: l._C._conv_fused(x, w, b, r, **k),
           _torch_convfused, _convfused_samples, dtypes=("float32", "float64", "bfloat16"), grad=False,
           atol=1e-4, rtol=1e-4),
    OpSpec("conv1d", ["Conv"], lambda l, x, w, b, **k: _lf(l).conv1d(x, w, b, **k),
           lambda t, x, w, b, **k: _F(t).conv1d(x, w, b, **k), _conv1d_samples, atol=1e-4, rtol=1e-4),
    OpSpec("conv2d_gx", ["ConvBackwardInput"],
           lambda l, x, w, gy, **k: _grad_wrt(l, 0, _lf(l).conv2d, x, w, gy, **k),
           lambda t, x, w, gy, **k: _grad_wrt(t, 0, _F(t).conv2d, x, w, gy, **k), _conv_dbl_samples,
           atol=1e-4, rtol=1e-4),
    OpSpec("conv2d_gw", ["ConvBackwardWeight"],
           lambda l, x, w, gy, **k: _grad_wrt(l, 1, _lf(l).conv2d, x, w, gy, **k),
           lambda t, x, w, gy, **k: _grad_wrt(t, 1, _F(t).conv2d, x, w, gy, **k), _conv_dbl_samples,
           atol=1e-4, rtol=1e-4),
    OpSpec("conv_transpose2d", ["ConvTranspose"], lambda l, x, w, b, **k: _lf(l).conv_transpose2d(x, w, b, **k),
           lambda t, x, w, b, **k: _F(t).conv_transpose2d(x, w, b, **k), _convT_samples, dtypes=FLOATS,
           # torch's bfloat16 transposed conv on CPUs without AVX-512 rounds its sums to bfloat16:
           # its own error against float64 reaches 0.057 on these samples, lucid's 0.031
           atol=1e-4, rtol=1e-4, low_precision_tol=7e-2),
    OpSpec("conv_transpose1d", ["ConvTranspose"], lambda l, x, w, b, **k: _lf(l).conv_transpose1d(x, w, b, **k),
           lambda t, x, w, b, **k: _F(t).conv_transpose1d(x, w, b, **k), _convT1_samples, atol=1e-4, rtol=1e-4),
    OpSpec("max_pool2d", ["MaxPool2d", "MaxPool2dBackward"],
           lambda l, x, **k: _lf(l).max_pool2d(x, return_indices=True, **k),
           lambda t, x, **k: _F(t).max_pool2d(x, return_indices=True, **k), _maxpool_samples, dtypes=FLOATS),
    OpSpec("max_pool2d_bwd", ["MaxPool2dBackward", "MaxPool2dGather"],
           lambda l, x, gy, **k: _pool_bwd(l, _lf(l).max_pool2d, x, gy, **k),
           lambda t, x, gy, **k: _pool_bwd(t, _F(t).max_pool2d, x, gy, **k),
           _pool_bwd_samples(_maxpool_samples, _torch_out_shape(lambda x, **k: __import__("torch").nn.functional.max_pool2d(x, **k))),
           dtypes=("float32", "float64")),
    OpSpec("avg_pool2d", ["AvgPool2d", "AvgPool2dBackward"], lambda l, x, **k: _lf(l).avg_pool2d(x, **k),
           lambda t, x, **k: _F(t).avg_pool2d(x, **k), _avgpool_samples, dtypes=FLOATS),
    OpSpec("avg_pool2d_bwd", ["AvgPool2dBackward"],
           lambda l, x, gy, **k: _pool_bwd(l, _lf(l).avg_pool2d, x, gy, **k),
           lambda t, x, gy, **k: _pool_bwd(t, _F(t).avg_pool2d, x, gy, **k),
           _pool_bwd_samples(_avgpool_samples, _torch_out_shape(lambda x, **k: __import__("torch").nn.functional.avg_pool2d(x, **k))),
           dtypes=("float32", "float64")),
    OpSpec("adaptive_avg_pool2d", ["AdaptiveAvgPool2d", "AdaptiveAvgPool2dBackward"],
           lambda l, x, **k: _lf(l).adaptive_avg_pool2d(x, **k), lambda t, x, **k: _F(t).adaptive_avg_pool2d(x, **k),
           _adaptive_samples, dtypes=FLOATS),
    OpSpec("adaptive_avg_pool2d_bwd", ["AdaptiveAvgPool2dBackward"],
           lambda l, x, gy, **k: _pool_bwd(l, _lf(l).adaptive_avg_pool2d, x, gy, **k),
           lambda t, x, gy, **k: _pool_bwd(t, _F(t).adaptive_avg_pool2d, x, gy, **k),
           _pool_bwd_samples(_adaptive_samples,
                             _torch_out_shape(lambda x, **k: __import__("torch").nn.functional.adaptive_avg_pool2d(x, **k))),
           dtypes=("float32", "float64")),
    OpSpec("max_pool1d", ["MaxPool2d", "Reshape"], lambda l, x, **k: l.max_pool1d(x, return_indices=True, **k),
           lambda t, x, **k: _F(t).max_pool1d(x, return_indices=True, **k), _pool1d_samples),
    OpSpec("avg_pool1d", ["AvgPool2d", "Reshape"], lambda l, x, **k: l.avg_pool1d(x, **k),
           lambda t, x, **k: _F(t).avg_pool1d(x, **k), _pool1d_samples),
    OpSpec("adaptive_avg_pool1d", ["AdaptiveAvgPool2d", "Reshape"], lambda l, x: l.adaptive_avg_pool1d(x, 4),
           lambda t, x: _F(t).adaptive_avg_pool1d(x, 4),
           lambda rng, dt: [Sample([arr(rng, (2, 3, 10), dt)]), Sample([arr(rng, (3, 7), dt)])]),
    OpSpec("adaptive_max_pool2d", ["AdaptiveMaxPool2d", "MaxPool2dBackward"],
           lambda l, x, **k: l.adaptive_max_pool2d(x, return_indices=True, **k),
           lambda t, x, **k: _F(t).adaptive_max_pool2d(x, return_indices=True, **k), _adaptive_max_samples,
           dtypes=FLOATS),
    OpSpec("adaptive_max_pool1d", ["AdaptiveMaxPool2d", "Reshape"],
           lambda l, x: l.adaptive_max_pool1d(x, 3, return_indices=True),
           lambda t, x: _F(t).adaptive_max_pool1d(x, 3, return_indices=True), _pool1d_samples_plain),
    OpSpec("lp_pool2d", ["AvgPool2d"], lambda l, x, **k: l.lp_pool2d(x, **k), lambda t, x, **k: _F(t).lp_pool2d(x, **k),
           lambda rng, dt: [Sample([positive(rng, (1, 2, 6, 5), dt)], {"norm_type": 2, "kernel_size": 2}),
                            Sample([positive(rng, (2, 5, 7), dt)], {"norm_type": 3.0, "kernel_size": (3, 2), "stride": 2,
                                                                    "ceil_mode": True})]),
    OpSpec("lp_pool1d", ["AvgPool2d"], lambda l, x, **k: l.lp_pool1d(x, **k), lambda t, x, **k: _F(t).lp_pool1d(x, **k),
           lambda rng, dt: [Sample([positive(rng, (2, 3, 9), dt)], {"norm_type": 2, "kernel_size": 3, "stride": 2})]),
    OpSpec("unfold", ["Im2Col", "Col2Im"], lambda l, x, **k: l.unfold(x, **k), lambda t, x, **k: _F(t).unfold(x, **k),
           lambda rng, dt: [Sample([arr(rng, (2, 3, 5, 6), dt)], {"kernel_size": (2, 3)}),
                            Sample([arr(rng, (1, 2, 6, 6), dt)], {"kernel_size": 3, "dilation": 2, "padding": 1, "stride": 2}),
                            Sample([arr(rng, (2, 4, 4), dt)], {"kernel_size": 2, "stride": 2})], dtypes=FLOATS),
    OpSpec("fold", ["Col2Im", "Im2Col"], lambda l, x, **k: l.fold(x, **k), lambda t, x, **k: _F(t).fold(x, **k),
           lambda rng, dt: [Sample([arr(rng, (2, 12, 12), dt)], {"output_size": (4, 5), "kernel_size": (2, 2)}),
                            Sample([arr(rng, (1, 18, 4), dt)],
                                   {"output_size": 6, "kernel_size": 3, "dilation": 2, "padding": 1, "stride": 2}),
                            Sample([arr(rng, (8, 4), dt)], {"output_size": (4, 4), "kernel_size": 2, "stride": 2})],
           dtypes=FLOATS),
]
