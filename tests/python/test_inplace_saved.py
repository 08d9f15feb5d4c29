"""What each op saves for backward, checked through the in-place idioms PyTorch users write.

For every op f in the table and every in-place op g, run `y = f(x); g(y); y.sum().backward()`
in torch and in lucid: both must raise (torch's "modified by an inplace operation", lucid's
"modified by an in-place operation") or both must give the same gradients for x and for the
op's parameters. torch decides which tensors a backward reads (derivatives.yaml: relu, sigmoid,
tanh, exp, softmax save their result; batch_norm, layer_norm and group_norm save input, mean
and rstd; gelu, silu, linear, conv save inputs), so this test fails whenever lucid saves an
output torch does not (the reported `BatchNorm2d -> ReLU(inplace=True)` break) or stops saving
one torch does (which would give wrong gradients instead of an error).

Rows named `*_inplace` apply an in-place op to a non-leaf first: relu_, sigmoid_, exp_... save
the tensor they wrote, so a second in-place write raises in both libraries.

Dropout draws its mask from each library's own generator, so torch's branch reuses lucid's mask
(read from lucid's output before g runs) and the values still compare.
"""
import numpy as np
import pytest
import torch

import lucid

RNG = np.random.default_rng(0)


def arr(*shape, positive=False):
    a = RNG.standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.5
    return a


class Case:
    """f(lib, x, ctx) -> y; ctx carries parameters built once from numpy for both libraries."""

    def __init__(self, f, x, params=None, module=None):
        self.f, self.x, self.params, self.module = f, x, params or {}, module


def fn(name, **kw):
    return lambda lib, x, c: getattr(lib.nn.functional, name)(x, **kw)


def tm(name, **kw):
    return lambda lib, x, c: getattr(lib, name)(x, **kw)


def meth(name, *a, **kw):
    return lambda lib, x, c: getattr(x, name)(*a, **kw)


X = arr(4, 6)
XP = arr(4, 6, positive=True)
IMG = arr(2, 4, 5, 5)

CASES = {
    # unary math: torch saves the result for exp, tanh, sigmoid, sqrt, rsqrt, reciprocal
    **{n: Case(tm(n), X) for n in ["abs", "exp", "expm1", "tanh", "sigmoid", "sin", "cos", "erf", "square",
                                   "sign", "floor", "ceil", "round", "trunc", "neg"]},
    **{n: Case(tm(n), XP) for n in ["log", "log1p", "sqrt", "rsqrt", "reciprocal"]},
    # activations
    **{n: Case(fn(n), X) for n in ["relu", "relu6", "elu", "gelu", "silu", "hardswish", "hardsigmoid", "hardtanh",
                                   "softplus", "selu", "celu", "mish", "softsign", "logsigmoid", "tanhshrink"]},
    "leaky_relu": Case(fn("leaky_relu", negative_slope=0.1), X),
    "gelu_tanh": Case(fn("gelu", approximate="tanh"), X),
    "softshrink": Case(fn("softshrink", lambd=0.3), X),
    "hardshrink": Case(fn("hardshrink", lambd=0.3), X),
    "threshold": Case(fn("threshold", threshold=0.1, value=-1.0), X),
    "softmax": Case(fn("softmax", dim=1), X),
    "log_softmax": Case(fn("log_softmax", dim=1), X),
    # binary with a parameter w
    "mul": Case(lambda lib, x, c: x * c["w"], X, {"w": arr(6)}),
    "add": Case(lambda lib, x, c: x + c["w"], X, {"w": arr(6)}),
    "sub": Case(lambda lib, x, c: x - c["w"], X, {"w": arr(6)}),
    "div": Case(lambda lib, x, c: x / c["w"], X, {"w": arr(6, positive=True)}),
    "pow_scalar": Case(lambda lib, x, c: x ** 3, X),
    "pow_tensor": Case(lambda lib, x, c: lib.pow(x, c["w"]), XP, {"w": arr(6)}),
    "rpow": Case(lambda lib, x, c: 2.0 ** x, X),
    "maximum": Case(lambda lib, x, c: lib.maximum(x, c["w"]), X, {"w": arr(6)}),
    "minimum": Case(lambda lib, x, c: lib.minimum(x, c["w"]), X, {"w": arr(6)}),
    "where": Case(lambda lib, x, c: lib.where(x > 0, x, c["w"]), X, {"w": arr(6)}),
    "lerp": Case(lambda lib, x, c: lib.lerp(x, c["w"], 0.3), X, {"w": arr(6)}),
    "clamp": Case(meth("clamp", -0.5, 0.5), X),
    "addcmul": Case(lambda lib, x, c: lib.addcmul(c["w"], x, x, value=0.5), X, {"w": arr(6)}),
    "addcdiv": Case(lambda lib, x, c: lib.addcdiv(c["w"], x, c["v"], value=0.5), X,
                    {"w": arr(6), "v": arr(6, positive=True)}),
    "masked_fill": Case(lambda lib, x, c: x.masked_fill(x > 0.5, 0.0), X),
    # reductions
    "sum_dim": Case(meth("sum", 1), X),
    "mean_dim": Case(meth("mean", 1), X),
    "var": Case(meth("var", 1), X),
    "std": Case(meth("std", 1), X),
    "prod": Case(meth("prod", 1), X),
    "logsumexp": Case(lambda lib, x, c: lib.logsumexp(x, 1), X),
    "cumsum": Case(meth("cumsum", 1), X),
    "amax": Case(meth("amax", 1), X),
    "max_dim": Case(lambda lib, x, c: x.max(1)[0], X),
    "min_dim": Case(lambda lib, x, c: x.min(1)[0], X),
    # linear algebra and layers
    "matmul": Case(lambda lib, x, c: x @ c["w"], X, {"w": arr(6, 3)}),
    "addmm": Case(lambda lib, x, c: lib.addmm(c["b"], x, c["w"]), X, {"w": arr(6, 3), "b": arr(3)}),
    "Linear": Case(None, X, module=lambda nn: nn.Linear(6, 5)),
    "Conv2d": Case(None, IMG, module=lambda nn: nn.Conv2d(4, 3, 3, padding=1)),
    "ConvTranspose2d": Case(None, IMG, module=lambda nn: nn.ConvTranspose2d(4, 3, 3)),
    "BatchNorm1d": Case(None, X, module=lambda nn: nn.BatchNorm1d(6)),
    "BatchNorm2d": Case(None, IMG, module=lambda nn: nn.BatchNorm2d(4)),
    "BatchNorm2d_eval": Case(None, IMG, module=lambda nn: nn.BatchNorm2d(4).eval()),
    "BatchNorm2d_noaffine": Case(None, IMG, module=lambda nn: nn.BatchNorm2d(4, affine=False)),
    "LayerNorm": Case(None, X, module=lambda nn: nn.LayerNorm(6)),
    "LayerNorm_2d": Case(None, IMG, module=lambda nn: nn.LayerNorm([5, 5])),
    "GroupNorm": Case(None, IMG, module=lambda nn: nn.GroupNorm(2, 4)),
    "RMSNorm": Case(None, X, module=lambda nn: nn.RMSNorm(6)),
    "Dropout": Case(None, X, module=lambda nn: nn.Dropout(0.5)),
    "MaxPool2d": Case(None, IMG, module=lambda nn: nn.MaxPool2d(2)),
    "AvgPool2d": Case(None, IMG, module=lambda nn: nn.AvgPool2d(2)),
    "AdaptiveAvgPool2d": Case(None, IMG, module=lambda nn: nn.AdaptiveAvgPool2d(2)),
    "adaptive_max_pool2d": Case(lambda lib, x, c: lib.nn.functional.adaptive_max_pool2d(x, 2), IMG),
    "interpolate": Case(lambda lib, x, c: lib.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"), IMG),
    "sdpa": Case(lambda lib, x, c: lib.nn.functional.scaled_dot_product_attention(x, x, x), IMG),
    "embedding_weight": Case(lambda lib, x, c: lib.nn.functional.embedding(c["i"], x), X,
                             {"i": np.array([[0, 2], [3, 3]])}),
    # movement
    "cat": Case(lambda lib, x, c: lib.cat([x, x * 2], 0), X),
    "flip": Case(lambda lib, x, c: lib.flip(x, [1]), X),
    "pad_reflect": Case(lambda lib, x, c: lib.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect"), IMG),
    "gather": Case(lambda lib, x, c: lib.gather(x, 1, c["i"]), X, {"i": np.array([[0, 1]] * 4)}),
    "index": Case(lambda lib, x, c: x[c["i"]], X, {"i": np.array([0, 2, 2])}),
    "repeat": Case(meth("repeat", 2, 1), X),
    # in-place ops on a non-leaf: those whose backward reads their result save the tensor itself
    **{n + "_inplace": Case(lambda lib, x, c, n=n: getattr(x * 1, n + "_")(), X) for n in ["relu", "sigmoid", "tanh",
                                                                                     "exp", "neg", "abs", "sin"]},
    "sqrt_inplace": Case(lambda lib, x, c: (x * 1).sqrt_(), XP),
    "mul_inplace": Case(lambda lib, x, c: (x * 1).mul_(c["w"]), X, {"w": arr(6)}),
    "clamp_inplace": Case(lambda lib, x, c: (x * 1).clamp_(-0.5, 0.5), X),
    # Not here, departures (docs/architecture.md): leaky_relu_/elu_/celu_/selu_ in place and relu_
    # through a view keep a copy of what they read, so a later write is legal (torch raises).
    # losses (scalar outputs)
    "mse_loss": Case(lambda lib, x, c: lib.nn.functional.mse_loss(x, c["w"]), X, {"w": arr(4, 6)}),
    "cross_entropy": Case(lambda lib, x, c: lib.nn.functional.cross_entropy(x, c["i"]), X,
                          {"i": np.array([0, 5, 2, 1])}),
    "bce_logits": Case(lambda lib, x, c: lib.nn.functional.binary_cross_entropy_with_logits(x, c["w"]), X,
                       {"w": np.abs(arr(4, 6)) % 1}),
}

INPLACE = {
    "relu_": lambda lib, y: y.relu_(),
    "F.relu(inplace)": lambda lib, y: lib.nn.functional.relu(y, inplace=True),
    "add_": lambda lib, y: y.add_(1.0),
    "mul_": lambda lib, y: y.mul_(2.0),
    "sub_tensor_": lambda lib, y: y.sub_(lib.ones_like(y)),
    "div_": lambda lib, y: y.div_(2.0),
    "sigmoid_": lambda lib, y: y.sigmoid_(),
    "tanh_": lambda lib, y: y.tanh_(),
    "clamp_": lambda lib, y: y.clamp_(-0.5, 0.5),
    "masked_fill_": lambda lib, y: y.masked_fill_(y > 0.3, 0.0),
    "zero_": lambda lib, y: y.zero_(),
    "gt_": lambda lib, y: y.gt_(0.1),  # no VJP: the old value gets a zero gradient
    "uniform_": lambda lib, y: y.uniform_(),
    "copy_": lambda lib, y: y.copy_(lib.ones_like(y)),
    "leaky_relu_": lambda lib, y: lib.nn.functional.leaky_relu(y, 0.2, inplace=True),
    "hardtanh_": lambda lib, y: lib.nn.functional.hardtanh(y, inplace=True),
    "view_mul_": lambda lib, y: y.view(-1)[:2].mul_(3.0),
}


def build(lib, case, dropout_mask=None):
    dt = torch.float64 if lib is torch else lucid.float64
    x = lib.tensor(case.x, dtype=dt, requires_grad=True)
    params = {}
    for k, v in case.params.items():
        integer = v.dtype.kind == "i"
        params[k] = lib.tensor(v, dtype=lib.int64 if integer else dt, requires_grad=not integer)
    module = None
    if case.module is not None:
        module = case.module(lib.nn).to(dt)
    return x, params, module


def run(lib, case, g, ref_module=None, dropout_mask=None):
    """(grads) or the RuntimeError raised. Lucid copies the torch module's parameters."""
    x, params, module = build(lib, case)
    if module is not None and ref_module is not None:
        with lib.no_grad():
            for (_, p), (_, q) in zip(module.named_parameters(), ref_module.named_parameters()):
                p.copy_(lib.tensor(q.detach().numpy()))
    try:
        if module is None:
            y = case.f(lib, x, params)
        elif dropout_mask is not None:  # torch reproducing lucid's dropout draw
            y = x * torch.tensor(dropout_mask) / 0.5
        else:
            y = module(x)
        mask = (y.detach().numpy() != 0).astype(np.float64) if isinstance(module, lucid.nn.Dropout) else None
        g(lib, y)
        y.sum().backward()
    except RuntimeError as e:
        return e, module, None
    leaves = [x] + list(params.values()) + (list(module.parameters()) if module is not None else [])
    grads = [None if t.grad is None else t.grad.numpy().copy() for t in leaves if t.requires_grad]
    return grads, module, mask


@pytest.mark.parametrize("gname", sorted(INPLACE))
@pytest.mark.parametrize("fname", sorted(CASES))
def test_inplace_after_op_matches_torch(fname, gname):
    case, g = CASES[fname], INPLACE[gname]
    torch.manual_seed(0)
    tref_module = build(torch, case)[2]
    lres, _, mask = run(lucid, case, g, ref_module=tref_module)
    if mask is not None:
        tres, _, _ = run(torch, case, g, dropout_mask=mask)
    else:
        # the same module weights: rebuild torch's module from the one lucid copied
        tres = _run_torch_with(case, g, tref_module)
    if isinstance(tres, Exception):
        assert "modified by an inplace operation" in str(tres), f"torch raised an unexpected error: {tres}"
        assert isinstance(lres, Exception), f"{fname} then {gname}: torch raises ({tres}), lucid ran"
        assert "modified by an in-place operation" in str(lres), f"lucid raised an unexpected error: {lres}"
        return
    assert not isinstance(lres, Exception), f"{fname} then {gname}: lucid raised ({lres}), torch ran"
    assert len(lres) == len(tres)
    for i, (a, b) in enumerate(zip(lres, tres)):
        # torch's copy_/zero_ backward hands zeros to what they overwrite; lucid hands no gradient
        a = np.zeros_like(b) if a is None and b is not None and not b.any() else a
        assert (a is None) == (b is None), f"{fname} then {gname}: grad {i} is None in one library"
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9, err_msg=f"{fname} then {gname}: grad {i}")


def _run_torch_with(case, g, module):
    x, params, _ = build(torch, case)
    try:
        y = case.f(torch, x, params) if module is None else module(x)
        g(torch, y)
        y.sum().backward()
    except RuntimeError as e:
        return e
    leaves = [x] + list(params.values()) + (list(module.parameters()) if module is not None else [])
    return [None if t.grad is None else t.grad.numpy().copy() for t in leaves if t.requires_grad]


# ------------------------------------------------------------------ compiled training


def cnn_block(lib, seed=0):
    """A torchvision-style basic block: conv-BN-ReLU(inplace), conv-BN, `out += identity`,
    ReLU(inplace), then pooling and a linear head."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
            self.conv1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(8)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            x = self.stem(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += x
            out = self.relu(out)
            return self.fc(self.pool(out).flatten(1))

    m = Block()
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    return m


def test_conv_bn_relu_inplace_fused_step_matches_eager_and_torch():
    rng = np.random.default_rng(5)
    data = [(rng.standard_normal((4, 3, 8, 8)).astype(np.float32), rng.integers(0, 4, 4)) for _ in range(5)]
    tm, em, fm = cnn_block(torch), cnn_block(lucid), cnn_block(lucid)
    topt = torch.optim.SGD(tm.parameters(), lr=0.05, momentum=0.9)
    eopt = lucid.optim.SGD(em.parameters(), lr=0.05, momentum=0.9)
    step = lucid.compile.fused_step(fm, lucid.nn.functional.cross_entropy,
                                    lucid.optim.SGD(fm.parameters(), lr=0.05, momentum=0.9), strict=True)
    for x, y in data:
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
        tl.backward()
        topt.step()
        eopt.zero_grad()
        el = lucid.nn.functional.cross_entropy(em(lucid.tensor(x)), lucid.tensor(y))
        el.backward()
        eopt.step()
        fl = step(lucid.tensor(x), lucid.tensor(y))
        assert abs(float(el) - float(tl)) <= 1e-4 * max(1.0, abs(float(tl)))
        assert abs(float(fl) - float(el)) <= 1e-5 * max(1.0, abs(float(el)))
        for (name, t), e, f in zip(tm.state_dict().items(), em.state_dict().values(), fm.state_dict().values()):
            if name.endswith("num_batches_tracked"):
                continue
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=2e-4, atol=2e-5, err_msg=f"eager vs torch: {name}")
            np.testing.assert_allclose(f.numpy(), e.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"fused vs eager: {name}")
    info = step.cache_info()
    assert info["entries"] >= 1 and not info["eager_only"] and info["hits"] >= 1
